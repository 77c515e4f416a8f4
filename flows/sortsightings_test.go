package flows

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// TestSortSightings holds sortSightings to the order slices.SortFunc gave
// before it (stable for the few sightings sorted by insertion): by First,
// then sniffer, ties kept in their order.
func TestSortSightings(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name     string
		n        int
		spread   int64 // distinct First values
		sniffers int
	}{
		{"empty", 0, 1, 1},
		{"one", 1, 1, 1},
		{"three sniffers, sorted or not", 3, 4, 3},
		{"ties on First and sniffer", 6, 2, 2},
		{"the most by insertion", maxInsertionSort, 5, 4},
		{"past insertion, SortFunc", maxInsertionSort + 5, 1 << 40, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				s := make([]Sighting, tc.n)
				for i := range s {
					s[i] = Sighting{First: r.Int64N(tc.spread), Point: Point{Sniffer: pcapio.SnifferID(r.IntN(tc.sniffers)), Interface: uint16(i)}}
				}
				want := slices.Clone(s)
				if tc.n <= maxInsertionSort {
					slices.SortStableFunc(want, cmpSighting)
				} else {
					slices.SortFunc(want, cmpSighting)
				}
				sortSightings(s)
				if !slices.Equal(s, want) {
					t.Fatalf("sortSightings = %v, want %v", s, want)
				}
			}
		})
	}
}

func TestSortSightingsAllocs(t *testing.T) {
	s := []Sighting{{First: 3}, {First: 1}, {First: 2, Point: Point{Sniffer: 1}}, {First: 2}}
	if n := testing.AllocsPerRun(100, func() { sortSightings(s) }); n != 0 {
		t.Errorf("sortSightings allocates %v times", n)
	}
}
