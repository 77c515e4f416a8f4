package whatif

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// ParseLink splits "A->B" (names in the signature grammar) into A and B.
func ParseLink(s string) (a, b string, err error) {
	n, err := causal.ParseSignature(s)
	if err != nil || len(n.Children) > 0 {
		return "", "", fmt.Errorf("bad link %q: want FROM->TO", s)
	}
	return n.From, n.To, nil
}

// ParseBandwidth parses a bandwidth such as "100Mbit/s", "1Gbps", "12.5MB/s"
// or "1e9" (bits per second) and returns bits per second. Prefixes are
// decimal (k = 1000); "B" means bytes, "bit" or "b" bits.
func ParseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	i := numberEnd(t)
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad bandwidth %q: want a positive number and a unit such as 100Mbit/s or 10MB/s", s)
	}
	mult, ok := unitBits(t[i:])
	if !ok {
		return 0, fmt.Errorf("bad bandwidth %q: unknown unit (use bit/s, kbit/s, Mbit/s, Gbit/s, B/s, kB/s, MB/s, GB/s or bps, Mbps, Gbps)", s)
	}
	return v * mult, nil
}

// numberEnd returns the length of the decimal number (digits, a point, an
// exponent with its sign) at the start of t.
func numberEnd(t string) int {
	digit := func(i int) bool { return i < len(t) && t[i] >= '0' && t[i] <= '9' }
	i := 0
	for i < len(t) {
		switch c := t[i]; {
		case digit(i) || c == '.':
		case c == 'e' && i > 0 && (digit(i+1) || i+1 < len(t) && (t[i+1] == '-' || t[i+1] == '+')):
		case (c == '-' || c == '+') && i > 0 && t[i-1] == 'e':
		default:
			return i
		}
		i++
	}
	return i
}

// unitBits returns the bits per second of one unit such as "Mbit/s",
// "MB/s" or "Mbps" (the empty unit is bit/s), and false for an unknown one.
func unitBits(unit string) (float64, bool) {
	unit = strings.TrimSpace(unit)
	unit = strings.TrimSuffix(unit, "/s")
	unit = strings.TrimSuffix(unit, "ps")
	mult := 1.0
	if len(unit) > 0 {
		switch unit[0] {
		case 'k', 'K':
			mult, unit = 1e3, unit[1:]
		case 'M':
			mult, unit = 1e6, unit[1:]
		case 'G':
			mult, unit = 1e9, unit[1:]
		case 'T':
			mult, unit = 1e12, unit[1:]
		}
	}
	switch unit {
	case "", "b", "bit", "bits":
		return mult, true
	case "B", "byte", "bytes":
		return mult * 8, true
	}
	return 0, false
}

// FormatBandwidth formats bits per second with a readable unit.
func FormatBandwidth(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'g', 4, 64) + " Gbit/s"
	case bps >= 1e6:
		return strconv.FormatFloat(bps/1e6, 'g', 4, 64) + " Mbit/s"
	case bps >= 1e3:
		return strconv.FormatFloat(bps/1e3, 'g', 4, 64) + " kbit/s"
	}
	return strconv.FormatFloat(bps, 'g', 4, 64) + " bit/s"
}
