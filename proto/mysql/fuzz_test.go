package mysql

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
	login := []Step{S(greeting(caps)), C(login(caps)), S(pkt(2, ok))}
	// Handshake, a query and its result set.
	f.Add(Script(append(login, C(pkt(0, "\x03SELECT a FROM t")), S(pkt(1, "\x01")+pkt(2, colDef)+pkt(3, eof)+pkt(4, "\x01x")+pkt(5, eof)))...))
	// Prepare and execute.
	f.Add(Script(append(login, C(pkt(0, "\x16SELECT ?")), S(pkt(1, "\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00")+pkt(2, colDef)+pkt(3, eof)+pkt(4, colDef)+pkt(5, eof)),
		C(pkt(0, "\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\xfd\x00\x03abc")), S(pkt(1, ok)))...))
	// Multiple results, an error, LOCAL INFILE.
	f.Add(Script(append(login, C(pkt(0, "\x03CALL p()")), S(pkt(1, okMore)+pkt(2, ok)), C(pkt(0, "\x03x")), S(pkt(1, "\xff\x01\x00#HY000x")),
		C(pkt(0, "\x03LOAD")), S(pkt(1, "\xfbf")), C(pkt(2, "d")+pkt(3, "")), S(pkt(4, ok)))...))
	// Gaps.
	f.Add(Script(append(login, C(pkt(0, "\x03SELECT 1")[:3]), G(0, 4), C(pkt(0, "\x0e")), G(1, 2), S(pkt(1, ok)))...))
	f.Fuzz(func(t *testing.T, script []byte) {
		steps := Steps(script)
		d := NewDecoder(Config{MaxPending: 8})
		units := Run(d, steps, nil)
		Check(t, units, true)
		st := d.Stats()
		if err := st.Check(); err != nil {
			t.Fatal(err)
		}
		if u2 := Run(NewDecoder(Config{MaxPending: 8}), steps, Bytewise); !Same(units, u2) {
			t.Fatalf("bytewise feeding differs:\n%s\nwhole:\n%s", Lines(u2), Lines(units))
		}
	})
}
