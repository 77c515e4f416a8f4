package flows

import (
	"strconv"
	"testing"
)

// TestTSTextAgain holds tsText.again to strconv on times equal to the
// remembered one, within its millisecond, across a millisecond or a digit
// count, small and negative.
func TestTSTextAgain(t *testing.T) {
	cases := []struct{ first, v int64 }{
		{1704067200000754065, 1704067200000754065},
		{1704067200000754065, 1704067200000865181},
		{1704067200000754065, 1704067200000000000},
		{1704067200000754065, 1704067200000999999},
		{1704067200000754065, 1704067200001000000},
		{1704067200000754065, 1704067199999999999},
		{999999, 1000000},
		{1000000, 1999999},
		{5, 7},
		{-1500000, -1400000},
		{1500000, 123},
	}
	for _, c := range cases {
		var ts tsText
		b := ts.append([]byte("x\t"), c.first, nil)
		b = append(b, ':')
		n := len(b)
		b = ts.again(b, c.v)
		if got, want := string(b[n:]), strconv.FormatInt(c.v, 10); got != want {
			t.Errorf("again(%d) after %d = %q, want %q", c.v, c.first, got, want)
		}
	}
}
