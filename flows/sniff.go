package flows

import (
	"bytes"
	"encoding/binary"
	"strings"
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

// verdict is what a signature says of a connection's first bytes.
type verdict uint8

const (
	vNo    verdict = iota // they are not this protocol
	vMaybe                // too few bytes to tell
	vYes                  // they begin this protocol
)

// sniffLen is how many of a client's first bytes decide its protocol at
// most (the HTTP/2 preface's length).
const sniffLen = len(h2Preface)

// sniffClient returns the protocol that a client's first bytes on a
// connection begin, among those decoded by a proto decoder (HTTP/2, TLS,
// PostgreSQL, Redis, memcached), or AppNone; final is false while more
// bytes could still change the answer. HTTP/1.x is left to the in-place
// framer, which detects it on its own.
func sniffClient(b []byte) (app App, final bool) {
	maybe := false
	for _, sig := range signatures {
		switch sig.test(b) {
		case vYes:
			return sig.app, true
		case vMaybe:
			maybe = true
		}
	}
	return AppNone, !maybe || len(b) >= sniffLen
}

// signatures are the tests of the client's first bytes, in order.
var signatures = []struct {
	app  App
	test func([]byte) verdict
}{
	{AppH2, h2Start}, {AppTLS, clientHello}, {AppPostgres, postgresStart},
	{AppRedis, respCommand}, {AppMemcache, memcacheBinary}, {AppMemcache, memcacheText},
}

// h2Start tests for the HTTP/2 client preface.
func h2Start(b []byte) verdict {
	k := min(len(b), len(h2Preface))
	switch {
	case string(b[:k]) != h2Preface[:k]:
		return vNo
	case k < len(h2Preface):
		return vMaybe
	}
	return vYes
}

// clientHello tests for a TLS handshake record of a TLS version whose
// first message is a ClientHello.
func clientHello(b []byte) verdict {
	want := [...]struct{ lo, hi byte }{{0x16, 0x16}, {3, 3}, {0, 4}, {0, 0xff}, {0, 0xff}, {1, 1}}
	for i, w := range want {
		if i == len(b) {
			return vMaybe
		}
		if b[i] < w.lo || b[i] > w.hi {
			return vNo
		}
	}
	return vYes
}

// postgresStart tests for a PostgreSQL StartupMessage, SSLRequest,
// GSSENCRequest or CancelRequest: a length and a code only those carry.
func postgresStart(b []byte) verdict {
	if len(b) < 8 {
		var x [8]byte
		copy(x[:], b)
		if n := binary.BigEndian.Uint32(x[:]); n > pgMaxStartup && len(b) >= 4 || len(b) >= 2 && (x[0] != 0 || x[1] != 0) {
			return vNo
		}
		return vMaybe
	}
	n, code := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	ok := false
	switch code {
	case pgSSLRequest, pgGSSENCRequest:
		ok = n == 8
	case pgCancelRequest:
		ok = n == 16
	case pgProtocol3:
		ok = n > 8 && n <= pgMaxStartup
	}
	if ok {
		return vYes
	}
	return vNo
}

// respCommand tests for a RESP command: an array of bulk strings,
// "*<n>\r\n$".
func respCommand(b []byte) verdict {
	if len(b) == 0 {
		return vMaybe
	}
	if b[0] != '*' {
		return vNo
	}
	i := 1
	for i < len(b) && i <= 8 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	for k, c := range []byte("\r\n$") {
		switch {
		case i+k == len(b):
			return vMaybe
		case i == 1 || b[i+k] != c:
			return vNo
		}
	}
	return vYes
}

// memcacheBinary tests for a memcached binary request header: the
// request magic, a known opcode, and lengths that fit.
func memcacheBinary(b []byte) verdict {
	switch {
	case len(b) > 0 && b[0] != 0x80, len(b) > 1 && b[1] > 0x48:
		return vNo
	case len(b) < 24:
		return vMaybe
	}
	key, extras := int(binary.BigEndian.Uint16(b[2:])), int(b[4])
	body := binary.BigEndian.Uint32(b[8:])
	if b[5] == 0 && uint64(key+extras) <= uint64(body) && body <= 1<<20 {
		return vYes
	}
	return vNo
}

// memcacheWords are the text protocol's commands (classic and meta).
var memcacheWords = []string{"get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend",
	"cas", "incr", "decr", "delete", "touch", "mg", "ms", "md", "ma", "mn", "me", "stats", "version",
	"verbosity", "flush_all", "quit"}

// memcacheText tests for a memcached text command: a command word
// followed by a space or the end of the line.
func memcacheText(b []byte) verdict {
	i := bytes.IndexAny(b[:min(len(b), 12)], " \r")
	if i < 0 {
		if len(b) >= 12 {
			return vNo
		}
		for _, w := range memcacheWords {
			if strings.HasPrefix(w, string(b)) {
				return vMaybe
			}
		}
		return vNo
	}
	for _, w := range memcacheWords {
		if string(b[:i]) != w {
			continue
		}
		switch {
		case b[i] == ' ':
			return vYes
		case i+1 == len(b):
			return vMaybe
		case b[i+1] == '\n':
			return vYes
		}
	}
	return vNo
}

// mysqlGreeting tests a server's first bytes for a MySQL or MariaDB
// greeting: a packet of sequence id 0, protocol version 10, and a
// printable server version.
func mysqlGreeting(b []byte) verdict {
	var x [8]byte
	copy(x[:], b)
	n := int(x[0]) | int(x[1])<<8 | int(x[2])<<16
	switch {
	case len(b) >= 3 && (n < 30 || n > 1024), len(b) >= 4 && x[3] != 0, len(b) >= 5 && x[4] != 10:
		return vNo
	}
	for _, c := range b[min(len(b), 5):min(len(b), 8)] {
		if c < 0x20 || c > 0x7e {
			return vNo
		}
	}
	if len(b) < 8 {
		return vMaybe
	}
	return vYes
}
