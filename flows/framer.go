package flows

import (
	"bytes"
)

// frameMode is how one direction of a connection is framed.
type frameMode uint8

const (
	fmNone frameMode = iota // no framing: messages end at direction changes and pauses
	fmHTTP                  // HTTP/1.x
	fmDNS                   // DNS over TCP: 2-byte length prefix
	fmLost                  // framing lost sync (a hole, garbage); retried at the next message
)

// httpState is where an HTTP/1.x framer is within a message.
type httpState uint8

const (
	hHeaders    httpState = iota // start line and headers, up to the empty line
	hBody                        // remain bytes of a Content-Length body
	hChunkSize                   // a chunk-size line
	hChunkData                   // remain bytes of chunk data
	hChunkCRLF                   // the CRLF after chunk data
	hTrailer                     // trailer lines up to the empty line
	hUntilClose                  // a response body that ends when the connection does
	hTunnel                      // after CONNECT or 101 Switching Protocols: not HTTP any more
)

// Limits of the HTTP framer.
const (
	maxHeaderBytes = 64 << 10
	maxLineBytes   = 4 << 10
	maxPendingReqs = 16
)

// httpKind says what an HTTP message was.
type httpKind uint8

const (
	httpNone     httpKind = iota
	httpRequest           // a request: a CALL
	httpResponse          // a final response: the RETURN of the oldest unanswered request
	httpInterim           // a 1xx interim response: neither
)

// reqInfo is what a response's framing needs to know about its request.
type reqInfo uint8

const (
	reqPlain   reqInfo = iota
	reqHead            // HEAD: the response has no body
	reqConnect         // CONNECT: a 2xx response starts a tunnel
)

// httpShared is the HTTP state both directions of a connection share.
type httpShared struct {
	reqDir  int8 // the direction that carries requests, -1 until known
	pending [maxPendingReqs]reqInfo
	head, n int
	tunnel  bool
}

func (h *httpShared) reset() { *h = httpShared{reqDir: -1} }

func (h *httpShared) push(r reqInfo) {
	if h.n == maxPendingReqs {
		h.head = (h.head + 1) % maxPendingReqs
		h.n--
	}
	h.pending[(h.head+h.n)%maxPendingReqs] = r
	h.n++
}

func (h *httpShared) pop() reqInfo {
	if h.n == 0 {
		return reqPlain
	}
	r := h.pending[h.head]
	h.head = (h.head + 1) % maxPendingReqs
	h.n--
	return r
}

// framer cuts one direction's byte stream at application message
// boundaries. It is fed the stream in order, in pieces, possibly with
// bytes whose content the capture lacks (gaps, snap length); it keeps
// sync through those where the framing allows (inside a body of known
// length) and otherwise gives up until the next message.
type framer struct {
	mode   frameMode
	first  bool // no byte of this direction framed yet: detection pending
	hs     httpState
	remain int64
	line   []byte // start line and headers, or a chunk line, being read
	// dnsLen collects the 2-byte length prefix of a DNS-over-TCP message.
	dnsLen  [2]byte
	dnsHave int
	lost    int64 // times framing was lost
	dns     bool  // the direction is DNS over TCP
	// mid says the connection was seen from its middle: a first message
	// that is no HTTP may be the rest of one, so HTTP is sought again at
	// the next messages (up to midSeeks of them) before giving up.
	mid   bool
	seeks uint8
	// evHead and evBody are, after a feed that parsed a header block, the
	// block and the captured start of the body that followed it in the
	// same bytes (valid until the next feed), for the message's label and
	// evidence.
	evHead, evBody []byte
}

// init prepares f for a new direction: DNS on port 53, else HTTP detection.
func (f *framer) init(enabled, dns bool) {
	line := f.line[:0]
	if cap(line) > maxLineBytes {
		line = nil // do not keep a large header buffer for a new connection
	}
	*f = framer{line: line}
	switch {
	case !enabled:
		f.mode = fmNone
	case dns:
		f.mode, f.dns = fmDNS, true
	default:
		f.mode, f.first = fmHTTP, true
	}
}

