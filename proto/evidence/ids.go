package evidence

import (
	"bytes"
	"encoding/base64"
	"slices"
)

// Sources of the propagated identifiers Header recognises. The generic
// rule's sources are "header:" followed by the lowercased header name.
const (
	SrcTraceparent   = "traceparent"     // W3C trace context: the trace-id
	SrcTraceresponse = "traceresponse"   // W3C trace context response header: the trace-id
	SrcB3            = "b3"              // B3 single header: the trace id
	SrcB3TraceID     = "x-b3-traceid"    // B3 multi-header trace id
	SrcUber          = "uber-trace-id"   // Jaeger: the trace id
	SrcSW8           = "sw8"             // SkyWalking v8: the trace id, base64-decoded
	SrcAmzn          = "x-amzn-trace-id" // AWS X-Ray: the Root field
	SrcCloudTrace    = "x-cloud-trace-context"
	SrcGRPCTraceBin  = "grpc-trace-bin" // OpenCensus binary trace context: the trace id
	SrcRequestID     = "x-request-id"
	SrcCorrelationID = "x-correlation-id"
)

// opaqueIDHeaders are headers whose whole value is an identifier.
var opaqueIDHeaders = []string{SrcRequestID, SrcCorrelationID, "request-id", "correlation-id", "x-amzn-requestid", "x-amz-request-id"}

// deniedWords mark header names whose values are never recorded as
// identifiers or tokens: credentials and content digests.
var deniedWords = []string{"auth", "cookie", "token", "key", "secret", "passw", "session", "csrf", "signature", "etag", "if-match", "if-none-match", "digest", "md5", "sha1", "sha256", "sha512"}

// Header adds the evidence of one header (an HTTP/1.x header, an HTTP/2
// or gRPC metadata entry): a propagated identifier when the name is a
// known one or the value passes the high-entropy test, and the value as a
// token when the name ends in "-id". Credentials (names containing auth,
// cookie, token, key, secret, session, ...) are never taken.
func (b *Builder) Header(name, value []byte) {
	value = bytes.TrimSpace(value)
	if len(name) == 0 || len(value) == 0 {
		return
	}
	if b.knownID(name, value) {
		return
	}
	if denied(name) {
		return
	}
	if hasSuffixFold(name, "-id") {
		b.Token(value)
	}
	if HighEntropy(value) {
		b.Stats.IDCandidates++
		b.buf = append(b.buf[:0], "header:"...)
		b.buf = appendLower(b.buf, name)
		b.addID(Intern(b.buf), value)
	}
}

// knownID handles the headers with a defined format. It reports whether
// name was one of them (whether or not its value parsed).
func (b *Builder) knownID(name, value []byte) bool {
	var src string
	var norm []byte
	ok := true
	switch {
	case equalFold(name, SrcTraceparent), equalFold(name, SrcTraceresponse):
		src = SrcTraceparent
		if equalFold(name, SrcTraceresponse) {
			src = SrcTraceresponse
		}
		norm, ok = parseTraceparent(b.buf[:0], value)
	case equalFold(name, "tracestate"):
		// Vendor key=value pairs, propagated unchanged: no trace id of
		// their own, so each member's value is a content token.
		for m := range bytes.SplitSeq(value, []byte(",")) {
			if i := bytes.IndexByte(m, '='); i >= 0 {
				b.Token(bytes.TrimSpace(m[i+1:]))
			}
		}
		return true
	case equalFold(name, SrcB3):
		src = SrcB3
		if len(value) == 1 { // sampling decision only: no trace id
			return true
		}
		tid, _, _ := bytes.Cut(value, []byte("-"))
		norm, ok = normTraceID(b.buf[:0], tid)
	case equalFold(name, SrcB3TraceID):
		src = SrcB3TraceID
		norm, ok = normTraceID(b.buf[:0], value)
	case equalFold(name, SrcUber):
		src = SrcUber
		norm, ok = parseUber(b.buf[:0], value)
	case equalFold(name, SrcSW8):
		src = SrcSW8
		norm, ok = parseSW8(b.buf[:0], value)
	case equalFold(name, SrcAmzn):
		src = SrcAmzn
		norm, ok = parseAmzn(value)
	case equalFold(name, SrcCloudTrace):
		src = SrcCloudTrace
		tid, _, _ := bytes.Cut(value, []byte("/"))
		norm, ok = normTraceID(b.buf[:0], tid)
	case equalFold(name, SrcGRPCTraceBin):
		src = SrcGRPCTraceBin
		norm, ok = parseGRPCTraceBin(b.buf[:0], value)
	default:
		for _, h := range opaqueIDHeaders {
			if equalFold(name, h) {
				src = h
				norm, ok = value, printableID(value)
				break
			}
		}
		if src == "" {
			return false
		}
	}
	b.Stats.IDCandidates++
	if !ok {
		b.Stats.Malformed++
		return true
	}
	b.addID(src, norm)
	return true
}

