package reconcile

import (
	"encoding/binary"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

// DefaultMaxTokens is the cap on content tokens per message when
// Options.MaxTokens is 0: the protocol decoders' own default
// (proto/evidence.DefaultConfig; a test keeps them equal).
const DefaultMaxTokens = 32

// idSources are the sources of propagated identifiers, as package
// proto/evidence names them, best first: the one of highest priority
// among those a message carries is its ReqID. Trace contexts (one id for
// the whole distributed request, kept by every hop) come before request
// ids (which a hop may replace), and both before a high-entropy value of
// an unknown header ("header:NAME"), which comes last.
var idSources = []string{
	"traceparent",
	"traceresponse",
	"b3",
	"x-b3-traceid",
	"uber-trace-id",
	"sw8",
	"x-amzn-trace-id",
	"x-cloud-trace-context",
	"grpc-trace-bin",
	"x-request-id",
	"request-id",
	"x-correlation-id",
	"correlation-id",
	"x-amzn-requestid",
	"x-amz-request-id",
}

// genericRank is the rank of "header:NAME" sources and of any source not
// in idSources.
var genericRank = uint8(len(idSources))

// idRank returns the priority rank of source, 0 the best.
func idRank(source string) uint8 {
	for i, s := range idSources {
		if s == source {
			return uint8(i)
		}
	}
	return genericRank
}

// sev is what a protocol decoder said about one sniffed message, in the
// trace's terms: its ordinal and stream, its label and best request id
// interned in the Reconciler's symbols, and its token hashes (cut to the
// cap) in the Reconciler's token arena.
type sev struct {
	ordinal      uint32
	stream       uint64
	label, reqID trace.Sym
	rank         uint8 // of reqID
	tokOff       uint32
	tokN         uint16
}

// evCounts count the evidence of the sniffed messages that could not be
// kept (each value once, whatever became of its message) and of the
// trace's messages.
type evCounts struct {
	// values skipped: longer than the trace holds, or not printable text
	long, binary int64
	// tokens beyond Options.MaxTokens
	tokensCut int64
	// the trace's messages with a request id, tokens, a label, a thread
	withReqID, withTokens, withLabel, withTask int64
}

// maxTokens returns the cap on tokens per message the options ask for: 0
// for none.
func (o *Options) maxTokens() int {
	switch {
	case o.MaxTokens < 0:
		return 0
	case o.MaxTokens == 0:
		return DefaultMaxTokens
	}
	return o.MaxTokens
}

// addEvidence keeps what the protocol decoder said about sniffed message
// m and returns its index + 1 in r.evs, or 0 when it said nothing.
func (r *Reconciler) addEvidence(m *flows.Message) uint32 {
	if m.Ordinal == 0 && m.Stream == 0 && m.Label == "" && m.Evidence == nil {
		return 0
	}
	e := sev{ordinal: m.Ordinal, stream: m.Stream, rank: genericRank}
	if m.Label != "" {
		e.label = r.text(m.Label, trace.MaxLabel)
	}
	if ev := m.Evidence; ev != nil {
		e.reqID, e.rank = r.bestID(m)
		toks := ev.Tokens
		if lim := r.opts.maxTokens(); len(toks) > lim {
			r.ev.tokensCut += int64(len(toks) - lim)
			toks = toks[:lim]
		}
		if len(toks) > 0 {
			e.tokOff, e.tokN = uint32(len(r.toks)), uint16(len(toks))
			r.toks = append(r.toks, toks...)
		}
	}
	if e == (sev{rank: genericRank}) {
		return 0
	}
	r.evs = append(r.evs, e)
	return uint32(len(r.evs))
}

// bestID returns the identifier of highest priority among m's that the
// trace can hold (the first of them on a tie), interned as
// "source:value", and its rank; each identifier that is too long or not
// printable is skipped and counted.
func (r *Reconciler) bestID(m *flows.Message) (trace.Sym, uint8) {
	ids := m.Evidence.IDs
	best, rank := -1, genericRank+1
	for i := range ids {
		if !r.validID(ids[i].Source, ids[i].Value) {
			continue
		}
		if k := idRank(ids[i].Source); k < rank {
			best, rank = i, k
		}
	}
	if best < 0 {
		return 0, genericRank
	}
	r.idBuf = append(append(append(r.idBuf[:0], ids[best].Source...), ':'), ids[best].Value...)
	return r.syms.InternBytes(r.idBuf), rank
}

// validID reports whether id can be a trace's ReqID: printable ASCII
// without spaces, "source:value" at most trace.MaxReqID bytes. An id that
// cannot is counted.
func (r *Reconciler) validID(source, value string) bool {
	if len(source)+1+len(value) > trace.MaxReqID {
		r.ev.long++
		return false
	}
	if source == "" || value == "" || !printableASCII(source) || !printableASCII(value) {
		r.ev.binary++
		return false
	}
	return true
}

// text interns s, a label, when it is valid UTF-8 without control
// characters and at most limit bytes; else it counts it and returns 0.
func (r *Reconciler) text(s string, limit int) trace.Sym {
	if s == "" {
		return 0 // as Intern("")
	}
	for i := range r.texts {
		if m := &r.texts[i]; len(m.s) == len(s) && m.s == s {
			return m.sym
		}
	}
	if len(s) > limit {
		r.ev.long++
		return 0
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) }) {
		r.ev.binary++
		return 0
	}
	sym := r.syms.Intern(s)
	m := &r.texts[r.textNext%uint8(len(r.texts))]
	r.textNext++
	m.s, m.sym = s, sym
	return sym
}