// atStart reports whether the next byte begins an application message.
func (f *framer) atStart() bool {
	switch f.mode {
	case fmHTTP:
		return f.hs == hHeaders && len(f.line) == 0
	case fmDNS:
		return f.dnsHave == 0 && f.remain == 0
	}
	return false
}

// resync is called at the start of a new message: a framer that lost sync
// tries HTTP detection again there.
func (f *framer) resync() {
	if f.mode == fmLost {
		f.mode, f.hs, f.remain, f.line, f.dnsHave = fmHTTP, hHeaders, 0, f.line[:0], 0
		if f.dns {
			f.mode = fmDNS
		}
	}
}

// lose gives up framing until the next message.
func (f *framer) lose() {
	f.mode = fmLost
	f.line = f.line[:0]
	f.lost++
}

// expectsMore reports whether the framing is inside a message: the stream
// ending now leaves that message incomplete.
func (f *framer) expectsMore() bool {
	switch f.mode {
	case fmHTTP:
		return len(f.line) > 0 || (!f.first && f.hs != hHeaders && f.hs != hUntilClose && f.hs != hTunnel)
	case fmDNS:
		return f.dnsHave > 0 || f.remain > 0
	}
	return false
}

// feed frames the next n stream bytes, of which data holds the captured
// prefix. It returns how many bytes belong to the current application
// message and whether that message ends there; kind reports what the
// message's headers said when they were parsed in this call.
func (f *framer) feed(data []byte, n int, dir int, sh *httpShared) (used int, boundary bool, kind httpKind) {
	switch f.mode {
	case fmHTTP:
		return f.feedHTTP(data, n, dir, sh)
	case fmDNS:
		u, b := f.feedDNS(data, n)
		return u, b, httpNone
	}
	return n, false, httpNone
}

func (f *framer) feedDNS(data []byte, n int) (int, bool) {
	used := 0
	for used < n {
		if f.remain > 0 {
			k := int(min(f.remain, int64(n-used)))
			f.remain -= int64(k)
			used += k
			if f.remain == 0 {
				return used, true
			}
			continue
		}
		if used >= len(data) {
			f.lose()
			return n, false
		}
		f.dnsLen[f.dnsHave] = data[used]
		f.dnsHave++
		used++
		if f.dnsHave == 2 {
			f.dnsHave = 0
			f.remain = int64(f.dnsLen[0])<<8 | int64(f.dnsLen[1])
			if f.remain == 0 {
				return used, true
			}
		}
	}
	return used, false
}

// feedHTTP frames HTTP/1.x: header blocks, then bodies by Content-Length,
// chunked coding or the connection's end, each state's bytes handled by
// one method below.
func (f *framer) feedHTTP(data []byte, n int, dir int, sh *httpShared) (used int, boundary bool, kind httpKind) {
	for used < n {
		if sh.tunnel && f.hs != hTunnel {
			f.hs = hTunnel
		}
		var avail []byte
		if used < len(data) {
			avail = data[used:]
		}
		var stop bool
		switch f.hs {
		case hBody, hChunkData:
			used, stop = f.bodyBytes(used, n)
			boundary = stop
		case hUntilClose, hTunnel:
			return n, false, kind
		case hHeaders:
			var k httpKind
			if used, stop, boundary, k = f.headerBytes(avail, used, n, dir, sh); k != httpNone {
				kind = k
			}
		case hChunkSize, hChunkCRLF, hTrailer:
			used, stop, boundary = f.chunkLine(avail, used, n)
		}
		if stop {
			return used, boundary, kind
		}
	}
	return used, false, kind
}

// bodyBytes passes over body (or chunk data) bytes from used on; it
// reports true when the body, and with it the message, ends.
func (f *framer) bodyBytes(used, n int) (int, bool) {
	k := int(min(f.remain, int64(n-used)))
	f.remain -= int64(k)
	used += k
	switch {
	case f.remain > 0:
		return used, false
	case f.hs == hChunkData:
		f.hs = hChunkCRLF
		return used, false
	}
	f.hs = hHeaders
	return used, true
}

