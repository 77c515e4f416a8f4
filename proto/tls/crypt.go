package tls

import (
	"encoding/binary"

	"github.com/wirepath/wirepath/proto"
)

// Trials after a loss: how many sequence numbers past the expected one,
// and how many of the next keys, are tried before giving up.
const (
	maxTrial     = 64
	maxNextTrial = 8
)

// decrypted decrypts an encrypted record and acts on its content. It
// reports false when the record cannot be decrypted: the connection has
// then fallen back to records.
func (d *Decoder) decrypted(s *dirState, payload []byte, start, end int64) bool {
	plain, ctype, ok := d.open(s, payload)
	if !ok {
		if d.earlyData(s) {
			d.stats.EarlyDataSkipped++
			d.data(s, start, end)
			return true
		}
		why := BadSecrets
		if s.opened > 0 || d.dirs[s.dir.Other()].opened > 0 || s.lostSeq {
			why = LostSync
		}
		d.fallback(why)
		return false
	}
	s.opened++
	s.sentEncrypted = true // for opaque, should decryption stop later
	d.stats.RecordsDecrypted++
	switch ctype {
	case ctApplicationData:
		d.toInner(s, plain, start, end)
	case ctHandshake:
		s.hs.feed(plain, func(typ byte, body []byte) { d.handshake(s, typ, body) })
		d.control(s, start, end, ctHandshake)
	case ctAlert, ctChangeCipherSpec, ctHeartbeat:
		d.control(s, start, end, ctype)
	default:
		d.stats.MalformedRecords++
		d.control(s, start, end, ctHandshake)
	}
	if s.switchNext && s.cur != nil {
		d.switchKeys(s)
	}
	return true
}

// earlyData reports whether a client record that failed to decrypt is
// 0-RTT data: TLS 1.3, offered, before any handshake record decrypted.
func (d *Decoder) earlyData(s *dirState) bool {
	return d.suite != nil && d.suite.tls13 && s.dir == proto.FromClient && !s.appKeys && s.opened == 0 &&
		d.client != nil && d.client.early
}

// switchKeys moves TLS 1.3's keys on: from handshake to application keys
// at Finished, to the next generation at KeyUpdate.
func (d *Decoder) switchKeys(s *dirState) {
	s.switchNext = false
	s.cur, s.seq, s.appKeys = s.nxt, 0, true
	s.secret = nextSecret(d.suite, s.secret)
	var err error
	if s.nxt, err = keys13(d.suite, s.secret); err != nil {
		s.nxt = nil
	}
}

// open decrypts a record, trying the expected sequence number, then
// (after a loss) the following ones and the next keys. It returns the
// plaintext and its content type.
func (d *Decoder) open(s *dirState, payload []byte) ([]byte, byte, bool) {
	if d.suite.tls13 {
		return d.open13(s, payload)
	}
	return d.open12(s, payload)
}

func (d *Decoder) open13(s *dirState, payload []byte) ([]byte, byte, bool) {
	tries := 1
	if s.lostSeq {
		tries = maxTrial
	}
	for i := range tries {
		if p, t, ok := d.try13(s, s.cur, s.seq+uint64(i), payload); ok {
			d.recovered(s, i > 0)
			s.seq += uint64(i) + 1
			return p, t, true
		}
	}
	// A lost Finished or KeyUpdate: the next keys.
	next := 1
	if s.lostSeq {
		next = maxNextTrial
	}
	for i := range next {
		if s.nxt == nil {
			break
		}
		if p, t, ok := d.try13(s, s.nxt, uint64(i), payload); ok {
			d.recovered(s, true)
			d.switchKeys(s)
			s.seq = uint64(i) + 1
			return p, t, true
		}
	}
	return nil, 0, false
}

// recovered notes a decryption that needed a trial.
func (d *Decoder) recovered(s *dirState, trial bool) {
	if trial || s.lostSeq {
		d.stats.SeqRecovered++
	}
	s.lostSeq = false
}

// try13 decrypts a TLS 1.3 record with k and sequence number seq.
func (d *Decoder) try13(s *dirState, k *keys, seq uint64, payload []byte) ([]byte, byte, bool) {
	if k == nil || len(payload) < k.aead.Overhead()+1 {
		return nil, 0, false
	}
	nonce := s.nonce[:12]
	copy(nonce, k.iv[:12])
	xorSeq(nonce, seq)
	plain, err := k.aead.Open(s.plain[:0], nonce, payload, s.hdr[:])
	if err != nil {
		return nil, 0, false
	}
	s.plain = plain
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 {
		return nil, 0, false // no content type: not a record of these keys
	}
	return plain[:i], plain[i], true
}

func xorSeq(nonce []byte, seq uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	for i := range b {
		nonce[len(nonce)-8+i] ^= b[i]
	}
}

func (d *Decoder) open12(s *dirState, payload []byte) ([]byte, byte, bool) {
	k := s.cur
	typ := s.rh.typ
	if p, ok := d.try12(s, k, s.seq, payload); ok {
		d.recovered(s, false)
		s.seq++
		return p, typ, true
	}
	if !s.lostSeq {
		return nil, 0, false
	}
	if d.suite.aead == aesGCM && len(payload) >= 8 {
		// Most implementations send the sequence number as the
		// explicit nonce.
		if seq := binary.BigEndian.Uint64(payload); seq > s.seq && seq-s.seq < 1<<20 {
			if p, ok := d.try12(s, k, seq, payload); ok {
				d.recovered(s, true)
				s.seq = seq + 1
				return p, typ, true
			}
		}
	}
	for i := 1; i < maxTrial; i++ {
		if p, ok := d.try12(s, k, s.seq+uint64(i), payload); ok {
			d.recovered(s, true)
			s.seq += uint64(i) + 1
			return p, typ, true
		}
	}
	return nil, 0, false
}

// try12 decrypts a TLS 1.2 AEAD record with sequence number seq.
func (d *Decoder) try12(s *dirState, k *keys, seq uint64, payload []byte) ([]byte, bool) {
	if k == nil {
		return nil, false
	}
	nonce := s.nonce[:12]
	ct := payload
	if d.suite.aead == aesGCM {
		if len(payload) < 8+k.aead.Overhead() {
			return nil, false
		}
		copy(nonce, k.iv[:4])
		copy(nonce[4:], payload[:8])
		ct = payload[8:]
	} else {
		if len(payload) < k.aead.Overhead() {
			return nil, false
		}
		copy(nonce, k.iv[:12])
		xorSeq(nonce, seq)
	}
	aad := s.aad[:13]
	binary.BigEndian.PutUint64(aad, seq)
	aad[8] = s.rh.typ
	binary.BigEndian.PutUint16(aad[9:], s.rh.version)
	binary.BigEndian.PutUint16(aad[11:], uint16(len(ct)-k.aead.Overhead()))
	plain, err := k.aead.Open(s.plain[:0], nonce, ct, aad)
	if err != nil {
		return nil, false
	}
	s.plain = plain
	return plain, true
}

// plainLen estimates the plaintext a lost record of n bytes carried.
func (d *Decoder) plainLen(n int) int64 {
	switch {
	case d.suite == nil:
		return int64(n)
	case d.suite.tls13:
		return int64(n - 16 - 1)
	case d.suite.aead == aesGCM:
		return int64(n - 8 - 16)
	}
	return int64(n - 16)
}
