package http2

import (
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
