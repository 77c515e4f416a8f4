// Package smooth smooths histograms with a Gaussian kernel: the one
// Gaussian kernel of the tree. The nesting engine smooths its scoreboard
// with it (Project 5 section 5.1.1.2) and the linking engine its learnt
// delay histograms.
//
// This package must not know about traces or engines.
package smooth

import "math"

// Gaussian returns a Gaussian kernel of standard deviation sigma (in
// bins), truncated at cut standard deviations and normalised to sum 1:
// 2r+1 weights with r = ⌈cut·sigma⌉, the centre at index r. sigma must be
// positive.
func Gaussian(sigma, cut float64) []float64 {
	r := int(math.Ceil(cut * sigma))
	k := make([]float64, 2*r+1)
	sum := 0.0
	for i := range k {
		x := float64(i - r)
		k[i] = math.Exp(-x * x / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// Convolve writes src convolved with kern (centre at len(kern)/2) to dst,
// which has src's length and must not share its memory with src. Bins
// near the edges lose the mass that falls outside. Each output bin sums
// its terms in increasing order of the source bin.
func Convolve(dst, src, kern []float64) {
	r := len(kern) / 2
	for i := range dst {
		s := 0.0
		for j, kv := range kern {
			if x := i + j - r; x >= 0 && x < len(src) {
				s += kv * src[x]
			}
		}
		dst[i] = s
	}
}
