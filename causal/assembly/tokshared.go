package assembly

import "slices"

// sharedIDFs returns the summed IDF of the tokens of a that appear in
// pool[0] (own) and of those that appear in any of pool (all), each token
// counted once in each sum (every slice sorted). tokFeature summed them
// in two walks of a, the second searching pool[0] again and looking up
// the IDF of the tokens found there again; one walk adds the same values
// in the same order to each sum, so the sums are the same bit for bit
// (TestSharedIDF2).
func sharedIDFs(idf map[uint64]float64, a []uint64, pool *[3][]uint64) (own, all float64) {
	for _, t := range a {
		if _, ok := slices.BinarySearch(pool[0], t); ok {
			v := idf[t]
			own += v
			all += v
			continue
		}
		for _, p := range pool[1:] {
			if _, ok := slices.BinarySearch(p, t); ok {
				all += idf[t]
				break
			}
		}
	}
	return own, all
}
