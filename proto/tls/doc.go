// Package tls decodes the TLS record layer of one connection into
// proto.Units and, given the connection's secrets in an SSLKEYLOGFILE key
// log, decrypts its application data and hands the plaintext to an inner
// decoder (proto/http2, or the caller's HTTP/1.x framing).
//
// A Decoder is fed the in-order bytes of each direction with their
// stream offsets (Feed), told about lost bytes (Gap) and closed (Close);
// Next pulls the Units decoded so far. It recognises TLS by the client's
// first record (a handshake record starting a ClientHello); a connection
// seen from its middle is not taken for TLS.
//
// What it reports:
//
//   - KindControl: every handshake, change_cipher_spec, alert and
//     heartbeat record ("tls handshake", "tls alert", ...), and the
//     records TLS 1.3 encrypts that are not application data: with keys,
//     by their inner content type; without, the server's records before
//     the client's first encrypted record (its handshake flight), the
//     client's first encrypted record (its Finished), and a last record of
//     19 bytes in a direction (an encrypted alert: close_notify).
//   - KindData: each application-data record whose content the decoder
//     does not decode (no key log, no secrets for the connection, an
//     unsupported suite, or no inner decoder), labelled "tls sni=NAME
//     alpn=PROTO". The caller frames such records as opaque traffic: at
//     direction changes, or one message per record when it knows the
//     inner protocol is request/response. TLS never says more, so no
//     content tokens come with them.
//   - The inner decoder's Units, when the application data is decrypted:
//     their Start and End are moved from offsets in the plaintext stream
//     to the offsets of the records that carried their first and last
//     byte; their Bytes stay the plaintext's.
//
// Decryption: TLS 1.3 (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
// TLS_CHACHA20_POLY1305_SHA256; the HKDF-Expand-Label key schedule from
// the logged traffic secrets, per-record nonces from the sequence number,
// handshake to application keys at Finished, KeyUpdate) and TLS 1.2 with
// the AEAD suites (AES-GCM and ChaCha20-Poly1305, keys from the logged
// master secret through the PRF, switched on at ChangeCipherSpec). Not
// decrypted, and reported as records instead: CBC and other suites,
// TLS 1.1 and older, 0-RTT early data (skipped, counted), and everything
// after a TLS 1.2 renegotiation. A missing or wrong secret is never an
// error: the connection falls back to records, and Info and Stats say why.
//
// Loss: a Gap inside a record whose header was seen loses that record
// only: the sequence number still advances, so decryption goes on, and
// the inner decoder is told of a gap of the record's plaintext size. A
// Gap across a record boundary loses the framing: the decoder looks for a
// plausible record header confirmed by the next one, then finds the
// sequence number again by trying the next 64 (and, for TLS 1.3, the
// next key), or falls back to records.
//
// Bounds: one record (at most 16 KiB + 2 KiB) and one kept handshake
// message (at most 64 KiB) per direction, a 64 KiB resync window, and a
// map from plaintext to record offsets that is trimmed below the oldest
// offset the inner decoder still needs (Low), or to 64 K records.
//
// The Decoder is not safe for concurrent use; a KeyLog may be shared.
package tls
