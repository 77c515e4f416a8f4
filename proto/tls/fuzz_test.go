package tls

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// A fuzz script is a config byte (bit 0: decrypt with the key log of
// the seed sessions), then operations: an op byte (bit 0: the server's
// direction, bit 1: a gap rather than bytes), a 2-byte length, and for
// bytes that many bytes.
const (
	opServer   = 1
	opGap      = 2
	cfgKeyLog  = 1
	maxOpBytes = 1<<16 - 1
)

// script encodes a recorded connection, with the bytes [gapFrom,
// gapFrom+gapN) of gapDir replaced by a gap.
func script(cfg byte, events []grpctest.Event, gapDir proto.Dir, gapFrom, gapN int) []byte {
	out := []byte{cfg}
	op := func(code byte, b []byte, n int) {
		for n > maxOpBytes {
			out = append(out, code, 0xff, 0xff)
			if code&opGap == 0 {
				out = append(out, b[:maxOpBytes]...)
				b = b[maxOpBytes:]
			}
			n -= maxOpBytes
		}
		out = append(out, code, byte(n>>8), byte(n))
		out = append(out, b...)
	}
	var off [2]int
	for _, e := range events {
		b, o := e.Data, off[e.Dir]
		off[e.Dir] += len(b)
		code := byte(e.Dir)
		if gapN == 0 || e.Dir != gapDir || o+len(b) <= gapFrom || o >= gapFrom+gapN {
			op(code, b, len(b))
			continue
		}
		if o < gapFrom {
			op(code, b[:gapFrom-o], gapFrom-o)
		}
		if o <= gapFrom {
			op(code|opGap, nil, gapN)
		}
		if end := o + len(b); end > gapFrom+gapN {
			op(code, b[gapFrom+gapN-o:], end-gapFrom-gapN)
		}
	}
	return out
}

// runScript runs a fuzz script, feeding bytes in pieces of at most chunk
// bytes (0: whole), and checks the accounting, the Units and the bounds
// on the way.
func runScript(t *testing.T, kl *KeyLog, in []byte, chunk int) result {
	k := &sink{t: t}
	cfg := Config{NewInner: func(string) Inner { return k }}
	if len(in) > 0 && in[0]&cfgKeyLog != 0 {
		cfg.KeyLog = kl
	}
	d := New(cfg)
	var off [2]int64
	var units []proto.Unit
	for b := in[min(1, len(in)):]; len(b) >= 3; {
		code, n := b[0], int(binary.BigEndian.Uint16(b[1:]))
		b = b[3:]
		dir := proto.Dir(code & opServer)
		if code&opGap != 0 {
			d.Gap(dir, off[dir], int64(n))
			off[dir] += int64(n)
		} else {
			data := b[:min(n, len(b))]
			b = b[len(data):]
			for len(data) > 0 {
				m := len(data)
				if chunk > 0 {
					m = min(m, chunk)
				}
				d.Feed(dir, off[dir], data[:m])
				off[dir] += int64(m)
				data = data[m:]
			}
		}
		units = checkUnits(t, d, units, off)
	}
	d.Close()
	units = checkUnits(t, d, units, off)
	return result{units, d.Stats(), d.Info(), k}
}

// checkUnits drains d and checks its new Units, accounting and bounds.
func checkUnits(t *testing.T, d *Decoder, units []proto.Unit, off [2]int64) []proto.Unit {
	n := len(units)
	var u proto.Unit
	for d.Next(&u) {
		units = append(units, keep(u))
	}
	for _, u := range units[n:] {
		if u.Dir > proto.FromServer || u.Start < 0 || u.Start >= u.End || u.End > off[u.Dir] ||
			u.Bytes <= 0 || u.Bytes > u.End-u.Start || u.Kind != proto.KindControl && u.Kind != proto.KindData {
			t.Fatalf("bad unit %s(fed %v)", format([]proto.Unit{u}), off)
		}
	}
	if err := d.Stats().Check(); err != nil {
		t.Fatal(err)
	}
	for i := range d.dirs {
		s := &d.dirs[i]
		if len(s.buf) > maxRecord || len(s.scan) > resyncWindow || len(s.hold) > holdMax ||
			len(s.hs.buf) > maxHelloLen || len(s.rmap) > maxMap+64 {
			t.Fatalf("bounds: buf %d scan %d hold %d hs %d map %d", len(s.buf), len(s.scan), len(s.hold), len(s.hs.buf), len(s.rmap))
		}
	}
	return units
}

