package tls

import (
	"bytes"
	"crypto/tls"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
)

// decodeCut is decode with the bytes [from, from+n) of dir's stream
// replaced by a Gap.
func decodeCut(t *testing.T, kl *KeyLog, events []grpctest.Event, dir proto.Dir, from, n int64) result {
	t.Helper()
	k := &sink{t: t}
	d := New(Config{KeyLog: kl, NewInner: func(string) Inner { return k }})
	var off [2]int64
	var units []proto.Unit
	var u proto.Unit
	gapped := false
	for _, e := range events {
		b, o := e.Data, off[e.Dir]
		off[e.Dir] += int64(len(b))
		switch {
		case e.Dir != dir || o+int64(len(b)) <= from || o >= from+n:
			d.Feed(e.Dir, o, b)
		default:
			if o < from {
				d.Feed(e.Dir, o, b[:from-o])
			}
			if !gapped {
				d.Gap(dir, from, n)
				gapped = true
			}
			if end := o + int64(len(b)); end > from+n {
				d.Feed(e.Dir, from+n, b[from+n-o:])
			}
		}
		for d.Next(&u) {
			units = append(units, keep(u))
		}
	}
	d.Close()
	for d.Next(&u) {
		units = append(units, keep(u))
	}
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	return result{units, st, d.Info(), k}
}

// recordStarts returns the offsets of dir's records.
func recordStarts(events []grpctest.Event, dir proto.Dir) []int64 {
	var all []byte
	for _, e := range events {
		if e.Dir == dir {
			all = append(all, e.Data...)
		}
	}
	var starts []int64
	for off := 0; off+recHeaderLen <= len(all); off += recHeaderLen + parseRecHeader(all[off:]).length {
		starts = append(starts, int64(off))
	}
	return starts
}

// oneHole reports whether got is want with one contiguous range taken out.
func oneHole(got, want []byte) bool {
	p := 0
	for p < len(got) && p < len(want) && got[p] == want[p] {
		p++
	}
	return len(got) <= len(want) && bytes.HasSuffix(want[p:], got[p:])
}

// TestLoss cuts the server's side of Go TLS connections: inside one
// record (that record's plaintext is lost, decryption goes on), and
// across a record boundary (the framing and the sequence number are
// found again).
func TestLoss(t *testing.T) {
	cert, pool := testCert(t)
	for _, tt := range []struct {
		name    string
		version uint16
		suite   uint16
	}{
		{"tls13", tls.VersionTLS13, 0},
		{"tls12 gcm", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		{"tls12 chacha20", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
	} {
		t.Run(tt.name, func(t *testing.T) {
			server := &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tt.version}
			if tt.suite != 0 {
				server.CipherSuites = []uint16{tt.suite}
			}
			events, keylog, wrote := echo(t, server, &tls.Config{RootCAs: pool, ServerName: serverName, MaxVersion: tt.version})
			kl := readKeyLog(t, keylog)
			starts := recordStarts(events, proto.FromServer)
			// The reply of 40000 bytes spans records; take one of its
			// records, followed by another of them, near its end (a
			// session ticket or alert among the last records, which the
			// timing of a busy machine can move, is too small to cut).
			k := len(starts) - 4
			for k > 0 && (starts[k+1]-starts[k] < 1000 || starts[k+2]-starts[k+1] < 1000) {
				k--
			}
			for _, c := range []struct {
				name      string
				from, n   int64
				recovered bool
			}{
				{"inside a record", starts[k] + 100, 500, false},
				{"across a boundary", starts[k] + 100, starts[k+1] - starts[k], true},
			} {
				r := decodeCut(t, kl, events, proto.FromServer, c.from, c.n)
				if r.info.Decrypt != Decrypting {
					t.Fatalf("%s: %s %+v", c.name, r.info.Decrypt, r.stats)
				}
				if !bytes.Equal(r.sink.buf[proto.FromClient].Bytes(), wrote[proto.FromClient]) ||
					!oneHole(r.sink.buf[proto.FromServer].Bytes(), wrote[proto.FromServer]) {
					t.Errorf("%s: plaintext is not what was written, less one hole", c.name)
				}
				if lost := len(wrote[proto.FromServer]) - r.sink.buf[proto.FromServer].Len(); lost == 0 || r.sink.gaps[proto.FromServer] == 0 {
					t.Errorf("%s: %d bytes lost, %d gapped", c.name, lost, r.sink.gaps[proto.FromServer])
				}
				if (r.stats.SeqRecovered > 0) != c.recovered || (r.stats.Resyncs > 0) != c.recovered {
					t.Errorf("%s: %+v", c.name, r.stats)
				}
			}
			// Losing the ServerHello loses the keys.
			r := decodeCut(t, kl, events, proto.FromServer, 10, 20)
			if r.info.Decrypt == Decrypting || count(r.units, proto.FromServer, proto.KindData) == 0 {
				t.Errorf("ServerHello lost: %s\n%s", r.info.Decrypt, format(r.units))
			}
		})
	}
}

// TestFallbackMidway: a record that does not decrypt after others did (a
// corrupted byte) makes the connection fall back to records from there
// on: the records after it are data, not handshake.
func TestFallbackMidway(t *testing.T) {
	cert, pool := testCert(t)
	events, keylog, _ := echo(t, &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: pool, ServerName: serverName})
	starts := recordStarts(events, proto.FromServer)
	k := len(starts) - 4
	var off int64
	var corrupted []grpctest.Event
	for _, e := range events {
		b := append([]byte(nil), e.Data...)
		if e.Dir == proto.FromServer {
			if at := starts[k] + 20 - off; at >= 0 && at < int64(len(b)) {
				b[at] ^= 0xff
			}
			off += int64(len(b))
		}
		corrupted = append(corrupted, grpctest.Event{Dir: e.Dir, Data: b})
	}
	r := decode(t, readKeyLog(t, keylog), corrupted, 0)
	if r.info.Decrypt != LostSync || r.stats.Fallbacks != 1 {
		t.Fatalf("%s %+v", r.info.Decrypt, r.stats)
	}
	if got, want := count(r.units, proto.FromServer, proto.KindData), len(starts)-k; got != want {
		t.Errorf("%d server data Units after the fallback, want %d\n%s", got, want, format(r.units))
	}
}
