package http2

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/proto"
)

// This file is the decoder's whole contact with evidence: headerEvidence
// takes one header field, finishEvidence closes a Unit's Evidence. Both
// are meant to become calls of the shared proto/evidence package.

// Bounds of one Unit's evidence.
const (
	maxIDs     = 16
	maxIDValue = 256
)

// headerEvidence adds what one header field says to ev: a propagated id
// for the tracing and correlation headers, content tokens for the path
// and the authority. name and value need not outlive the call: what ev
// keeps of them is copied (into ids). It reports whether name is one of
// the propagation headers (idSource's), whose fields emit does not
// remember.
func headerEvidence(ev *proto.Evidence, name, value string, ids *idArena) (id bool) {
	switch name {
	case ":path":
		pathTokens(ev, value)
		return false
	case ":authority":
		addToken(ev, value)
		return false
	case "traceparent":
		// A traceparent of the usual shape (one a request, where it is
		// every call's only literal) is taken without idSource's and
		// idValue's searches of the name: what idValue returns for it.
		if v, upper, ok := traceparentID(value); ok {
			if upper {
				v = strings.ToLower(v)
			}
			addID(ev, "traceparent", v, ids)
			return true
		}
	}
	src, ok := idSource(name)
	if !ok {
		return false
	}
	if v, ok := idValue(src, value); ok {
		addID(ev, src, v, ids)
	}
	return true
}

// addID adds the id v, of the propagation header src, to ev and its
// token, unless it is empty or ev holds maxIDs already.
func addID(ev *proto.Evidence, src, v string, ids *idArena) {
	if v == "" || len(ev.IDs) >= maxIDs {
		return
	}
	if len(v) > maxIDValue {
		v = v[:maxIDValue]
	}
	ev.IDs = append(ev.IDs, proto.ID{Source: src, Value: ids.clone(v)})
	addToken(ev, v)
}

// idSource returns name as a string that outlives the header it came
// from, if it is one of the propagation headers idValue reads ids from
// (a switch, which the compiler makes a search by length and bytes:
// every field of every header block passes here).
func idSource(name string) (string, bool) {
	switch name {
	case "traceparent":
		return "traceparent", true
	case "b3":
		return "b3", true
	case "x-b3-traceid":
		return "x-b3-traceid", true
	case "uber-trace-id":
		return "uber-trace-id", true
	case "sw8":
		return "sw8", true
	case "x-amzn-trace-id":
		return "x-amzn-trace-id", true
	case "grpc-trace-bin":
		return "grpc-trace-bin", true
	case "tracestate":
		return "tracestate", true
	case "x-request-id":
		return "x-request-id", true
	case "x-correlation-id":
		return "x-correlation-id", true
	}
	return "", false
}

// idValue returns the normalised id a header carries, if it is one of
// the propagation headers.
func idValue(name, value string) (string, bool) {
	if name == "traceparent" {
		if id, upper, ok := traceparentID(value); ok {
			if upper {
				id = strings.ToLower(id)
			}
			return id, true
		}
	}
	value = strings.TrimSpace(value)
	switch name {
	case "traceparent": // version-traceid-spanid-flags
		if _, rest, ok := strings.Cut(value, "-"); ok {
			if id, rest, ok := strings.Cut(rest, "-"); ok && len(id) == 32 && strings.Count(rest, "-") >= 1 {
				return lowerASCII(id), true
			}
		}
		return value, true
	case "b3": // traceid-spanid[-sampled[-parent]], or a sampling flag alone
		if i := strings.IndexByte(value, '-'); i > 0 {
			return strings.ToLower(value[:i]), true
		}
		return "", false
	case "x-b3-traceid":
		return strings.ToLower(value), true
	case "uber-trace-id": // traceid:spanid:parent:flags, colons maybe escaped
		value = strings.ReplaceAll(value, "%3A", ":")
		if i := strings.IndexByte(value, ':'); i > 0 {
			return strings.ToLower(value[:i]), true
		}
		return value, true
	case "sw8": // sample-traceid-segment-...
		if p := strings.SplitN(value, "-", 3); len(p) >= 2 {
			return p[1], true
		}
		return value, true
	case "x-amzn-trace-id": // Root=1-...;Parent=...;Sampled=1
		for f := range strings.SplitSeq(value, ";") {
			if r, ok := strings.CutPrefix(strings.TrimSpace(f), "Root="); ok {
				return r, true
			}
		}
		return value, true
	case "grpc-trace-bin":
		return grpcTraceID(value), true
	case "tracestate", "x-request-id", "x-correlation-id":
		return value, true
	}
	return "", false
}

