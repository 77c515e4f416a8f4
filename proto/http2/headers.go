package http2

import (
	"strconv"
	"strings"
	"unsafe"
)

// beginBlock starts a header block whose fields go to h (nil: decoded
// for the table only).
func (d *Decoder) beginBlock(s *dirState, h *half) {
	s.cap, s.list, s.over = h, 0, false
	if s.poisoned && h != nil {
		h.unknown = true
	}
}

// writeBlock decodes a fragment of the current header block.
func (d *Decoder) writeBlock(s *dirState, frag []byte) {
	first := s.first
	s.first = false
	if s.poisoned {
		if !first || len(frag) == 0 || frag[0] != 0x20 {
			return
		}
		d.recoverTable(s)
	}
	if len(frag) == 0 {
		return
	}
	if err := s.hp.Write(frag); err != nil {
		d.stats.HPACKErrors++
		d.poison(s)
	}
}

// endBlock ends the current header block.
func (d *Decoder) endBlock(s *dirState) {
	if !s.poisoned {
		if err := s.hp.Close(); err != nil {
			d.stats.HPACKErrors++
			d.poison(s)
		}
	}
	s.first, s.cap, s.contStream = true, nil, 0
}

// abandonBlock gives up a header block whose CONTINUATION frames did not
// follow: its stream is lost and the table with it.
func (d *Decoder) abandonBlock(s *dirState) {
	d.poison(s)
	if st := d.streams.get(s.contStream); st != nil {
		d.loseHalf(st, s.dir)
	}
	s.first, s.cap, s.contStream = true, nil, 0
}

// poison marks s's HPACK table as no longer known.
func (d *Decoder) poison(s *dirState) {
	if !s.poisoned {
		s.poisoned = true
		d.stats.HPACKPoisoned++
	}
	if s.cap != nil {
		s.cap.unknown = true
	}
}

// recoverTable trusts s's table again: the block starts with a dynamic
// table size update to 0, after which the encoder's table is empty.
func (d *Decoder) recoverTable(s *dirState) {
	s.hp.reset(s.tableMax)
	s.poisoned = false
	d.stats.HPACKRecovered++
	if s.cap != nil {
		s.cap.unknown = false
	}
}

// The fields a half keeps, by their index in dirState.kept and half.kept.
const (
	keptMethod = iota
	keptPath
	keptStatus
	keptCType
	keptGRPCStatus
	numKept
)

// keep returns a copy of v, a decoded field's value that is valid only
// during emit, for a half to keep as field i: the previous one if v is
// the same (a map lookup saved), else an interned copy.
func (s *dirState) keep(i int, v string) string {
	if s.kept[i] != v {
		s.kept[i] = s.d.intern(v)
	}
	return s.kept[i]
}

// intern returns a copy of v that outlives the header it came from.
// Values of up to maxInterned bytes are interned per connection (at most
// maxLabels of them, so at most 256 KiB), so that calls of the same
// method cost no allocation.
func (d *Decoder) intern(v string) string {
	if k, ok := d.kept[v]; ok {
		return k
	}
	k := strings.Clone(v)
	if d.kept == nil {
		d.kept = make(map[string]string)
	}
	if len(d.kept) < maxLabels && len(k) <= maxInterned {
		d.kept[k] = k
	}
	return k
}

// maxInterned is the longest value intern remembers.
const maxInterned = 256

// emit receives one decoded header field; name and value are valid only
// during the call. ref names the HPACK table entry it was read from or
// added to (0: a literal the table does not keep): what emit makes of a
// field depends on its name and value
// alone (but for the ids of propagation headers), so it is remembered per
// entry, and a field indexed again replays it.
func (s *dirState) emit(name, value string, ref uint64) { s.emitField(name, value, ref) }

// emitField is emit, called directly by hpackDecoder (its ds).
func (s *dirState) emitField(name, value string, ref uint64) {
	h := s.cap
	if h == nil || s.over {
		return
	}
	s.list += len(name) + len(value) + 32
	if s.list > s.d.cfg.MaxHeaderList {
		s.over = true
		s.d.stats.HeaderListTooLarge++
		return
	}
	if ref != 0 && s.memo != nil {
		if m := &s.memo[memoSlot(ref)]; m.ref == ref {
			s.replayMemo(h, m)
			return
		}
	}
	slot := keptSlot(name)
	var kept string
	if slot >= 0 {
		kept = s.keep(slot, value)
		h.kept[slot] = kept
	}
	if !s.d.cfg.Evidence {
		if ref != 0 {
			s.remember(ref, len(name)+len(value), slot, kept, nil)
		}
		return
	}
	if h.ev == nil {
		h.ev = s.d.newEvidence()
	}
	n := len(h.ev.Tokens)
	id := headerEvidence(h.ev, name, value, &s.d.ids)
	if ref == 0 {
		return // a literal: nothing to remember it by
	}
	if !id && len(h.ev.Tokens)-n <= maxMemoTokens {
		s.remember(ref, len(name)+len(value), slot, kept, h.ev.Tokens[n:])
	}
}

