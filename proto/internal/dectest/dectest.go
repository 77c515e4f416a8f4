// Package dectest drives proto decoders in tests: it feeds scripted byte
// streams (whole, or cut at arbitrary points), keeps the Units with their
// Evidence copied, and checks the properties every decoder keeps.
package dectest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	farm "github.com/dgryski/go-farm"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
)

// Step is one event of a connection: bytes of a direction, or a gap.
type Step struct {
	Dir  proto.Dir
	Data []byte
	Gap  int64 // when > 0, a gap of this many bytes instead of Data
}

// C returns a step of client bytes.
func C(s string) Step { return Step{Dir: proto.FromClient, Data: []byte(s)} }

// S returns a step of server bytes.
func S(s string) Step { return Step{Dir: proto.FromServer, Data: []byte(s)} }

// G returns a gap of n bytes in dir.
func G(dir proto.Dir, n int64) Step { return Step{Dir: dir, Gap: n} }

// Run feeds steps to d and closes it. Each step's data is cut into the
// pieces cut returns (nil feeds it whole). The Units come back with their
// Evidence copied.
func Run(d proto.Decoder, steps []Step, cut func(n int) []int) []proto.Unit {
	var all []proto.Unit
	var off [2]int64
	keep := func() {
		var u proto.Unit
		for d.Next(&u) {
			u.Evidence = evidence.Clone(u.Evidence)
			all = append(all, u)
		}
	}
	for _, st := range steps {
		if st.Gap > 0 {
			d.Gap(st.Dir, off[st.Dir], st.Gap)
			off[st.Dir] += st.Gap
			keep()
			continue
		}
		pieces := []int{len(st.Data)}
		if cut != nil {
			pieces = cut(len(st.Data))
		}
		p := 0
		for _, n := range pieces {
			d.Feed(st.Dir, off[st.Dir], st.Data[p:p+n])
			off[st.Dir] += int64(n)
			p += n
			keep()
		}
	}
	d.Close()
	keep()
	return all
}

// Drain takes every Unit d has completed and returns how many there were.
func Drain(d proto.Decoder) int {
	var u proto.Unit
	n := 0
	for d.Next(&u) {
		n++
	}
	return n
}

// Bytewise cuts data into single bytes.
func Bytewise(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 1
	}
	return p
}

// Random returns a cutter that cuts data at random points drawn from seed.
func Random(seed uint64) func(int) []int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(n int) []int {
		var p []int
		for n > 0 {
			k := 1 + r.IntN(min(n, 1+r.IntN(64)))
			p = append(p, k)
			n -= k
		}
		return p
	}
}

// Line describes a Unit in one line for comparisons:
// "client request k1 [0,14) redis GET".
func Line(u proto.Unit) string {
	s := fmt.Sprintf("%s %s k%d [%d,%d)", u.Dir, u.Kind, u.Key, u.Start, u.End)
	if u.Bytes != u.End-u.Start {
		s += fmt.Sprintf(" b%d", u.Bytes)
	}
	if u.Label != "" {
		s += " " + u.Label
	}
	if u.Status != 0 {
		s += fmt.Sprintf(" s%d", u.Status)
	}
	return s
}

// Lines describes Units one a line.
func Lines(units []proto.Unit) string {
	var b strings.Builder
	for _, u := range units {
		b.WriteString(Line(u))
		b.WriteByte('\n')
	}
	return b.String()
}

// Same compares two runs' Units, Evidence included.
func Same(a, b []proto.Unit) bool {
	return slices.EqualFunc(a, b, func(x, y proto.Unit) bool {
		ex, ey := x.Evidence, y.Evidence
		x.Evidence, y.Evidence = nil, nil
		if x != y || (ex == nil) != (ey == nil) {
			return false
		}
		return ex == nil || (slices.Equal(ex.Tokens, ey.Tokens) && slices.Equal(ex.IDs, ey.IDs))
	})
}

// HasTokens reports whether u's Evidence holds the tokens of all words.
func HasTokens(u proto.Unit, words ...string) bool {
	if u.Evidence == nil {
		return len(words) == 0
	}
	for _, w := range words {
		if _, ok := slices.BinarySearch(u.Evidence.Tokens, farm.Fingerprint64([]byte(w))); !ok {
			return false
		}
	}
	return true
}

