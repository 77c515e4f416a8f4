package http2

import (
	"strconv"
	"strings"

	"golang.org/x/net/http2/hpack"
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
	if _, err := s.hp.Write(frag); err != nil {
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
	if st := d.streams[s.contStream]; st != nil {
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
	s.hp = hpack.NewDecoder(s.tableMax, s.emit)
	s.hp.SetMaxStringLength(d.cfg.MaxHeaderList)
	s.poisoned = false
	d.stats.HPACKRecovered++
	if s.cap != nil {
		s.cap.unknown = false
	}
}

// emit receives one decoded header field.
func (s *dirState) emit(f hpack.HeaderField) {
	h := s.cap
	if h == nil || s.over {
		return
	}
	s.list += len(f.Name) + len(f.Value) + 32
	if s.list > s.d.cfg.MaxHeaderList {
		s.over = true
		s.d.stats.HeaderListTooLarge++
		return
	}
	switch f.Name {
	case ":method":
		h.method = f.Value
	case ":path":
		h.path = f.Value
	case ":status":
		h.status = f.Value
	case "content-type":
		h.ctype = f.Value
	case "grpc-status":
		h.grpcStatus = f.Value
	}
	if s.d.cfg.Evidence {
		if h.ev == nil {
			h.ev = s.d.newEvidence()
		}
		headerEvidence(h.ev, f.Name, f.Value)
	}
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
	if h.unknown || h.method == "" && h.path == "" {
		return ""
	}
	k := labelKey{h.method, h.path, strings.HasPrefix(h.ctype, "application/grpc")}
	if l, ok := d.labels[k]; ok {
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
	return l
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
	if h.grpcStatus != "" {
		code, err := strconv.Atoi(h.grpcStatus)
		if err != nil || code < 0 {
			return "grpc", 0
		}
		if code < len(grpcLabels) {
			return grpcLabels[code], code
		}
		return "grpc " + h.grpcStatus, code
	}
	if h.status == "" {
		return "", 0
	}
	code, err := strconv.Atoi(h.status)
	if err != nil {
		return "", 0
	}
	return h.status, code
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