// HighEntropy reports whether v looks like a generated identifier rather
// than a word, a number or a list: 16 to 128 bytes of [A-Za-z0-9-_+/]
// with optional trailing '=' padding, holding at least one digit and one
// letter (or only digits: a 16-digit or longer number), and either
//   - hexadecimal with dashes (a UUID, a hex trace id): at least 8
//     distinct characters, or
//   - base64 or base64url: upper and lower case letters and at least 10
//     distinct characters.
//
// A random 16-byte value in hex or base64 passes with near certainty;
// "0000000000000000", "application-json-v1", words, dates and lowercase
// base36 ids do not.
func HighEntropy(v []byte) bool {
	if len(v) < 16 || len(v) > 128 {
		return false
	}
	for len(v) > 0 && v[len(v)-1] == '=' {
		v = v[:len(v)-1]
	}
	var seen [128]bool
	var all charClass
	distinct := 0
	for _, c := range v {
		k := classOf(c)
		if k == 0 {
			return false
		}
		all |= k
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	if all&cDigit == 0 || (all&(cUpper|cLower) == 0 && len(v) < 16) {
		return false
	}
	if all&cNonHex == 0 {
		return distinct >= 8
	}
	return all&cUpper != 0 && all&cLower != 0 && distinct >= 10
}

// charClass is a set of the character classes HighEntropy tells apart.
type charClass uint8

const (
	cDigit  charClass = 1 << iota
	cUpper            // an upper-case letter
	cLower            // a lower-case letter
	cNonHex           // a letter past 'f', or one of _ + /
	cDash
)

// classOf returns c's classes, 0 for a byte no identifier holds.
func classOf(c byte) charClass {
	switch {
	case c >= '0' && c <= '9':
		return cDigit
	case c >= 'a' && c <= 'f':
		return cLower
	case c >= 'A' && c <= 'F':
		return cUpper
	case c >= 'g' && c <= 'z':
		return cLower | cNonHex
	case c >= 'G' && c <= 'Z':
		return cUpper | cNonHex
	case c == '-':
		return cDash
	case c == '_' || c == '+' || c == '/':
		return cNonHex
	}
	return 0
}

// parseTraceparent returns the trace-id of a W3C traceparent value
// "vv-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>", lowercased.
func parseTraceparent(dst, v []byte) ([]byte, bool) {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' || !isHex(v[:2]) || string(v[:2]) == "ff" {
		return dst, false
	}
	if string(v[:2]) == "00" && len(v) != 55 {
		return dst, false
	}
	tid := v[3:35]
	if !isHex(tid) || allZero(tid) || !isHex(v[36:52]) {
		return dst, false
	}
	return appendLower(dst, tid), true
}

// normTraceID returns a 16- or 32-digit hex trace id as 32 lowercase hex
// digits (a 64-bit id left-padded with zeros, as B3 and W3C interoperate),
// so the same trace matches whichever header carried it.
func normTraceID(dst, v []byte) ([]byte, bool) {
	if len(v) == 0 || len(v) > 32 || !isHex(v) || allZero(v) {
		return dst, false
	}
	for i := len(v); i < 32; i++ {
		dst = append(dst, '0')
	}
	return appendLower(dst, v), true
}