// traceparentID returns the trace id of a traceparent of the usual shape
// (W3C version 00: 2-32-16-2 characters between dashes, no space around),
// which the general case of idValue finds the same way, by looking at
// the dashes' places only; upper reports whether the id has an
// upper-case letter (lowerASCII's test, taken in the same pass).
func traceparentID(v string) (id string, upper, ok bool) {
	if len(v) != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' || v[0] == '-' || v[1] == '-' ||
		v[0] <= ' ' || v[0] >= 0x80 || v[54] <= ' ' || v[54] >= 0x80 {
		return "", false, false
	}
	id = v[3:35]
	// Eight bytes at a time: a byte of x^dashes is zero where x has a
	// '-' (exact, as a test of the whole word); the upper-case test is
	// hasUpper's.
	// The four words written out: a loop cost each a bounds check and
	// the constants loaded again.
	const ones, tops, dashes = 0x0101010101010101, 0x8080808080808080, 0x2d2d2d2d2d2d2d2d
	p := unsafe.Slice(unsafe.StringData(id), 32)
	x0, x1 := binary.LittleEndian.Uint64(p[0:8]), binary.LittleEndian.Uint64(p[8:16])
	x2, x3 := binary.LittleEndian.Uint64(p[16:24]), binary.LittleEndian.Uint64(p[24:32])
	y0, y1, y2, y3 := x0^dashes, x1^dashes, x2^dashes, x3^dashes
	dash := (y0-ones)&^y0 | (y1-ones)&^y1 | (y2-ones)&^y2 | (y3-ones)&^y3
	if dash&tops != 0 {
		return "", false, false
	}
	// An upper-case letter (0x41 to 0x5a) has bit 0x20 clear, which
	// digits and lower-case letters have set: when every byte has it,
	// there is none (the usual id, in lower case), without hasUpper's
	// test of each word.
	const lows = 0x2020202020202020
	if x0&x1&x2&x3&lows == lows {
		return id, false, true
	}
	upperBits := func(x uint64) uint64 {
		x7 := x &^ tops
		return (x7 + 0x3f*ones) &^ (x7 + 0x25*ones) &^ x
	}
	up := upperBits(x0) | upperBits(x1) | upperBits(x2) | upperBits(x3)
	return id, up&tops != 0, true
}

// idArena copies the ids a Decoder's Evidence keeps into shared chunks,
// an allocation per chunk rather than per id. A chunk's bytes are never
// written again once handed out.
type idArena struct {
	buf []byte
}

// Bounds of the arena: the size of a chunk, and the longest string copied
// into one (longer ones are copied alone).
const (
	idChunk      = 4096
	maxArenaCopy = 256
)

// clone returns a copy of v that outlives it.
func (a *idArena) clone(v string) string {
	if len(v) == 0 || len(v) > maxArenaCopy {
		return strings.Clone(v)
	}
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, idChunk)
	}
	n := len(a.buf)
	a.buf = a.buf[:n+len(v)]
	if dst := a.buf[n:]; len(v) == 32 {
		// A trace id (every traceparent's): a copy of a fixed size,
		// without memmove's call.
		*(*[32]byte)(dst) = *(*[32]byte)(unsafe.Pointer(unsafe.StringData(v)))
	} else {
		copy(dst, v)
	}
	return unsafe.String(&a.buf[n], len(v))
}

