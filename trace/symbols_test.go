package trace

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSymbolsAgainstMap interns a mix of short, repeated, long and odd
// strings and checks every answer against a plain map (the slow oracle).
func TestSymbolsAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s Symbols
	want := map[string]Sym{"": 0}
	var order []string
	for i := 0; i < 200000; i++ {
		var name string
		switch r := rng.IntN(100); {
		case r < 60:
			name = fmt.Sprintf("10.%d.%d.%d:%d", rng.IntN(4), rng.IntN(256), rng.IntN(256), rng.IntN(65536))
		case r < 90:
			name = fmt.Sprint("x", rng.IntN(5000))
		case r < 92 && i%500 == 0:
			name = strings.Repeat("long", 1+rng.IntN(200000)) // up to 800 KB: own chunks
		case r < 93:
			name = "\x00\t\"é"
		default:
			name = fmt.Sprint("node", rng.IntN(50))
		}
		var got Sym
		if i%2 == 0 {
			got = s.Intern(name)
		} else {
			got = s.InternBytes([]byte(name))
		}
		id, ok := want[name]
		if !ok {
			id = Sym(len(order) + 1)
			want[name] = id
			order = append(order, name)
		}
		if got != id {
			t.Fatalf("intern #%d %.20q = %d, want %d", i, name, got, id)
		}
	}
	if s.Len() != len(order)+1 {
		t.Fatalf("Len %d, want %d", s.Len(), len(order)+1)
	}
	for i, name := range order {
		if got := s.String(Sym(i + 1)); got != name {
			t.Fatalf("String(%d) = %.20q, want %.20q", i+1, got, name)
		}
		if id, ok := s.Lookup(name); !ok || id != Sym(i+1) {
			t.Fatalf("Lookup(%.20q) = %d, %v", name, id, ok)
		}
	}
	if _, ok := s.Lookup("never interned"); ok {
		t.Error("Lookup found a string never interned")
	}
	if s.String(0) != "" || s.String(Sym(s.Len())) != "" {
		t.Error("String of 0 or an id out of range is not empty")
	}
}

func TestSymbolsZeroValue(t *testing.T) {
	var s Symbols
	if s.Len() != 1 || s.String(0) != "" || s.String(1) != "" {
		t.Fatal("zero value is not an empty table")
	}
	if id, ok := s.Lookup(""); !ok || id != 0 {
		t.Fatal(`Lookup("") is not 0`)
	}
	if _, ok := s.Lookup("a"); ok {
		t.Fatal("empty table finds a string")
	}
	if s.Intern("") != 0 || s.InternBytes(nil) != 0 || s.Len() != 1 {
		t.Fatal(`interning "" adds a symbol`)
	}
}

// TestSymbolsStringsStayValid checks that strings handed out keep their
// value while the table grows.
func TestSymbolsStringsStayValid(t *testing.T) {
	var s Symbols
	var got []string
	for i := 0; i < 100000; i++ {
		got = append(got, s.String(s.Intern(fmt.Sprint("name-", i))))
	}
	for i, g := range got {
		if g != fmt.Sprint("name-", i) {
			t.Fatalf("string %d changed to %q", i, g)
		}
	}
}

func TestInternNoAllocs(t *testing.T) {
	var s Symbols
	b := []byte("10.0.0.1:80")
	s.InternBytes(b)
	if n := testing.AllocsPerRun(100, func() { s.InternBytes(b) }); n != 0 {
		t.Errorf("interning a known string allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Lookup("10.0.0.1:80") }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

func BenchmarkIntern(b *testing.B) {
	names := make([][]byte, 4096)
	for i := range names {
		names[i] = fmt.Appendf(nil, "10.0.%d.%d:%d", i/256, i%256, 40000+i)
	}
	var s Symbols
	for _, n := range names {
		s.InternBytes(n)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(names[0])))
	for i := 0; b.Loop(); i++ {
		if s.InternBytes(names[i&4095]) != Sym(1+i&4095) {
			b.Fatal("wrong symbol")
		}
	}
	if s.Len() != len(names)+1 {
		b.Fatalf("%d symbols", s.Len())
	}
}
