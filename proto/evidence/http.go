package evidence

import (
	"bytes"
	"strconv"
)

// Bounds of a route label.
const (
	maxLabel    = 128 // bytes of a label
	maxSegments = 12  // path segments in a route label
)

// HTTPRequest adds the evidence of an HTTP/1.x request and returns its
// label. head is the request line and header block (up to and including
// the blank line or not), body the captured prefix of its body. Tokens:
// the method, the path segments, the query values, the values of headers
// named *-id, and JSON string and number values or form values from the
// first MaxBytes of the body. Identifiers: see Header. The label is the
// method and the route: "GET /item/{id}" (see AppendRoute). An unreadable
// request line, or a target that is not visible ASCII, gives the label "".
func (b *Builder) HTTPRequest(head, body []byte) string {
	line, rest := cutLine(head)
	method, after, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(method) == 0 || len(method) > 16 || !isMethod(method) {
		return ""
	}
	target, _, _ := bytes.Cut(after, []byte(" "))
	b.Token(method)
	path, query := splitTarget(target)
	b.buf = append(b.buf[:0], method...)
	b.buf = append(b.buf, ' ')
	if len(path) == 0 {
		b.buf = append(b.buf, target...) // "*" or an authority (CONNECT)
	} else {
		b.buf = AppendRoute(b.buf, path)
	}
	label := ""
	if len(b.buf) <= maxLabel && visible(b.buf[len(method)+1:]) {
		label = Intern(b.buf)
	}
	for seg := range bytes.SplitSeq(path, []byte("/")) {
		b.Token(seg)
	}
	b.Query(query)
	ctype := b.headers(rest)
	b.Body(ctype, body)
	return label
}

// HTTPResponse adds the evidence of an HTTP/1.x response (identifiers in
// its headers, such as traceresponse or an echoed X-Request-ID, and JSON
// or form values from its body) and returns its label, the status code
// ("404"), and the status (0 if the status line is unreadable or the code
// is below 100).
func (b *Builder) HTTPResponse(head, body []byte) (string, int) {
	line, rest := cutLine(head)
	_, after, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(after) < 3 {
		return "", 0
	}
	status := 0
	for _, c := range after[:3] {
		if c < '0' || c > '9' {
			return "", 0
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 {
		return "", 0
	}
	ctype := b.headers(rest)
	b.Body(ctype, body)
	return StatusLabel(status), status
}

// statusLabels holds "100" to "999".
var statusLabels = func() (t [1000]string) {
	for i := 100; i < len(t); i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// StatusLabel returns the label of an HTTP status: its decimal code.
func StatusLabel(status int) string {
	if status >= 100 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return ""
}

// StatusClass returns the class of an HTTP status: "2xx", "4xx", ...
func StatusClass(status int) string {
	switch status / 100 {
	case 1:
		return "1xx"
	case 2:
		return "2xx"
	case 3:
		return "3xx"
	case 4:
		return "4xx"
	case 5:
		return "5xx"
	}
	return ""
}

// headers reads header lines, adds their evidence and returns the value of
// Content-Type.
func (b *Builder) headers(rest []byte) []byte {
	var ctype []byte
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		if equalFold(name, "content-type") {
			ctype = value
			continue
		}
		b.Header(name, value)
	}
	return ctype
}

// Body adds the tokens of the first MaxBytes of a body: JSON string and
// number values when ctype says JSON (or is empty and the body starts
// with '{' or '['), form values for application/x-www-form-urlencoded.
func (b *Builder) Body(ctype, body []byte) {
	body = body[:min(len(body), b.cfg.MaxBytes)]
	t := bytes.TrimLeft(body, " \t\r\n")
	switch {
	case indexFold(ctype, "json") >= 0:
		b.JSON(t)
	case indexFold(ctype, "x-www-form-urlencoded") >= 0:
		b.Query(body)
	case len(bytes.TrimSpace(ctype)) == 0 && len(t) > 0 && (t[0] == '{' || t[0] == '['):
		b.JSON(t)
	}
}

// Query adds the values of a query string or form body "a=1&b=x" as
// tokens (raw, not percent-decoded); a part without '=' is a value.
func (b *Builder) Query(q []byte) {
	for part := range bytes.SplitSeq(q, []byte("&")) {
		if _, v, ok := bytes.Cut(part, []byte("=")); ok {
			b.Token(v)
		} else {
			b.Token(part)
		}
	}
}

// JSON adds the string and number values of a JSON text or prefix of one
// as tokens; object keys are not tokens. It is a tolerant scan, not a
// validator: a string or number cut by the end of p is left out, escapes
// are hashed as written, and bytes that are no JSON are skipped.
func (b *Builder) JSON(p []byte) {
	var prev byte // the last structural character or '"'
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '"':
			j, value := jsonString(p, i)
			if j < 0 {
				return // cut inside the string
			}
			if value {
				b.Token(p[i+1 : j])
			}
			i, prev = j+1, '"'
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(p) && isNumByte(p[j]) {
				j++
			}
			if j < len(p) && (prev == ':' || prev == ',' || prev == '[') {
				b.Token(p[i:j])
			}
			i, prev = j, '0'
		case c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',':
			i, prev = i+1, c
		default:
			i++
		}
	}
}