// keptSlot returns the index in dirState.kept of a field a half keeps,
// or -1.
func keptSlot(name string) int {
	switch name {
	case ":method":
		return keptMethod
	case ":path":
		return keptPath
	case ":status":
		return keptStatus
	case "content-type":
		return keptCType
	case "grpc-status":
		return keptGRPCStatus
	}
	return -1
}

// fieldMemo is what emit made of the field of one HPACK table entry: the
// value a half keeps (slot >= 0) and the evidence tokens it adds.
type fieldMemo struct {
	ref  uint64 // 0: empty
	size int    // the field's name and value bytes
	kept string
	slot int8
	ntok uint8
	toks [maxMemoTokens]uint64
}

// maxMemoTokens is the most tokens of a field remembered (a path of up
// to three segments); fields with more are not remembered.
const maxMemoTokens = 4

// memoSlots is the size of a direction's memo, a direct-mapped cache of
// table entries: a slot for each static entry (refs 1 to 61, below
// firstDynamicRef), then 64 for the dynamic table's, by the entry's seq
// modulo 64. The live entries of a dynamic table have consecutive seqs,
// so up to 64 of them (a table of 4 KiB holds some 40 to 100 fields)
// never share a slot, nor take a static entry's: an entry the encoder
// adds again leaves the other entries' memos in place. (Slots by a hash
// of the ref, 64 for both tables, lost some entry's memo at about every
// seventh entry added: on the all-gRPC capture of bench-grpc.sh, a
// request's :method or :scheme was decoded again at one call in 14.)
const memoSlots = 2 * firstDynamicRef

// memoSlot returns the slot of s.memo that may hold ref: ref itself for
// the static table, firstDynamicRef plus its seq modulo 64 for the
// dynamic one.
func memoSlot(ref uint64) int {
	return int(ref&(firstDynamicRef-1) | min(ref, firstDynamicRef)&firstDynamicRef)
}

// remember records what emit made of the field of table entry ref.
func (s *dirState) remember(ref uint64, size, slot int, kept string, toks []uint64) {
	if s.memo == nil {
		s.memo = new([memoSlots]fieldMemo)
	}
	m := &s.memo[memoSlot(ref)]
	m.ref, m.size, m.kept, m.slot, m.ntok = ref, size, kept, int8(slot), uint8(copy(m.toks[:], toks))
}

// memoHit takes an indexed field by its ref and size (hpackDecoder.hit),
// as emit would, if the memo holds what emit made of it.
func (s *dirState) memoHit(ref uint64, size int) bool {
	if s.memo == nil {
		return false
	}
	m := &s.memo[memoSlot(ref)]
	if m.ref != ref {
		return false
	}
	h := s.cap
	if h == nil || s.over {
		return true
	}
	s.list += size + 32
	if s.list > s.d.cfg.MaxHeaderList {
		s.over = true
		s.d.stats.HeaderListTooLarge++
		return true
	}
	// replayMemo's work, written out: a call of its own cost each of a
	// call's ten indexed fields a tenth of what taking it costs.
	if m.slot >= 0 {
		s.kept[m.slot] = m.kept
		h.kept[m.slot] = m.kept
	}
	if m.ntok > 0 {
		s.replayTokens(h, m)
	}
	return true
}

// replayTokens adds the tokens m remembers to h's Evidence.
func (s *dirState) replayTokens(h *half, m *fieldMemo) {
	if !s.d.cfg.Evidence {
		return
	}
	if h.ev == nil {
		h.ev = s.d.newEvidence()
	}
	h.ev.Tokens = append(h.ev.Tokens, m.toks[:m.ntok]...)
}

// replayMemo does to h what emit did with the field m remembers.
func (s *dirState) replayMemo(h *half, m *fieldMemo) {
	if m.slot >= 0 {
		s.kept[m.slot] = m.kept
		h.kept[m.slot] = m.kept
	}
	if m.ntok > 0 {
		s.replayTokens(h, m)
	}
}

