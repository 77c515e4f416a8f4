package tls

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// The AEAD algorithms of the supported suites.
type aeadKind uint8

const (
	aesGCM aeadKind = iota + 1
	chacha
)

// suite is what decryption needs to know of a cipher suite.
type suite struct {
	aead   aeadKind
	keyLen int
	ivLen  int // TLS 1.2: the implicit part of the nonce (4 for GCM, 12 for ChaCha20)
	sha384 bool
	tls13  bool
}

// suites are the cipher suites the decoder can decrypt.
var suites = map[uint16]*suite{
	0x1301: {aesGCM, 16, 12, false, true}, // TLS_AES_128_GCM_SHA256
	0x1302: {aesGCM, 32, 12, true, true},  // TLS_AES_256_GCM_SHA384
	0x1303: {chacha, 32, 12, false, true}, // TLS_CHACHA20_POLY1305_SHA256

	0xC02F: {aesGCM, 16, 4, false, false},  // TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
	0xC02B: {aesGCM, 16, 4, false, false},  // TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	0x009C: {aesGCM, 16, 4, false, false},  // TLS_RSA_WITH_AES_128_GCM_SHA256
	0x009E: {aesGCM, 16, 4, false, false},  // TLS_DHE_RSA_WITH_AES_128_GCM_SHA256
	0xC030: {aesGCM, 32, 4, true, false},   // TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
	0xC02C: {aesGCM, 32, 4, true, false},   // TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
	0x009D: {aesGCM, 32, 4, true, false},   // TLS_RSA_WITH_AES_256_GCM_SHA384
	0x009F: {aesGCM, 32, 4, true, false},   // TLS_DHE_RSA_WITH_AES_256_GCM_SHA384
	0xCCA8: {chacha, 32, 12, false, false}, // TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
	0xCCA9: {chacha, 32, 12, false, false}, // TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
	0xCCAA: {chacha, 32, 12, false, false}, // TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256
}

func (s *suite) hash() func() hash.Hash {
	if s.sha384 {
		return sha512.New384
	}
	return sha256.New
}

func (s *suite) hashLen() int {
	if s.sha384 {
		return 48
	}
	return 32
}

// newAEAD makes the suite's AEAD with key.
func (s *suite) newAEAD(key []byte) (cipher.AEAD, error) {
	if s.aead == chacha {
		return chacha20poly1305.New(key)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// expandLabel is TLS 1.3's HKDF-Expand-Label (RFC 8446 section 7.1).
func expandLabel(h func() hash.Hash, secret []byte, label string, context []byte, n int) []byte {
	info := make([]byte, 0, 4+6+len(label)+len(context))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(6+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic("tls: HKDF-Expand-Label of a bad length: " + err.Error()) // lengths here are the suites' own
	}
	return out
}

// keys are one direction's traffic keys: an AEAD and its nonce's
// implicit part.
type keys struct {
	aead cipher.AEAD
	iv   [12]byte
	ivN  int
}

// keys13 derives the traffic keys of a TLS 1.3 traffic secret.
func keys13(s *suite, secret []byte) (*keys, error) {
	aead, err := s.newAEAD(expandLabel(s.hash(), secret, "key", nil, s.keyLen))
	if err != nil {
		return nil, err
	}
	k := &keys{aead: aead, ivN: 12}
	copy(k.iv[:], expandLabel(s.hash(), secret, "iv", nil, 12))
	return k, nil
}

// nextSecret is TLS 1.3's next traffic secret after a KeyUpdate.
func nextSecret(s *suite, secret []byte) []byte {
	return expandLabel(s.hash(), secret, "traffic upd", nil, s.hashLen())
}

// prf12 is the TLS 1.2 PRF (RFC 5246 section 5): P_hash(secret, label + seed).
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	ls := append([]byte(label), seed...)
	out := make([]byte, 0, n+64)
	mac := hmac.New(h, secret)
	mac.Write(ls)
	a := mac.Sum(nil)
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	return out[:n]
}

// keys12 derives the client's and the server's keys of a TLS 1.2
// connection from its master secret (RFC 5246 section 6.3).
func keys12(s *suite, master []byte, clientRandom, serverRandom [32]byte) (client, server *keys, err error) {
	seed := append(serverRandom[:], clientRandom[:]...)
	kb := prf12(s.hash(), master, "key expansion", seed, 2*s.keyLen+2*s.ivLen)
	ck, sk := kb[:s.keyLen], kb[s.keyLen:2*s.keyLen]
	civ, siv := kb[2*s.keyLen:2*s.keyLen+s.ivLen], kb[2*s.keyLen+s.ivLen:]
	if client, err = keysOf(s, ck, civ); err != nil {
		return nil, nil, err
	}
	server, err = keysOf(s, sk, siv)
	return client, server, err
}

func keysOf(s *suite, key, iv []byte) (*keys, error) {
	aead, err := s.newAEAD(key)
	if err != nil {
		return nil, err
	}
	k := &keys{aead: aead, ivN: len(iv)}
	copy(k.iv[:], iv)
	return k, nil
}
