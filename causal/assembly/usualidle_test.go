package assembly

import (
	"maps"
	"slices"
	"testing"
)

// TestDropBackgroundKinds covers the usual-call fill's kinds
// (usualidle.go): a kind with calls sent while no request was open is
// left out of the forcing, the others kept with their penalties.
func TestDropBackgroundKinds(t *testing.T) {
	cases := []struct {
		name  string
		kinds []int32
		alone map[int32]float64
		want  []int32
	}{
		{"no call alone", []int32{3, 7}, nil, []int32{3, 7}},
		{"one kind with background", []int32{3, 7}, map[int32]float64{7: 11}, []int32{3}},
		{"a kind not forced alone", []int32{3}, map[int32]float64{9: 2}, []int32{3}},
		{"every kind with background", []int32{3, 7}, map[int32]float64{3: 1, 7: 4}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			force := map[int32]map[int32]float64{}
			for _, k := range tc.kinds {
				force[k] = map[int32]float64{1: usualPenalty}
			}
			dropBackgroundKinds(force, tc.alone)
			got := slices.Sorted(maps.Keys(force))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("kinds forced %v, want %v", got, tc.want)
			}
			for k, f := range force {
				if f[1] != usualPenalty {
					t.Errorf("kind %d: penalty %v, want %v", k, f[1], usualPenalty)
				}
			}
		})
	}
}
