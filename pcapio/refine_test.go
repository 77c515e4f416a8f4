package pcapio

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"
)

// TestRefineOnlyWithUnknownOffsets: Options.Refine is called once when a
// sniffer's offset is still unknown after the estimate (testdata/nat: the
// sniffers on either side of the translation share no wire key), and not
// at all when every offset is known (testdata/captures' client and
// server), whose merge is the same either way.
func TestRefineOnlyWithUnknownOffsets(t *testing.T) {
	nat := func(n string) string { return filepath.Join("../testdata/nat", n) }
	for _, tc := range []struct {
		name  string
		paths []string
		calls int
	}{
		{"every offset known", []string{capPath("client.pcap"), capPath("server.pcapng")}, 0},
		{"offsets unknown across NAT", []string{nat("c1.pcapng"), nat("inside.pcap"), nat("outside.pcap"), nat("s1.pcap")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			refine := func(ahead *Merger) ([]Offset, error) {
				calls++
				return slices.Clone(ahead.Offsets()), nil
			}
			with := mergeKeys(t, tc.paths, Options{Refine: refine})
			if calls != tc.calls {
				t.Errorf("Refine called %d times, want %d", calls, tc.calls)
			}
			if without := mergeKeys(t, tc.paths, Options{}); !slices.Equal(with, without) {
				t.Errorf("merge with Refine differs from the merge without it")
			}
		})
	}
}

// mergeKeys merges paths and returns every packet's wire key and time.
func mergeKeys(t *testing.T, paths []string, o Options) [][2]int64 {
	t.Helper()
	m, err := Open(paths, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out [][2]int64
	for {
		p, err := m.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]int64{int64(p.WireKey), p.TS()})
	}
}
