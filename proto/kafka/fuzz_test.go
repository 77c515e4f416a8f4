package kafka

import (
	"testing"

	. "github.com/wirepath/wirepath/proto/internal/dectest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// FuzzDecoder feeds scripted connections (see dectest.Steps) and checks
// that keys pair, that the accounting balances, and that feeding the same
// bytes one at a time gives the same Units.
func FuzzDecoder(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "flows/testdata/*.pcap*")
	// Produce v7 and v9 and their responses.
	f.Add(Script(C(produce7(1, 1, "a")+produce9(2, -1, "b")), S(resp(2, "")+resp(1, ""))))
	// acks=0, a flexible ApiVersions.
	f.Add(Script(C(produce7(3, 0, "c")+frame(reqHeader2(18, 3, 4)+cstr("x")+cstr("1")+uv(0))), S(resp(4, i16(0)))))
	// SASL v0 and raw tokens.
	f.Add(Script(C(frame(reqHeader(17, 0, 5)+str("PLAIN"))), S(resp(5, i16(0))), C(frame("tok")), S(frame(""))))
	// Gaps.
	f.Add(Script(C(produce7(6, 1, "d")), G(1, 3), S(resp(6, "")), G(0, 5), C(produce7(7, 1, "e"))))
	f.Fuzz(func(t *testing.T, script []byte) {
		steps := Steps(script)
		d := NewDecoder(Config{MaxPending: 8})
		units := Run(d, steps, nil)
		Check(t, units, false)
		st := d.Stats()
		if err := st.Check(); err != nil {
			t.Fatal(err)
		}
		if u2 := Run(NewDecoder(Config{MaxPending: 8}), steps, Bytewise); !Same(units, u2) {
			t.Fatalf("bytewise feeding differs:\n%s\nwhole:\n%s", Lines(u2), Lines(units))
		}
	})
}