// jsonString returns the index of the closing quote of the string that
// opens at p[i] (-1 if p ends first) and whether the string is a value
// (not followed by ':'; a string at the very end is neither).
func jsonString(p []byte, i int) (int, bool) {
	// The next quote not escaped: runs without a backslash are searched
	// by IndexByte (a body's long strings cost 4 instructions a byte a
	// byte at a time); a backslash skips the byte after it.
	j := i + 1
	for {
		if j >= len(p) {
			return -1, false
		}
		q := bytes.IndexByte(p[j:], '"')
		if q < 0 {
			return -1, false
		}
		e := bytes.IndexByte(p[j:j+q], '\\')
		if e < 0 {
			j += q
			break
		}
		j += e + 2
	}
	k := j + 1
	for k < len(p) && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n') {
		k++
	}
	return j, k < len(p) && p[k] != ':'
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// Printable adds the runs of at least 4 visible ASCII characters
// (0x21-0x7e) in the first MaxBytes of p as tokens: the evidence of a
// message of an unknown protocol. A run cut by the end of the window is
// left out.
func (b *Builder) Printable(p []byte) {
	end := min(len(p), b.cfg.MaxBytes)
	start := -1
	for i := 0; i < end; i++ {
		if p[i] > 0x20 && p[i] < 0x7f {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 4 {
			b.Token(p[start:i])
		}
		start = -1
	}
	if start >= 0 && end == len(p) && end-start >= 4 {
		b.Token(p[start:end])
	}
}

// AppendRoute appends the route of an HTTP path to dst: segments that
// identify an item rather than a resource (all digits, a UUID, 8 or more
// hex digits with a digit among them, a high-entropy token, or longer than
// 48 bytes) become "{id}"; at most 12 segments are kept ("/..." follows).
// "/item/12345/photos/9f86d081" gives "/item/{id}/photos/{id}".
func AppendRoute(dst, path []byte) []byte {
	if len(path) == 0 || path[0] != '/' {
		return append(dst, '/')
	}
	n := 0
	for seg := range bytes.SplitSeq(path[1:], []byte("/")) {
		if n == maxSegments {
			return append(dst, "/..."...)
		}
		n++
		dst = append(dst, '/')
		if IDSegment(seg) {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, seg...)
		}
	}
	return dst
}

// IDSegment reports whether a path segment names an item: all digits, a
// UUID, 8 or more hex digits with at least one digit, a high-entropy
// token, longer than 48 bytes, or holding bytes that are no visible ASCII.
func IDSegment(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	if len(s) > 48 || !visible(s) || allDigits(s) || isUUID(s) || HighEntropy(s) {
		return true
	}
	return len(s) >= 8 && isHex(s) && bytes.ContainsAny(s, "0123456789")
}

// isMethod reports whether m is an HTTP method token of capital letters.
func isMethod(m []byte) bool {
	for _, c := range m {
		if (c < 'A' || c > 'Z') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// visible reports whether s is all visible ASCII.
func visible(s []byte) bool {
	for _, c := range s {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func allDigits(s []byte) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(s) > 0
}

// isUUID reports whether s has the 8-4-4-4-12 hex shape of a UUID.
func isUUID(s []byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	return isHex(s[:8]) && isHex(s[9:13]) && isHex(s[14:18]) && isHex(s[19:23]) && isHex(s[24:])
}

// splitTarget returns the path and query of a request target in origin
// form ("/a/b?x=1") or absolute form ("http://host/a/b?x=1"); an
// asterisk or authority target has no path.
func splitTarget(t []byte) (path, query []byte) {
	if i := bytes.IndexByte(t, '#'); i >= 0 {
		t = t[:i]
	}
	if i := bytes.Index(t, []byte("://")); i > 0 && (len(t) == 0 || t[0] != '/') {
		rest := t[i+3:]
		j := bytes.IndexByte(rest, '/')
		if j < 0 {
			return []byte("/"), nil
		}
		t = rest[j:]
	}
	if len(t) == 0 || t[0] != '/' {
		return nil, nil
	}
	path, query, _ = bytes.Cut(t, []byte("?"))
	return path, query
}

// cutLine returns the first line of b without its line end, and the rest.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}