// headerBytes reads header bytes from used on. When the header block is
// complete it sets the body state and returns the message's kind; it
// stops (stop) at the end of a message without a body (boundary) or when
// it gives up on the stream.
func (f *framer) headerBytes(avail []byte, used, n, dir int, sh *httpShared) (next int, stop, boundary bool, kind httpKind) {
	if len(avail) == 0 {
		// Bytes the capture lacks: framing is lost until the next
		// message. A hole says nothing about the protocol, so on the
		// first message detection waits for the next one.
		f.line = f.line[:0]
		f.lose()
		return n, true, false, httpNone
	}
	block, took, ok := f.headerBlock(avail, n-used)
	if !ok {
		return n, true, false, httpNone
	}
	if block == nil { // the block goes on in the next bytes
		return used + len(avail), false, false, httpNone
	}
	nl := bytes.IndexByte(block, '\n')
	if !validStartLine(block[:nl]) {
		f.line = f.line[:0]
		f.giveUp()
		return n, true, false, httpNone
	}
	used += took
	kind, ok = f.parseHeaders(block, dir, sh)
	f.line = f.line[:0]
	if !ok {
		f.giveUp()
		return n, true, false, httpNone
	}
	f.evHead, f.evBody = block, f.bodyStart(avail[took:])
	f.first = false
	if f.hs == hHeaders {
		return used, true, true, kind // a message without a body
	}
	return used, false, false, kind
}

// headerBlock finds the complete header block, of which avail holds the
// next bytes and rem is what is left of the segment (captured or not). A
// block that starts and ends in avail is read in place; otherwise the
// bytes are gathered in f.line. It returns a nil block when the block goes
// on after avail, and false, having given up, when the bytes are not
// HTTP, the block is too long, or its rest was not captured. took is how
// many bytes of avail the block used.
func (f *framer) headerBlock(avail []byte, rem int) (block []byte, took int, ok bool) {
	start := len(f.line)
	if start == 0 {
		// Fast path: the whole header block is in this segment; read it
		// in place without copying.
		if end := endOfHeaders(avail, 0); end >= 0 {
			return avail[:end], end, true
		}
	}
	f.line = append(f.line, avail...)
	// Check the start line as soon as it is readable, so that a stream
	// that is not HTTP is let go at its first bytes, and again once its
	// first line is complete (SMTP or Redis look alike at first).
	nl := bytes.IndexByte(f.line, '\n')
	if !plausibleStartLine(f.line) || (nl >= 0 && !validStartLine(f.line[:nl])) {
		f.line = f.line[:0]
		f.giveUp()
		return nil, 0, false
	}
	end := endOfHeaders(f.line, max(0, start-3))
	if end >= 0 {
		return f.line[:end], end - start, true
	}
	if len(f.line) > maxHeaderBytes || len(avail) < rem {
		// Too long, or the rest was not captured.
		f.line = f.line[:0]
		f.giveUp()
		return nil, 0, false
	}
	return nil, 0, true
}

// bodyStart returns the part of rest, the captured bytes after a header
// block, that is the start of its body (none for chunked coding, whose
// chunk lines would be taken for content).
func (f *framer) bodyStart(rest []byte) []byte {
	switch f.hs {
	case hBody:
		return rest[:min(int64(len(rest)), f.remain)]
	case hUntilClose:
		return rest
	}
	return nil
}

// chunkLine reads the bytes of a chunk-size line, the CRLF after chunk
// data, or a trailer line, from used on. It stops (stop) at the end of the
// trailer, which ends the message (boundary), or when it gives up.
func (f *framer) chunkLine(avail []byte, used, n int) (next int, stop, boundary bool) {
	if len(avail) == 0 {
		f.giveUp()
		return n, true, false
	}
	i := bytes.IndexByte(avail, '\n')
	if i < 0 {
		rem := n - used
		f.line = append(f.line, avail...)
		used += len(avail)
		if len(f.line) > maxLineBytes || len(avail) < rem {
			f.giveUp()
			return n, true, false
		}
		return used, false, false
	}
	f.line = append(f.line, avail[:i+1]...)
	used += i + 1
	ok, end := f.chunkState(bytes.TrimRight(f.line, "\r\n"))
	f.line = f.line[:0]
	if !ok {
		f.giveUp()
		return n, true, false
	}
	return used, end, end
}

