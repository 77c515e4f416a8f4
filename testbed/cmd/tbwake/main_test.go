package main

import (
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want stats
	}{
		{"empty", nil, stats{}},
		{"one", []float64{7}, stats{7, 7, 7}},
		{"ten unsorted", []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, stats{5.5, 5, 9}},
	} {
		if got := summarise(tc.xs); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestParseGaps(t *testing.T) {
	got, err := parseGaps("0, 100us,1ms")
	want := []time.Duration{0, 100 * time.Microsecond, time.Millisecond}
	if err != nil || len(got) != len(want) {
		t.Fatalf("parseGaps: %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("gap %d: %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"x", "-1ms", ""} {
		if _, err := parseGaps(bad); err == nil {
			t.Errorf("parseGaps(%q): no error", bad)
		}
	}
}
