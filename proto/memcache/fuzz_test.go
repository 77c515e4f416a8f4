package memcache

import (
	"testing"

	. "github.com/wirepath/wirepath/proto/internal/dectest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// FuzzDecoder feeds scripted connections (see dectest.Steps) and checks
// that Units stay ordered and paired, that the accounting balances, and
// that feeding the same bytes one at a time gives the same Units.
func FuzzDecoder(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "flows/testdata/*.pcap*")
	// Text: storage, multi-key get, noreply, stats.
	f.Add(Script(C("set a 0 0 1\r\nx\r\nget a b\r\ndelete a noreply\r\nstats\r\n"), S("STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nSTAT a 1\r\nEND\r\n")))
	// Text: quiet meta commands with opaque and key flags.
	f.Add(Script(C("mg a v q k O1\r\nms b 1 q\r\nz\r\nmn\r\n"), S("VA 1 ka O1\r\nx\r\nNS\r\nMN\r\n")))
	// Binary: quiet get, noop, stat.
	f.Add(Script(C(bin(0x80, 0x09, "k", "", "", 1, 0)+bin(0x80, 0x0a, "", "", "", 2, 0)+bin(0x80, 0x10, "", "", "", 3, 0)),
		S(bin(0x81, 0x0a, "", "", "", 2, 0)+bin(0x81, 0x10, "a", "", "1", 3, 0)+bin(0x81, 0x10, "", "", "", 3, 0))))
	// Gaps inside a block and across lines.
	f.Add(Script(C("set k 0 0 9\r\n0"), G(0, 4), C("5678\r\nget x\r\n"), G(1, 3), S("STORED\r\nEND\r\n")))
	// Garbage.
	f.Add([]byte("\x00\x80\x04\x81\xff\xff\x02\x03"))
	f.Fuzz(func(t *testing.T, script []byte) {
		CheckScript(t, func() *Decoder { return NewDecoder(Config{MaxPending: 8}) },
			func(d *Decoder) error { st := d.Stats(); return st.Check() }, script)
	})
}