// FuzzDecoder checks that any input keeps the accounting balanced, the
// Units well-formed and within what was fed, the buffers bounded, the
// plaintext handed on at contiguous offsets, and the result (Units,
// counters, plaintext) the same whether bytes come whole or one at a time.
func FuzzDecoder(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "proto/tls/testdata/*.conn")
	cert, pool := testCert(f)
	client := &tls.Config{RootCAs: pool, ServerName: serverName, NextProtos: []string{"h2"}}
	// Small sessions, so that an execution (twice, once byte by byte)
	// stays fast: the records' content matters, not their size.
	s13, log13, _ := echo(f, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}, client, 10, 300, 20)
	client12 := client.Clone()
	client12.MaxVersion = tls.VersionTLS12
	s12, log12, _ := echo(f, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"},
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}, client12, 10, 300, 20)
	kl := readKeyLog(f, append(log13, log12...))
	srv13 := recordStarts(s13, proto.FromServer)
	// TLS 1.3 decrypted: hellos, handshake to application keys, inner feeding.
	f.Add(script(cfgKeyLog, s13, 0, 0, 0))
	// TLS 1.3 without keys: the position heuristics, the held-back alert.
	f.Add(script(0, s13, 0, 0, 0))
	// TLS 1.2 ChaCha20 decrypted: ChangeCipherSpec switching, the PRF keys.
	f.Add(script(cfgKeyLog, s12, 0, 0, 0))
	// A gap inside a server record: lostRecord, the sequence number kept.
	f.Add(script(cfgKeyLog, s13, 1, int(srv13[len(srv13)-3])+50, 100))
	// A gap across server records: loseFraming, resync, the trial of sequence numbers.
	f.Add(script(cfgKeyLog, s13, 1, int(srv13[len(srv13)-4])+50, int(srv13[len(srv13)-2]-srv13[len(srv13)-4])))
	// A gap inside the ClientHello: detect cannot decide, reject.
	f.Add(script(cfgKeyLog, s13, 0, 3, 10))
	// Not TLS: HTTP/1.1.
	f.Add(script(0, []grpctest.Event{{Dir: 0, Data: []byte("GET / HTTP/1.1\r\n\r\n")}}, 0, 0, 0))
	// Garbage after a valid hello: an impossible record header, resync.
	bad := append([]grpctest.Event(nil), s12[:2]...)
	bad = append(bad, grpctest.Event{Dir: 0, Data: bytes.Repeat([]byte{0x99}, 40)})
	f.Add(script(cfgKeyLog, append(bad, s12[2:]...), 0, 0, 0))

	f.Fuzz(func(t *testing.T, in []byte) {
		whole := runScript(t, kl, in, 0)
		bytewise := runScript(t, kl, in, 1)
		if !reflect.DeepEqual(whole.units, bytewise.units) {
			t.Fatalf("whole:\n%s\nbyte by byte:\n%s", format(whole.units), format(bytewise.units))
		}
		if whole.stats != bytewise.stats || whole.info != bytewise.info {
			t.Fatalf("whole %+v %+v\nbyte by byte %+v %+v", whole.stats, whole.info, bytewise.stats, bytewise.info)
		}
		for d := range 2 {
			if !bytes.Equal(whole.sink.buf[d].Bytes(), bytewise.sink.buf[d].Bytes()) {
				t.Fatalf("%s plaintext differs", proto.Dir(d))
			}
		}
	})
}
