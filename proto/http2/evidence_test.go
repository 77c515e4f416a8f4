package http2

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestHasUpper checks the eight-bytes-at-a-time test of lowerASCII
// against a byte loop: every byte value at every position of strings of
// up to 19 bytes, on a background of hex digits and of bytes above 0x7f.
func TestHasUpper(t *testing.T) {
	slow := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= 'A' && s[i] <= 'Z' {
				return true
			}
		}
		return false
	}
	for _, bg := range []string{"0", "f", "\xc1", "\xda", "@", "["} {
		for n := 1; n < 20; n++ {
			for pos := range n {
				for c := range 256 {
					b := []byte(strings.Repeat(bg, n))
					b[pos] = byte(c)
					if got, want := hasUpper(string(b)), slow(string(b)); got != want {
						t.Fatalf("hasUpper(%q) = %v, want %v", b, got, want)
					}
				}
			}
		}
	}
	if got := lowerASCII("4BF92f3577b34da6a3ce929d0e0e4736"); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("lowerASCII: %q", got)
	}
}

// TestTraceparentFastPath checks idValue's shortcut for traceparents of
// the usual shape against the general parse it skips: valid values, and
// values a byte away from one (dashes moved or added, spaces and
// non-ASCII bytes at the ends, upper case, other lengths).
func TestTraceparentFastPath(t *testing.T) {
	general := func(value string) string {
		value = strings.TrimSpace(value)
		if _, rest, ok := strings.Cut(value, "-"); ok {
			if id, rest, ok := strings.Cut(rest, "-"); ok && len(id) == 32 && strings.Count(rest, "-") >= 1 {
				return lowerASCII(id)
			}
		}
		return value
	}
	base := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	vals := []string{base, strings.ToUpper(base), " " + base[1:], base[:54] + " ", "\u00a0" + base[2:],
		base[:54] + "\x85", "-" + base[1:], base[:1] + "-" + base[2:], base[:10] + "-" + base[11:],
		base[:2] + "x" + base[3:], base[:35] + "x" + base[36:], base[:52] + "x" + base[53:], base + "-", base[:54]}
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		b := []byte(base)
		for range 1 + r.IntN(3) {
			b[r.IntN(len(b))] = " -aZ\t\x80\xa0"[r.IntN(7)]
		}
		vals = append(vals, string(b))
	}
	for _, v := range vals {
		got, ok := idValue("traceparent", v)
		if want := general(v); !ok || got != want {
			t.Fatalf("idValue(traceparent, %q) = %q, want %q", v, got, want)
		}
	}
}

// TestIDArena checks that the ids an idArena copies keep their text while
// more are copied, chunks fill and long ones are copied alone.
func TestIDArena(t *testing.T) {
	var a idArena
	var want, got []string
	for i := range 1000 {
		v := strings.Repeat(string(rune('a'+i%26)), i%300)
		b := []byte(v) // the caller's bytes, overwritten after the copy
		got = append(got, a.clone(string(b)))
		for j := range b {
			b[j] = '!'
		}
		want = append(want, v)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("id %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestSortCompactSmall checks sortCompactSmall against slices.Sort and
// slices.Compact on short token lists: in order, reversed, with repeats,
// and random ones of every length it takes.
func TestSortCompactSmall(t *testing.T) {
	cases := [][]uint64{
		nil,
		{7},
		{1, 2, 3},
		{3, 2, 1},
		{5, 5, 5},
		{2, 1, 2, 1, 3, 3},
		{^uint64(0), 0, ^uint64(0), 1},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range maxInsertionTokens + 1 {
		for range 50 {
			c := make([]uint64, n)
			for i := range c {
				c[i] = r.Uint64N(8)
			}
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		want := slices.Compact(slices.Sorted(slices.Values(c)))
		got := sortCompactSmall(slices.Clone(c))
		if !slices.Equal(got, want) {
			t.Errorf("sortCompactSmall(%v) = %v, want %v", c, got, want)
		}
	}
}

// TestTraceparentID holds traceparentID's word-at-a-time scan to the
// byte-wise checks it replaced: traceparents of the usual shape with
// every byte of the alphabet below at every place of the id, and random
// ones.
func TestTraceparentID(t *testing.T) {
	slow := func(v string) (string, bool, bool) {
		if len(v) != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' || v[0] == '-' || v[1] == '-' ||
			v[0] <= ' ' || v[0] >= 0x80 || v[54] <= ' ' || v[54] >= 0x80 || strings.IndexByte(v[3:35], '-') >= 0 {
			return "", false, false
		}
		return v[3:35], hasUpper(v[3:35]), true
	}
	base := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	alphabet := []byte{'-', 'A', 'Z', '@', '[', 'a', 'z', 'f', '0', '9', ' ', 0x80, 0xc1, 0xda, 0xff, 0, ',', '.'}
	var cases []string
	for i := range len(base) {
		for _, c := range alphabet {
			b := []byte(base)
			b[i] = c
			cases = append(cases, string(b))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := []byte(base)
		for range 1 + r.IntN(4) {
			b[3+r.IntN(32)] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	cases = append(cases, base[:54], base+"0", "")
	for _, v := range cases {
		id, up, ok := traceparentID(v)
		wid, wup, wok := slow(v)
		if id != wid || up != wup || ok != wok {
			t.Errorf("traceparentID(%q) = %q, %v, %v, want %q, %v, %v", v, id, up, ok, wid, wup, wok)
		}
	}
}
