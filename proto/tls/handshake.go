package tls

import (
	"golang.org/x/crypto/cryptobyte"
)

// Handshake message types (RFC 8446 section 4, RFC 5246 section 7.4).
const (
	hsHelloRequest       = 0
	hsClientHello        = 1
	hsServerHello        = 2
	hsNewSessionTicket   = 4
	hsEncryptedExts      = 8
	hsFinished           = 20
	hsKeyUpdate          = 24
	hsHeaderLen          = 4
	maxHelloLen          = 64 << 10 // a ClientHello or ServerHello longer than this is not kept
	extServerName        = 0
	extALPN              = 16
	extSupportedVersions = 43
	extEarlyData         = 42
)

// helloRetryRandom is the random of a HelloRetryRequest (RFC 8446 section
// 4.1.3).
var helloRetryRandom = [32]byte{
	0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
	0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
}

// hsReader reassembles the handshake messages of one direction from the
// records (plaintext or decrypted) that carry them. It keeps the bodies
// of hellos and EncryptedExtensions only; other messages are skipped,
// their type reported.
type hsReader struct {
	hdr  [hsHeaderLen]byte
	nhdr int
	typ  byte
	need int    // body bytes still to come
	keep bool   // the body is kept in buf
	buf  []byte // the body so far
}

// feed reads handshake bytes and calls fn at the end of each message with
// its type and, for hellos, its body.
func (h *hsReader) feed(b []byte, fn func(typ byte, body []byte)) {
	for len(b) > 0 {
		if h.nhdr < hsHeaderLen {
			n := copy(h.hdr[h.nhdr:], b)
			h.nhdr += n
			b = b[n:]
			if h.nhdr < hsHeaderLen {
				return
			}
			h.typ = h.hdr[0]
			h.need = int(h.hdr[1])<<16 | int(h.hdr[2])<<8 | int(h.hdr[3])
			h.keep = (h.typ == hsClientHello || h.typ == hsServerHello || h.typ == hsEncryptedExts) && h.need <= maxHelloLen
			h.buf = h.buf[:0]
		}
		n := min(h.need, len(b))
		if h.keep {
			h.buf = append(h.buf, b[:n]...)
		}
		h.need -= n
		b = b[n:]
		if h.need == 0 {
			h.nhdr = 0
			var body []byte
			if h.keep {
				body = h.buf
			}
			fn(h.typ, body)
		}
	}
}

// reset forgets a partial message (after a loss).
func (h *hsReader) reset() { h.nhdr, h.need, h.buf = 0, 0, h.buf[:0] }

// hello is what a ClientHello or ServerHello says.
type hello struct {
	version  uint16 // legacy_version, or the supported_versions choice (ServerHello)
	random   [32]byte
	session  []byte
	suites   []uint16 // offered (ClientHello)
	suite    uint16   // chosen (ServerHello)
	sni      string
	alpn     []string
	versions []uint16 // supported_versions (ClientHello)
	early    bool     // early_data offered
}

// parseClientHello parses a ClientHello body (RFC 8446 section 4.1.2).
func parseClientHello(body []byte) (*hello, bool) {
	s := cryptobyte.String(body)
	h := &hello{}
	var random, session, suites, comp, exts cryptobyte.String
	if !s.ReadUint16(&h.version) || !s.ReadBytes((*[]byte)(&random), 32) ||
		!s.ReadUint8LengthPrefixed(&session) || !s.ReadUint16LengthPrefixed(&suites) ||
		!s.ReadUint8LengthPrefixed(&comp) {
		return nil, false
	}
	copy(h.random[:], random)
	h.session = append([]byte(nil), session...)
	for !suites.Empty() {
		var id uint16
		if !suites.ReadUint16(&id) {
			return nil, false
		}
		h.suites = append(h.suites, id)
	}
	if s.Empty() {
		return h, true // no extensions
	}
	if !s.ReadUint16LengthPrefixed(&exts) {
		return nil, false
	}
	return h, readExtensions(exts, h, true)
}

// parseServerHello parses a ServerHello body.
func parseServerHello(body []byte) (*hello, bool) {
	s := cryptobyte.String(body)
	h := &hello{}
	var random, session, exts cryptobyte.String
	var comp uint8
	if !s.ReadUint16(&h.version) || !s.ReadBytes((*[]byte)(&random), 32) ||
		!s.ReadUint8LengthPrefixed(&session) || !s.ReadUint16(&h.suite) || !s.ReadUint8(&comp) {
		return nil, false
	}
	copy(h.random[:], random)
	h.session = append([]byte(nil), session...)
	if s.Empty() {
		return h, true
	}
	if !s.ReadUint16LengthPrefixed(&exts) {
		return nil, false
	}
	return h, readExtensions(exts, h, false)
}

// parseEncryptedExtensions parses TLS 1.3's EncryptedExtensions, where
// the server's ALPN choice is.
func parseEncryptedExtensions(body []byte) (*hello, bool) {
	s := cryptobyte.String(body)
	var exts cryptobyte.String
	h := &hello{}
	if !s.ReadUint16LengthPrefixed(&exts) || !s.Empty() {
		return nil, false
	}
	return h, readExtensions(exts, h, false)
}

// readExtensions reads the extensions the decoder uses.
func readExtensions(exts cryptobyte.String, h *hello, client bool) bool {
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return false
		}
		var ok bool
		switch typ {
		case extServerName:
			ok = !client || readSNI(data, h)
		case extALPN:
			ok = readALPN(data, h)
		case extSupportedVersions:
			ok = readVersions(data, h, client)
		case extEarlyData:
			h.early, ok = true, true
		default:
			ok = true
		}
		if !ok {
			return false
		}
	}
	return true
}

func readSNI(data cryptobyte.String, h *hello) bool {
	var list cryptobyte.String
	if !data.ReadUint16LengthPrefixed(&list) {
		return false
	}
	for !list.Empty() {
		var typ uint8
		var name cryptobyte.String
		if !list.ReadUint8(&typ) || !list.ReadUint16LengthPrefixed(&name) {
			return false
		}
		if typ == 0 && h.sni == "" {
			h.sni = string(name)
		}
	}
	return true
}

func readALPN(data cryptobyte.String, h *hello) bool {
	var list cryptobyte.String
	if !data.ReadUint16LengthPrefixed(&list) {
		return false
	}
	for !list.Empty() {
		var p cryptobyte.String
		if !list.ReadUint8LengthPrefixed(&p) {
			return false
		}
		h.alpn = append(h.alpn, string(p))
	}
	return true
}

func readVersions(data cryptobyte.String, h *hello, client bool) bool {
	if !client {
		return data.ReadUint16(&h.version)
	}
	var list cryptobyte.String
	if !data.ReadUint8LengthPrefixed(&list) {
		return false
	}
	for !list.Empty() {
		var v uint16
		if !list.ReadUint16(&v) {
			return false
		}
		h.versions = append(h.versions, v)
	}
	return true
}
