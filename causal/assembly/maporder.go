package assembly

import (
	"cmp"
	"strings"
)

// Floating sums over maps. Go walks a map in a different order at every
// range, and a sum of doubles that are not integers depends on the order
// of its terms in its last bits; the engine's soft assignments make its
// weights fractional. Every sum the engine makes over a map's values
// walks the keys sorted (sizeLink.decide and unseenWeight, dcFloor's net
// pairs, handed.addBack, fifoOrder.weight, replicaSamples' order, tokAssoc.fitKappas), so the
// same input gives the same bits on every run (TestMapOrderSums).

// add records one link of difference delta and weight w.
func (s *sizeLink) add(delta int64, w float64) {
	s.link[delta] += w
	s.n += w
	s.kappa = 0
}

// cmpReplicaKey orders replica keys by caller, then label.
func cmpReplicaKey(a, b replicaKey) int {
	if c := strings.Compare(a.caller, b.caller); c != 0 {
		return c
	}
	return cmp.Compare(a.label, b.label)
}
