package tls

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/wirepath/wirepath/proto"
)

// lowSink is an Inner that takes plaintext, reports nothing and needs no
// offset before the last it was given.
type lowSink struct{ off [2]int64 }

func (k *lowSink) Feed(dir proto.Dir, off int64, b []byte) { k.off[dir] = off + int64(len(b)) }
func (k *lowSink) Gap(dir proto.Dir, off, n int64)         { k.off[dir] = off + n }
func (k *lowSink) Close()                                  {}
func (k *lowSink) Next(*proto.Unit) bool                   { return false }
func (k *lowSink) Low(dir proto.Dir) int64                 { return k.off[dir] }

// TestSteadyStateAllocs checks that once a connection is past its
// handshake an application record costs no allocation, decrypted
// (TLS 1.2 AES-128-GCM, sealed here with the connection's own keys) or
// not.
func TestSteadyStateAllocs(t *testing.T) {
	events := readFixture(t, "testdata/tls12-echo.conn")
	kb, err := os.ReadFile("testdata/tls12-echo.keylog")
	must(t, err)
	for _, decrypt := range []bool{false, true} {
		var kl *KeyLog
		if decrypt {
			kl = readKeyLog(t, kb)
		}
		d := New(Config{KeyLog: kl, NewInner: func(string) Inner { return &lowSink{} }})
		var offs [2]int64
		var u proto.Unit
		for _, e := range events {
			if e.Dir == proto.FromClient && e.Data[0] == ctAlert {
				break // the close_notify: the records below come before it
			}
			d.Feed(e.Dir, offs[e.Dir], e.Data)
			offs[e.Dir] += int64(len(e.Data))
		}
		off := offs[proto.FromClient]
		s := &d.dirs[proto.FromClient]
		if decrypt != (s.cur != nil) {
			t.Fatalf("decrypt %v: keys %v", decrypt, s.cur != nil)
		}
		seq := s.seq
		record := func() []byte {
			plain := bytes.Repeat([]byte{'x'}, 300)
			payload := make([]byte, 8, 8+len(plain)+16)
			binary.BigEndian.PutUint64(payload, seq)
			if decrypt {
				var nonce [12]byte
				copy(nonce[:], s.cur.iv[:4])
				copy(nonce[4:], payload)
				aad := binary.BigEndian.AppendUint64(nil, seq)
				aad = append(aad, ctApplicationData, 3, 3, byte(len(plain)>>8), byte(len(plain)))
				payload = s.cur.aead.Seal(payload, nonce[:], plain, aad)
			} else {
				payload = append(payload, make([]byte, len(plain)+16)...)
			}
			seq++
			return append([]byte{ctApplicationData, 3, 3, byte(len(payload) >> 8), byte(len(payload))}, payload...)
		}
		var batches [][]byte
		for range 150 {
			var b []byte
			for range 10 {
				b = append(b, record()...)
			}
			batches = append(batches, b)
		}
		feed := func(b []byte) {
			d.Feed(proto.FromClient, off, b)
			off += int64(len(b))
			for d.Next(&u) {
			}
		}
		for _, b := range batches[:100] { // past the record map's first trims
			feed(b)
		}
		i := 100
		allocs := testing.AllocsPerRun(40, func() {
			feed(batches[i])
			i++
		})
		if allocs != 0 {
			t.Errorf("decrypt %v: %.1f allocations per 10 records, want 0", decrypt, allocs)
		}
		if st := d.Stats(); decrypt && st.RecordsDecrypted < 1400 || st.Fallbacks != 0 {
			t.Fatalf("decrypt %v: %+v", decrypt, st)
		}
	}
}