// Check asserts what every decoder's Units keep: Start < End and Bytes
// within them; in a serial protocol (serial true) a direction's Units in
// order and disjoint; every response with a Key after its request's, and
// no Key used again while its request waits.
func Check(t testing.TB, units []proto.Unit, serial bool) {
	t.Helper()
	var last [2]int64
	open := map[uint64]bool{} // requests waiting for their response
	for _, u := range units {
		if u.Start >= u.End || u.Bytes <= 0 || u.Bytes > u.End-u.Start {
			t.Fatalf("bad range: %s", Line(u))
		}
		if serial {
			if u.Start < last[u.Dir] {
				t.Fatalf("overlapping or out of order: %s", Line(u))
			}
			last[u.Dir] = u.End
		}
		if u.Key == 0 {
			continue
		}
		switch u.Kind {
		case proto.KindRequest:
			if open[u.Key] {
				t.Fatalf("key of a waiting request used again: %s", Line(u))
			}
			open[u.Key] = true
		case proto.KindResponse:
			if !open[u.Key] {
				t.Fatalf("response without its request, or twice: %s", Line(u))
			}
			delete(open, u.Key)
		default:
			t.Fatalf("a key on a %s", Line(u))
		}
	}
}

// update rewrites golden files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares got with the file testdata/name.golden (rewritten with
// -update).
func Golden(t testing.TB, name, got string) {
	t.Helper()
	clean := []byte(name)
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			clean[i] = '_'
		}
	}
	path := filepath.Join("testdata", string(clean)+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n%s\nwant:\n%s", path, got, want)
	}
}

// Steps turns fuzz input into a connection's events: each control byte c
// is followed, when c&2 is 0, by 1+c>>2 bytes of direction c&1 (fewer at
// the end of b); when c&2 is set it is a gap of 1+(c>>2)&15 bytes of that
// direction, or of 1+c>>6 KiB when c&0x3c is 0x3c.
func Steps(b []byte) []Step {
	var steps []Step
	for len(b) > 0 {
		c := b[0]
		b = b[1:]
		dir := proto.Dir(c & 1)
		if c&2 != 0 {
			n := int64(1 + (c>>2)&15)
			if c&0x3c == 0x3c {
				n = int64(1+c>>6) << 10
			}
			steps = append(steps, G(dir, n))
			continue
		}
		n := min(int(1+c>>2), len(b))
		steps = append(steps, Step{Dir: dir, Data: b[:n]})
		b = b[n:]
	}
	return steps
}

// Script encodes steps as fuzz input for Steps (data steps only, each
// cut into pieces of at most 64 bytes), for seed corpora.
func Script(steps ...Step) []byte {
	var b []byte
	for _, st := range steps {
		if st.Gap > 0 {
			g := min(st.Gap, 16)
			b = append(b, byte(st.Dir)|2|byte(g-1)<<2)
			continue
		}
		for d := st.Data; len(d) > 0; {
			n := min(len(d), 64)
			b = append(b, byte(st.Dir)|byte(n-1)<<2)
			b = append(b, d[:n]...)
			d = d[n:]
		}
	}
	return b
}

// Resumed returns the decoder mk makes, resumed as for a connection seen
// from its middle (proto.Resumer) with the directions in sync, and
// pairing, that the bits of b say.
func Resumed[D proto.Resumer](mk func() D, b byte) D {
	d := mk()
	d.Resume([2]bool{b&1 != 0, b&2 != 0}, b&4 != 0)
	return d
}

// CheckScript is the body the resumable decoders' fuzz targets share:
// script's steps decoded by a decoder from mk fed whole and byte by
// byte, then again resumed as for a connection seen from its middle
// (Resumed, by the script's first byte). Each time the units must pass
// Check, stats must report the decoder's counters balanced, and both
// feedings must give the same units.
func CheckScript[D proto.Resumer](t *testing.T, mk func() D, stats func(D) error, script []byte) {
	steps := Steps(script)
	checkFeeding(t, "", mk, stats, steps)
	if len(script) > 0 {
		checkFeeding(t, "resumed, ", func() D { return Resumed(mk, script[0]) }, stats, steps)
	}
}

// checkFeeding decodes steps whole and byte by byte with decoders from mk.
func checkFeeding[D proto.Decoder](t *testing.T, what string, mk func() D, stats func(D) error, steps []Step) {
	d := mk()
	units := Run(d, steps, nil)
	Check(t, units, true)
	if err := stats(d); err != nil {
		t.Fatal(err)
	}
	if u2 := Run(mk(), steps, Bytewise); !Same(units, u2) {
		t.Fatalf("%sbytewise feeding differs:\n%s\nwhole:\n%s", what, Lines(u2), Lines(units))
	}
}