// chunkState moves the chunked-coding state on after a complete line; it
// reports false for a line that breaks the coding, and end at the blank
// line that ends the trailer.
func (f *framer) chunkState(line []byte) (ok, end bool) {
	switch f.hs {
	case hChunkSize:
		size, ok := parseChunkSize(line)
		if !ok {
			return false, false
		}
		if size == 0 {
			f.hs = hTrailer
		} else {
			f.hs, f.remain = hChunkData, size
		}
	case hChunkCRLF:
		if len(line) != 0 {
			return false, false
		}
		f.hs = hChunkSize
	case hTrailer:
		if len(line) == 0 {
			f.hs = hHeaders
			return true, true
		}
	}
	return true, false
}

// midSeeks is how many messages of a direction seen from its middle are
// searched for an HTTP/1.x start line before it is taken for no HTTP.
const midSeeks = 8

// giveUp loses sync; on the very first message it means the direction is
// not HTTP at all, unless the connection was seen from its middle: then
// the next message is tried again (not counted as a loss).
func (f *framer) giveUp() {
	if f.first && f.mid && f.seeks < midSeeks {
		f.seeks++
		f.mode = fmLost
		f.line = f.line[:0]
		return
	}
	if f.first {
		f.mode, f.first = fmNone, false
		f.line = f.line[:0]
		return
	}
	f.lose()
}

