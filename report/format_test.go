package report

import (
	"math"
	"testing"
)

func TestFormatUS(t *testing.T) {
	for _, c := range []struct {
		us            float64
		plain, signed string
	}{
		{0, "0 µs", "+0 µs"},
		{14, "14 µs", "+14 µs"},
		{-14, "-14 µs", "-14 µs"},
		{0.25, "250 ns", "+250 ns"},
		{-0.25, "-250 ns", "-250 ns"},
		{1900, "1.90 ms", "+1.90 ms"},
		{-2.5e6, "-2.50 s", "-2.50 s"},
		{math.NaN(), "?", "?"},
	} {
		if got := FormatUS(c.us); got != c.plain {
			t.Errorf("FormatUS(%v) = %q, want %q", c.us, got, c.plain)
		}
		if got := fmtSigned(c.us); got != c.signed {
			t.Errorf("fmtSigned(%v) = %q, want %q", c.us, got, c.signed)
		}
	}
}