func printableASCII(s string) bool {
	// Eight bytes at a time: none below '!' and none above '~' (the
	// bit hacks "has less" and "has more", exact for these bounds).
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
		if (x-ones*'!')&^x&highs != 0 || (x+ones*(127-'~')|x)&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// evidenceOf sets the evidence of logical message lm in m (all but Conn,
// which the trace's order gives): the threads of the traced calls that
// wrote its first byte and read its last, and what the protocol decoder
// said about the sniffed messages that start in it (the first one's
// ordinal, stream and label, the best request id of them all, the union
// of their tokens, cut to the cap).
func (w *traceWriter) evidenceOf(lm *lmsg, m *trace.Message) {
	if lm.sa.ok() {
		m.Sender = trace.Task{PID: int32(lm.sa.c.PID), TID: int32(lm.sa.msg().TID)}
	}
	if lm.rb.ok() {
		m.Receiver = trace.Task{PID: int32(lm.rb.c.PID), TID: int32(lm.rb.msg().TID)}
	}
	r := w.r
	fm := w.st.conns[lm.rc].fmsgs[lm.dir]
	w.toks = w.toks[:0]
	rank := genericRank + 1
	for _, f := range fm[lm.evFrom:lm.evTo] {
		i := r.msgs[f].ev
		if i == 0 {
			continue
		}
		e := &r.evs[i-1]
		if m.Seq == 0 && m.Stream == 0 && m.Label == 0 {
			m.Seq, m.Stream, m.Label = e.ordinal, e.stream, e.label
		}
		if e.reqID != 0 && e.rank < rank {
			m.ReqID, rank = e.reqID, e.rank
		}
		w.toks = append(w.toks, r.toks[e.tokOff:e.tokOff+uint32(e.tokN)]...)
	}
	if len(w.toks) == 0 {
		return
	}
	slices.Sort(w.toks)
	w.toks = slices.Compact(w.toks)
	if lim := r.opts.maxTokens(); len(w.toks) > lim {
		r.ev.tokensCut += int64(len(w.toks) - lim)
		w.toks = w.toks[:lim]
	}
	m.Tokens, _ = w.st.tr.Syms.AddTokens(w.toks) // a trace of fewer than 2^32 messages never fills the table
}

// countEvidence counts the evidence of one message of the trace.
func (r *Reconciler) countEvidence(m *trace.Message) {
	c := &r.ev
	if m.ReqID != 0 {
		c.withReqID++
	}
	if m.Tokens != 0 {
		c.withTokens++
	}
	if m.Label != 0 {
		c.withLabel++
	}
	if m.Sender.Known() || m.Receiver.Known() {
		c.withTask++
	}
}

// connKeys returns, per connection (rconn), the connection whose number
// it shares in the trace: itself, or for datagrams the group of the other
// direction between the same endpoints when that was made first.
func (st *state) connKeys() []int32 {
	keys := make([]int32, len(st.conns))
	for i := range keys {
		keys[i] = int32(i)
	}
	for k, id := range st.dgrams {
		rev := dirKey{src: k.dst, dst: k.src, proto: k.proto, host: k.host}
		if j, ok := st.dgrams[rev]; ok && j < id {
			keys[id] = j
		}
	}
	return keys
}

// numberConns sets the Conn of the trace's messages, sorted (message i is
// logical message st.out[keep[idx[i]]]): connections are numbered from 1
// in the order their first message appears.
func (st *state) numberConns(sorted []trace.Message, idx, keep []int32) {
	keys := st.connKeys()
	num := make([]uint32, len(st.conns))
	var next uint32
	for i, j := range idx {
		k := keys[st.out[keep[j]].rc]
		if num[k] == 0 {
			next++
			num[k] = next
		}
		sorted[i].Conn = num[k]
	}
}