// endOfHeaders returns the index just after the blank line that ends an
// HTTP header block in b ("\r\n\r\n", or bare "\n\n"), looking at line
// ends from index from on, or -1.
func endOfHeaders(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// plausibleStartLine reports whether the bytes so far can begin an HTTP/1.x
// request or response line.
func plausibleStartLine(b []byte) bool {
	const resp = "HTTP/1."
	if len(b) > 0 && b[0] == 'H' {
		k := min(len(b), len(resp))
		if string(b[:k]) == resp[:k] {
			return true
		}
	}
	// METHOD SP target SP HTTP/1.x: a method token of capital letters.
	for i, c := range b {
		if c == ' ' {
			return i > 0
		}
		if !(c >= 'A' && c <= 'Z' || c == '-' || c == '_') || i >= 20 {
			return false
		}
	}
	return true
}

// validStartLine reports whether line (without its line feed) is an
// HTTP/1.x request line (METHOD SP target SP HTTP/1.x) or status line
// (HTTP/1.x SP 3DIGIT ...).
func validStartLine(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return len(line) >= 12 && line[8] == ' ' && isDigits(line[9:12]) && (len(line) == 12 || line[12] == ' ')
	}
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || sp > 20 || !plausibleStartLine(line[:sp+1]) {
		return false
	}
	rest := line[sp+1:]
	sp2 := bytes.LastIndexByte(rest, ' ')
	if sp2 <= 0 {
		return false
	}
	v := rest[sp2+1:]
	return len(v) == 8 && bytes.HasPrefix(v, []byte("HTTP/1.")) && isDigits(v[7:])
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// startLine is what a header block's first line says.
type startLine struct {
	isResp bool
	status int    // a response's status code
	method []byte // a request's method
}

// bodyFields are the header fields that say where the body ends.
type bodyFields struct {
	length  int64 // Content-Length, -1 if absent
	chunked bool  // Transfer-Encoding ends in chunked
}

// parseHeaders reads a complete header block and sets the body state.
func (f *framer) parseHeaders(h []byte, dir int, sh *httpShared) (httpKind, bool) {
	lineEnd := bytes.IndexByte(h, '\n')
	if lineEnd < 0 {
		return httpNone, false
	}
	sl, ok := parseStartLine(bytes.TrimRight(h[:lineEnd], "\r"))
	if !ok {
		return httpNone, false
	}
	bf, ok := parseBodyFields(h[lineEnd+1:])
	if !ok {
		return httpNone, false
	}
	if sh.reqDir < 0 {
		if sl.isResp {
			sh.reqDir = int8(1 - dir)
		} else {
			sh.reqDir = int8(dir)
		}
	}
	// A direction carries either requests or responses.
	if sl.isResp == (int(sh.reqDir) == dir) {
		return httpNone, false
	}
	f.hs = hHeaders
	if !sl.isResp {
		f.requestBody(sl.method, bf, sh)
		return httpRequest, true
	}
	return f.responseBody(sl.status, bf, sh), true
}

// parseStartLine parses a status line's code or a request line's method.
func parseStartLine(start []byte) (startLine, bool) {
	var sl startLine
	sp := bytes.IndexByte(start, ' ')
	if !bytes.HasPrefix(start, []byte("HTTP/1.")) {
		if sp <= 0 || !bytes.Contains(start[sp:], []byte(" HTTP/1.")) {
			return sl, false
		}
		sl.method = start[:sp]
		return sl, true
	}
	sl.isResp = true
	if sp < 0 || len(start) < sp+4 {
		return sl, false
	}
	for _, c := range start[sp+1 : sp+4] {
		if c < '0' || c > '9' {
			return sl, false
		}
		sl.status = sl.status*10 + int(c-'0')
	}
	return sl, true
}

// parseBodyFields reads Content-Length and Transfer-Encoding from the
// header lines; a Content-Length that is no number makes it fail.
func parseBodyFields(rest []byte) (bodyFields, bool) {
	bf := bodyFields{length: -1}
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		var line []byte
		if i < 0 {
			line, rest = rest, nil
		} else {
			line, rest = rest[:i], rest[i+1:]
		}
		line = bytes.TrimRight(line, "\r")
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		name := line[:colon]
		value := bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, ok := parseDecimal(value)
			if !ok {
				return bf, false
			}
			bf.length = v
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			// chunked must be the last coding.
			last := value
			if k := bytes.LastIndexByte(value, ','); k >= 0 {
				last = bytes.TrimSpace(value[k+1:])
			}
			bf.chunked = bytes.EqualFold(last, []byte("chunked"))
		}
	}
	return bf, true
}

// requestBody notes a request (for its response to know what it asked)
// and sets the state for its body.
func (f *framer) requestBody(method []byte, bf bodyFields, sh *httpShared) {
	info := reqPlain
	switch {
	case string(method) == "HEAD":
		info = reqHead
	case string(method) == "CONNECT":
		info = reqConnect
	}
	sh.push(info)
	switch {
	case bf.chunked:
		f.hs = hChunkSize
	case bf.length > 0:
		f.hs, f.remain = hBody, bf.length
	}
}

// responseBody matches a response with its request and sets the state
// for its body: none after HEAD, 204 and 304, the rest of the connection
// after a successful CONNECT or 101, else as the fields say, or until the
// connection closes.
func (f *framer) responseBody(status int, bf bodyFields, sh *httpShared) httpKind {
	if status >= 100 && status < 200 {
		if status == 101 {
			sh.pop()
			sh.tunnel = true
			return httpResponse
		}
		return httpInterim
	}
	req := sh.pop()
	switch {
	case req == reqHead || status == 204 || status == 304:
	case req == reqConnect && status < 300:
		sh.tunnel = true
	case bf.chunked:
		f.hs = hChunkSize
	case bf.length >= 0:
		if bf.length > 0 {
			f.hs, f.remain = hBody, bf.length
		}
	default:
		f.hs = hUntilClose
	}
	return httpResponse
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func parseChunkSize(b []byte) (int64, bool) {
	if k := bytes.IndexByte(b, ';'); k >= 0 {
		b = b[:k]
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
