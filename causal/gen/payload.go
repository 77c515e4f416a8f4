package gen

import (
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// payloadSpec is what a protocol payload carries: the evidence of one
// message, in the form render writes it.
type payloadSpec struct {
	kind     trace.Kind
	protocol string // of the server: http, redis or memcached
	label    string // the call's label or the return's status
	idSource string // "x-request-id" or "traceparent", "" for none
	idValue  string // 32 hex digits
	tokens   []string
}

// render appends to buf the payload of a message described by ps, of
// size bytes where the protocol lets the body absorb them, else of the
// smallest size that holds it (a Redis or memcached command, an error
// reply). The result's length is the message's size.
//
//   - http: a request line, Host, the propagated identifier header and a
//     Content-Length, the tokens as query values, the body padding; a
//     response's status line and a JSON body holding the tokens.
//   - redis: GET of a key made of the tokens; a bulk-string reply holding
//     them, or an error.
//   - memcached: get of such a key; a VALUE reply, or SERVER_ERROR.
func render(buf []byte, ps *payloadSpec, size int) []byte {
	switch {
	case ps.protocol == "redis" && ps.kind == trace.KindCall:
		key := tokenKey(ps.tokens)
		buf = append(buf, "*2\r\n$3\r\nGET\r\n$"...)
		buf = strconv.AppendInt(buf, int64(len(key)), 10)
		buf = append(buf, "\r\n"...)
		buf = append(buf, key...)
		return append(buf, "\r\n"...)
	case ps.protocol == "redis":
		if ps.label == "ERR" {
			return append(buf, "-ERR failed\r\n"...)
		}
		return bulkReply(buf, ps.tokens, size)
	case ps.protocol == "memcached" && ps.kind == trace.KindCall:
		buf = append(buf, "get "...)
		buf = append(buf, tokenKey(ps.tokens)...)
		return append(buf, "\r\n"...)
	case ps.protocol == "memcached":
		if ps.label == "ERR" {
			return append(buf, "SERVER_ERROR failed\r\n"...)
		}
		return valueReply(buf, ps.tokens, size)
	case ps.kind == trace.KindCall:
		return httpRequest(buf, ps, size)
	}
	return httpResponse(buf, ps, size)
}

// tokenKey joins tokens into a cache key.
func tokenKey(tokens []string) string {
	if len(tokens) == 0 {
		return "key"
	}
	return "k:" + strings.Join(tokens, ":")
}

// withLength appends head, a Content-Length line for a body that makes
// the whole size bytes (or an empty body when head alone is larger), the
// blank line and body(n).
func withLength(buf []byte, head []byte, size int, body func(buf []byte, n int) []byte) []byte {
	n := 0
	for range 3 { // the length's own digits change the room left
		n = max(0, size-len(head)-len("Content-Length: \r\n\r\n")-len(strconv.Itoa(n)))
	}
	buf = append(buf, head...)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, "\r\n\r\n"...)
	return body(buf, n)
}

// pad appends n bytes of padding.
func pad(buf []byte, n int) []byte {
	for range n {
		buf = append(buf, 'x')
	}
	return buf
}

func httpRequest(buf []byte, ps *payloadSpec, size int) []byte {
	method, path, ok := strings.Cut(ps.label, " ")
	if !ok || method == "" || !strings.HasPrefix(path, "/") {
		method, path = "GET", "/"
	}
	var h strings.Builder
	h.WriteString(method + " " + path)
	for i, t := range ps.tokens {
		if i == 0 {
			h.WriteByte('?')
		} else {
			h.WriteByte('&')
		}
		h.WriteString("t" + strconv.Itoa(i) + "=" + t)
	}
	h.WriteString(" HTTP/1.1\r\nHost: svc\r\n")
	switch ps.idSource {
	case "x-request-id":
		h.WriteString("X-Request-ID: " + ps.idValue + "\r\n")
	case "traceparent":
		h.WriteString("traceparent: 00-" + ps.idValue + "-00f067aa0ba902b7-01\r\n")
	}
	return withLength(buf, []byte(h.String()), size, pad)
}

func httpResponse(buf []byte, ps *payloadSpec, size int) []byte {
	status := "200 OK"
	if ps.label == "500" {
		status = "500 Internal Server Error"
	}
	head := []byte("HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n")
	return withLength(buf, head, size, func(buf []byte, n int) []byte {
		body := jsonTokens(ps.tokens)
		if len(body)+len(`,"p":""}`) > n {
			return pad(buf, n) // no room for the JSON: padding only
		}
		buf = append(buf, body...)
		buf = append(buf, `,"p":"`...)
		buf = pad(buf, n-len(body)-len(`,"p":""}`))
		return append(buf, `"}`...)
	})
}

// jsonTokens returns `{"t":["a","b"]` (without the closing brace).
func jsonTokens(tokens []string) string {
	var b strings.Builder
	b.WriteString(`{"t":[`)
	for i, t := range tokens {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + t + `"`)
	}
	b.WriteString("]")
	return b.String()
}

// bulkReply appends a RESP bulk string holding the tokens, padded so that
// the reply is size bytes when it can be.
func bulkReply(buf []byte, tokens []string, size int) []byte {
	v := strings.Join(tokens, " ")
	n := len(v)
	for range 3 {
		n = max(len(v), size-len("$\r\n\r\n")-len(strconv.Itoa(n)))
	}
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, "\r\n"...)
	buf = append(buf, v...)
	buf = pad(buf, n-len(v))
	return append(buf, "\r\n"...)
}

// valueReply appends a memcached VALUE reply holding the tokens, padded so
// that the reply is size bytes when it can be.
func valueReply(buf []byte, tokens []string, size int) []byte {
	v := strings.Join(tokens, " ")
	key := tokenKey(tokens)
	n := len(v)
	for range 3 {
		n = max(len(v), size-len("VALUE  0 \r\n\r\nEND\r\n")-len(key)-len(strconv.Itoa(n)))
	}
	buf = append(buf, "VALUE "+key+" 0 "...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, "\r\n"...)
	buf = append(buf, v...)
	buf = pad(buf, n-len(v))
	return append(buf, "\r\nEND\r\n"...)
}

// spec describes message parts of the generation for render: its kind,
// server node, label, identifier and tokens.
func (s *state) spec(kind trace.Kind, server int, label string, reqID trace.Sym, tok [2]uint32) payloadSpec {
	ps := payloadSpec{kind: kind, protocol: s.protocol(server), label: label}
	if reqID != 0 {
		ps.idSource, ps.idValue, _ = strings.Cut(s.t.Str(reqID), ":")
	}
	for _, t := range s.tokens(tok) {
		ps.tokens = append(ps.tokens, tokenText(t))
	}
	return ps
}

// size returns the size of a message of configured size: with protocol
// payloads, the size of its rendered payload (configured unless the
// protocol needs more, or is a fixed-size command); else configured.
func (s *state) size(configured int, kind trace.Kind, server int, label string, reqID trace.Sym, tok [2]uint32) int {
	if !s.p.ev.payloads || s.p.nodes[server].proto == trace.ProtoUDP {
		return configured
	}
	ps := s.spec(kind, server, label, reqID, tok)
	s.ev.payload = render(s.ev.payload[:0], &ps, configured)
	return len(s.ev.payload)
}