// parseUber returns the trace id of a Jaeger uber-trace-id value
// "{trace-id}:{span-id}:{parent-span-id}:{flags}" (':' may be URL-encoded
// as %3A), normalised to 32 hex digits.
func parseUber(dst, v []byte) ([]byte, bool) {
	i := bytes.IndexByte(v, ':')
	if j := indexFold(v, "%3a"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i <= 0 {
		return dst, false
	}
	return normTraceID(dst, v[:i])
}

// parseSW8 returns the trace id of a SkyWalking v8 header
// "{sample}-{base64 trace id}-{base64 segment id}-...", base64-decoded.
func parseSW8(dst, v []byte) ([]byte, bool) {
	parts := 0
	for f := range bytes.SplitSeq(v, []byte("-")) {
		parts++
		if parts == 2 {
			n := base64.StdEncoding.DecodedLen(len(f))
			if n == 0 || n > 128 {
				return dst, false
			}
			dst = slices.Grow(dst[:0], n)[:n]
			m, err := base64.StdEncoding.Decode(dst, f)
			if err != nil || m == 0 || !printableID(dst[:m]) {
				return dst, false
			}
			return dst[:m], true
		}
	}
	return dst, false
}

// parseAmzn returns the Root field of an X-Amzn-Trace-Id value
// "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=...;Sampled=1".
func parseAmzn(v []byte) ([]byte, bool) {
	for f := range bytes.SplitSeq(v, []byte(";")) {
		f = bytes.TrimSpace(f)
		if len(f) > 5 && equalFold(f[:5], "root=") {
			r := f[5:]
			return r, printableID(r)
		}
	}
	return nil, false
}

// parseGRPCTraceBin returns the trace id of an OpenCensus binary trace
// context (version 0, field 0 with a 16-byte trace id, field 1 with an
// 8-byte span id, field 2 with options), given raw or base64-encoded (as
// gRPC sends every -bin header on the wire, padding optional).
func parseGRPCTraceBin(dst, v []byte) ([]byte, bool) {
	raw := v
	if len(v) < 2 || v[0] != 0 || v[1] != 0 {
		var tmp [64]byte
		enc := base64.StdEncoding
		if len(v)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		if enc.DecodedLen(len(v)) > len(tmp) {
			return dst, false
		}
		n, err := enc.Decode(tmp[:], v)
		if err != nil {
			return dst, false
		}
		raw = tmp[:n]
	}
	if len(raw) < 18 || raw[0] != 0 || raw[1] != 0 || allZero(raw[2:18]) {
		return dst, false
	}
	const hexd = "0123456789abcdef"
	for _, c := range raw[2:18] {
		dst = append(dst, hexd[c>>4], hexd[c&15])
	}
	return dst, true
}

// printableID reports whether v is a plausible opaque identifier: visible
// ASCII without spaces.
func printableID(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// denied reports whether name contains one of deniedWords (ignoring case)
// or starts with "sec-websocket-". The words are looked for only where
// name has one's first letter (deniedByFirst), in one pass over name
// rather than one per word: a header name cost about 3,000 instructions.
func denied(name []byte) bool {
	for i, c := range name {
		for _, w := range deniedByFirst[c] {
			if hasPrefixFold(name[i:], w) {
				return true
			}
		}
	}
	return hasPrefixFold(name, "sec-websocket-")
}

// deniedByFirst holds the deniedWords by their first letter, under it in
// both cases.
var deniedByFirst = func() (t [256][]string) {
	for _, w := range deniedWords {
		c := w[0]
		t[c] = append(t[c], w)
		if c >= 'a' && c <= 'z' {
			t[c-'a'+'A'] = append(t[c-'a'+'A'], w)
		}
	}
	return t
}()

func isHex(v []byte) bool {
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return len(v) > 0
}

func allZero(v []byte) bool {
	for _, c := range v {
		if c != '0' && c != 0 {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func appendLower(dst, v []byte) []byte {
	for _, c := range v {
		dst = append(dst, lower(c))
	}
	return dst
}

// equalFold reports whether b equals the lowercase ASCII s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

func hasPrefixFold(b []byte, s string) bool {
	return len(b) >= len(s) && equalFold(b[:len(s)], s)
}

func hasSuffixFold(b []byte, s string) bool {
	return len(b) >= len(s) && equalFold(b[len(b)-len(s):], s)
}

// indexFold returns the index of lowercase s in b ignoring case, or -1.
func indexFold(b []byte, s string) int {
	for i := 0; i+len(s) <= len(b); i++ {
		if equalFold(b[i:i+len(s)], s) {
			return i
		}
	}
	return -1
}