// grpcTraceID returns the trace id, in hex, of an OpenCensus binary trace
// context (version 0, field 0: 16 bytes of trace id), or value itself.
func grpcTraceID(value string) string {
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(value, "="))
	if err != nil || len(b) < 18 || b[0] != 0 || b[1] != 0 {
		return value
	}
	return hex.EncodeToString(b[2:18])
}

// pathTokens adds the segments and query values of a path.
func pathTokens(ev *proto.Evidence, p string) {
	path, query, _ := strings.Cut(p, "?")
	for s := range strings.SplitSeq(path, "/") {
		addToken(ev, s)
	}
	for kv := range strings.SplitSeq(query, "&") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			addToken(ev, v)
		}
	}
}

// addToken adds the hash of one token.
func addToken(ev *proto.Evidence, t string) {
	if t == "" {
		return
	}
	ev.Tokens = append(ev.Tokens, fingerprint(t))
}

// fingerprint returns go-farm's Fingerprint64 of t's bytes. It reads t in
// place: converting t to a []byte would copy it to the heap, since the
// compiler cannot prove that go-farm does not keep its argument.
func fingerprint(t string) uint64 {
	return farm.Fingerprint64(unsafe.Slice(unsafe.StringData(t), len(t)))
}

// finishEvidence sorts and deduplicates ev's tokens, keeps at most max
// of them (the smallest hashes, so that the choice does not depend on the
// order of the headers), and returns ev, or nil if it holds nothing.
func finishEvidence(ev *proto.Evidence, max int) *proto.Evidence {
	if t := ev.Tokens; len(t) <= maxInsertionTokens {
		ev.Tokens = sortCompactSmall(t)
	} else {
		slices.Sort(t)
		ev.Tokens = slices.Compact(t)
	}
	if len(ev.Tokens) > max {
		ev.Tokens = ev.Tokens[:max]
	}
	if len(ev.IDs) == 0 && len(ev.Tokens) == 0 {
		return nil
	}
	return ev
}

// maxInsertionTokens is the most tokens sortCompactSmall sorts: what
// slices.Sort does by insertion too, without its calls.
const maxInsertionTokens = 12

// sortCompactSmall sorts t by insertion, then drops repeated tokens if
// the sort met any, and returns what is left: what slices.Compact of
// slices.Sort of t returns.
// Each token is moved into place in the one pass that compares it (a
// search for its place, then a shift of the tokens after it, cost about
// 165 instructions a request of four tokens), through a window of t
// whose bounds the compiler knows, so that neither pass checks them.
func sortCompactSmall(t []uint64) []uint64 {
	if len(t) < 2 {
		return t
	}
	dup := false // a token placed after one equal to it (its repeat: t[:i] is sorted)
	for i := 1; i < len(t); i++ {
		w := t[:i+1]
		v := w[i]
		j := i
		for ; j > 0 && w[j-1] > v; j-- {
			w[j] = w[j-1]
		}
		w[j] = v
		if j > 0 && w[j-1] == v {
			dup = true
		}
	}
	if !dup {
		return t
	}
	n := 1 // t[:n] without repeats
	for _, v := range t[1:] {
		if v != t[n-1] {
			t[n] = v
			n++
		}
	}
	return t[:n]
}

// lowerASCII returns s in lower case, s itself (no copy) when it has no
// upper-case letter.
func lowerASCII(s string) string {
	if hasUpper(s) {
		return strings.ToLower(s)
	}
	return s
}

