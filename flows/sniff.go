package flows

import (
	"bytes"
	"encoding/binary"
)

// h2Preface is the HTTP/2 client connection preface (RFC 9113 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// PostgreSQL start-up request codes (protocol 3).
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
	pgCancelRequest = 80877102
	pgProtocol3     = 196608
	pgMaxStartup    = 10000
)

// sniffClient returns the protocol that a client's first bytes on a
// connection begin, among those decoded by a proto decoder (HTTP/2,
// TLS, PostgreSQL, Redis, memcached), or AppNone. HTTP/1.x is left to
// the in-place framer, which detects it on its own.
func sniffClient(b []byte) App {
	switch {
	case len(b) == 0:
		return AppNone
	case isH2Preface(b):
		return AppH2
	case isClientHello(b):
		return AppTLS
	case isPostgresStart(b):
		return AppPostgres
	case isRESPCommand(b):
		return AppRedis
	case isMemcacheBinary(b), isMemcacheText(b):
		return AppMemcache
	}
	return AppNone
}

// sniffServer returns the protocol a server's first bytes begin when the
// server speaks first: a MySQL greeting, or AppNone.
func sniffServer(b []byte) App {
	if isMySQLGreeting(b) {
		return AppMySQL
	}
	return AppNone
}

// isH2Preface reports whether b begins with the HTTP/2 preface (or is a
// prefix of it at least 4 bytes long: "PRI ").
func isH2Preface(b []byte) bool {
	k := min(len(b), len(h2Preface))
	return k >= 4 && string(b[:k]) == h2Preface[:k]
}

// isClientHello reports whether b begins a TLS handshake record of a TLS
// version whose first message (if its type byte is there) is a
// ClientHello.
func isClientHello(b []byte) bool {
	if len(b) < 3 || b[0] != 0x16 || b[1] != 3 || b[2] > 4 {
		return false
	}
	return len(b) < 6 || b[5] == 1
}

// isPostgresStart reports whether b begins with a PostgreSQL
// StartupMessage, SSLRequest, GSSENCRequest or CancelRequest: a length
// and a code that only those carry.
func isPostgresStart(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	n, code := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	switch code {
	case pgSSLRequest, pgGSSENCRequest:
		return n == 8
	case pgCancelRequest:
		return n == 16
	case pgProtocol3:
		return n > 8 && n <= pgMaxStartup
	}
	return false
}

// isRESPCommand reports whether b begins a RESP command: an array of
// bulk strings, "*<n>\r\n$".
func isRESPCommand(b []byte) bool {
	if len(b) < 5 || b[0] != '*' {
		return false
	}
	i := 1
	for i < len(b) && i <= 8 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i > 1 && i+2 < len(b) && b[i] == '\r' && b[i+1] == '\n' && b[i+2] == '$'
}

// isMemcacheBinary reports whether b begins a memcached binary request
// header: the request magic, a known opcode, and lengths that fit.
func isMemcacheBinary(b []byte) bool {
	if len(b) < 24 || b[0] != 0x80 || b[1] > 0x48 || b[5] != 0 {
		return false
	}
	key, extras := int(binary.BigEndian.Uint16(b[2:])), int(b[4])
	body := binary.BigEndian.Uint32(b[8:])
	return uint64(key+extras) <= uint64(body) && body <= 1<<20
}

// memcacheWords are the text protocol's commands (classic and meta).
var memcacheWords = []string{"get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend",
	"cas", "incr", "decr", "delete", "touch", "mg", "ms", "md", "ma", "mn", "me", "stats", "version",
	"verbosity", "flush_all", "quit"}

// isMemcacheText reports whether b begins a memcached text command: a
// command word followed by a space or the end of the line.
func isMemcacheText(b []byte) bool {
	i := bytes.IndexAny(b[:min(len(b), 12)], " \r")
	if i <= 0 {
		return false
	}
	w := b[:i]
	for _, c := range memcacheWords {
		if string(w) == c {
			return b[i] == ' ' || i+1 < len(b) && b[i+1] == '\n'
		}
	}
	return false
}

// isMySQLGreeting reports whether b begins a MySQL or MariaDB server
// greeting: a packet of sequence id 0, protocol version 10, and a
// printable server version.
func isMySQLGreeting(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if b[3] != 0 || b[4] != 10 || n < 30 || n > 1024 {
		return false
	}
	for _, c := range b[5:min(len(b), 8)] {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