// recentLabel is a request label made recently, and what it was made of.
type recentLabel struct {
	key   labelKey
	label string
	ok    bool
}

// labelKey is what a request's label is made of.
type labelKey struct {
	method, path string
	grpc         bool
}

// maxLabels bounds the labels a Decoder remembers.
const maxLabels = 1024

// requestLabel returns a request's label: "grpc /pkg.Service/Method" for
// gRPC, "METHOD /path" with ids in the path replaced by {id} otherwise.
// Labels are remembered per connection, so that calls of the same method
// cost no allocation.
func (d *Decoder) requestLabel(h *half) string {
	method, path := h.kept[keptMethod], h.kept[keptPath]
	if h.unknown || method == "" && path == "" {
		return ""
	}
	k := labelKey{method, path, d.grpcType(h.kept[keptCType])}
	// The last labels made, looked for by the memory of their strings:
	// the values a half keeps are interned, so a call of a recent
	// method is found by comparing pointers, without hashing its
	// strings (a value not interned, a copy, is found in the map). All
	// eight are looked at: by a hash of the path's memory into one slot
	// each, two of a connection's few methods often shared a slot, and
	// took each other's place call after call.
	for i := range d.recent {
		if r := &d.recent[i]; r.ok && sameString(r.key.path, k.path) && sameString(r.key.method, k.method) && r.key.grpc == k.grpc {
			return r.label
		}
	}
	slot := &d.recent[d.nextRecent]
	d.nextRecent = (d.nextRecent + 1) % uint8(len(d.recent))
	if l, ok := d.labels[k]; ok {
		slot.key, slot.label, slot.ok = k, l, true
		return l
	}
	var l string
	if k.grpc {
		l = "grpc " + k.path
	} else {
		l = k.method + " " + templatePath(k.path)
	}
	if d.labels == nil {
		d.labels = make(map[labelKey]string)
	}
	if len(d.labels) < maxLabels {
		d.labels[k] = l
	}
	slot.key, slot.label, slot.ok = k, l, true
	return l
}

// grpcType reports whether a content-type a half keeps is gRPC's
// ("application/grpc", maybe with a suffix). Kept values are interned,
// so the one found so last is known again by its pointer, without
// comparing its bytes (a request's label and each of its DATA frames
// ask).
func (d *Decoder) grpcType(ct string) bool {
	if len(ct) >= len("application/grpc") && sameString(ct, d.grpcCType) {
		return true
	}
	if strings.HasPrefix(ct, "application/grpc") {
		d.grpcCType = ct
		return true
	}
	return false
}

// sameString reports whether a and b are the same bytes in memory.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// grpcCodes are the names of the gRPC status codes.
var grpcCodes = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// grpcLabels are "grpc OK" and so on, made once.
var grpcLabels = func() (l [len(grpcCodes)]string) {
	for i, c := range grpcCodes {
		l[i] = "grpc " + c
	}
	return l
}()

// responseLabel returns a response's label and status: "grpc NOT_FOUND"
// and the grpc-status code for gRPC, the :status otherwise.
func responseLabel(h *half) (string, int) {
	if h.unknown {
		return "", 0
	}
	if gs := h.kept[keptGRPCStatus]; gs != "" {
		if len(gs) == 1 && gs[0] >= '0' && gs[0] <= '9' {
			// A status of one digit (nearly always "0"), without Atoi.
			return grpcLabels[gs[0]-'0'], int(gs[0] - '0')
		}
		code, err := strconv.Atoi(gs)
		if err != nil || code < 0 {
			return "grpc", 0
		}
		if code < len(grpcLabels) {
			return grpcLabels[code], code
		}
		return "grpc " + gs, code
	}
	status := h.kept[keptStatus]
	if status == "" {
		return "", 0
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return "", 0
	}
	return status, code
}

// resetLabel marks the label of a stream ended by RST_STREAM.
func resetLabel(l string) string {
	if l == "" {
		return "reset"
	}
	return l + " reset"
}

// templatePath drops a path's query and replaces the segments that look
// like ids (digits, long hex strings, UUIDs) by {id}.
func templatePath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if !strings.ContainsFunc(p, isDigit) {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if looksLikeID(s) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// looksLikeID reports whether a path segment is an identifier rather
// than a name: all digits, or 16 or more hex digits and dashes (UUIDs,
// hashes).
func looksLikeID(s string) bool {
	if s == "" {
		return false
	}
	digits := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-':
			digits = false
		default:
			return false
		}
	}
	return digits || len(s) >= 16
}