// hasUpper reports whether s has a byte 'A' to 'Z', looking at eight
// bytes at a time: with the top bits cleared (x7), adding 0x3f to a byte
// sets its top bit when it is at least 'A', adding 0x25 when it is past
// 'Z', and no sum carries into the next byte.
func hasUpper(s string) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	for ; len(s) >= 8; s = s[8:] {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		x7 := x &^ tops
		if (x7+0x3f*ones)&^(x7+0x25*ones)&^x&tops != 0 {
			return true
		}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// maxBody is how many bytes of a gRPC half's DATA its evidence reads: the
// 5-byte message prefix and the start of the first message.
const maxBody = 128

// grpcBodyEvidence adds the content tokens of the first gRPC message in
// body (the start of a half's DATA): a protocol buffer's string fields
// that are text and its varints (in decimal, as the other protocols'
// numbers), in nested messages too; a message that is not a protocol
// buffer but text of "a=1&b=x" parts, their values, as a query string's.
// A compressed message, or one that is neither, adds nothing. body may be
// cut anywhere: a field cut by its end is left out.
func grpcBodyEvidence(ev *proto.Evidence, body []byte, num *[20]byte) {
	if len(body) < 5 || body[0] != 0 {
		return
	}
	n := int(body[1])<<24 | int(body[2])<<16 | int(body[3])<<8 | int(body[4])
	msg := body[5:]
	cut := n > len(msg)
	if !cut {
		msg = msg[:n]
	}
	if len(msg) == 0 {
		return
	}
	if protoFields(nil, msg, cut, 0, num) {
		protoFields(ev, msg, cut, 0, num)
		return
	}
	if isText(msg) && isForm(msg) {
		for part := range bytes.SplitSeq(msg, []byte("&")) {
			_, v, _ := bytes.Cut(part, []byte("="))
			addTokenBytes(ev, v)
		}
	}
}

// isForm reports whether every "&"-separated part of p is a "name=value"
// pair.
func isForm(p []byte) bool {
	for part := range bytes.SplitSeq(p, []byte("&")) {
		if i := bytes.IndexByte(part, '='); i <= 0 {
			return false
		}
	}
	return true
}

// addTokenBytes adds the hash of one token held in bytes.
func addTokenBytes(ev *proto.Evidence, t []byte) {
	if len(t) > 0 {
		ev.Tokens = append(ev.Tokens, farm.Fingerprint64(t))
	}
}

// maxProtoDepth bounds the nesting protoFields reads into.
const maxProtoDepth = 3

// protoFields reports whether p is a protocol buffer message (cut: its
// end may be cut off) and, when ev is not nil, adds its tokens to ev: the
// text string fields, the varints, the tokens of the fields that are
// messages themselves (up to maxProtoDepth). num is scratch for a
// number's digits.
func protoFields(ev *proto.Evidence, p []byte, cut bool, depth int, num *[20]byte) bool {
	for i := 0; i < len(p); {
		key, k := binary.Uvarint(p[i:])
		if k <= 0 {
			return cut && k == 0
		}
		i += k
		if key>>3 == 0 {
			return false
		}
		switch key & 7 {
		case 0:
			v, k := binary.Uvarint(p[i:])
			if k <= 0 {
				return cut && k == 0
			}
			i += k
			if ev != nil {
				addTokenBytes(ev, strconv.AppendUint(num[:0], v, 10))
			}
		case 1, 5:
			w := 8
			if key&7 == 5 {
				w = 4
			}
			if i+w > len(p) {
				return cut
			}
			i += w
		case 2:
			l, k := binary.Uvarint(p[i:])
			if k <= 0 {
				return cut && k == 0
			}
			i += k
			if l > uint64(len(p)-i) {
				return cut
			}
			f := p[i : i+int(l)]
			i += int(l)
			if ev == nil {
				continue
			}
			switch {
			case isText(f):
				addTokenBytes(ev, f)
			case depth < maxProtoDepth && protoFields(nil, f, false, depth+1, num):
				protoFields(ev, f, false, depth+1, num)
			}
		default:
			return false
		}
	}
	return true
}

// isText reports whether p is non-empty UTF-8 text without control bytes.
// The control bytes are looked for first: a binary message (zeros, a
// length, a tag) nearly always has one early, where checking its UTF-8
// first read all of it.
func isText(p []byte) bool {
	if len(p) == 0 {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(p)
}
