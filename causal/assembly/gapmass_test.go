package assembly

import (
	"testing"
	"time"
)

// directDensity is gapDensity's density of keys from anchor, mixed level
// by level without the held mixtures (gapmass.go) or the cache.
func directDensity(m *nodeModel, anchor int, keys *[4]gKey) [nGapBins]float64 {
	mass := priorMass
	var node [nGapBins]float64
	for i := len(keys) - 1; i >= 0; i-- {
		mass = mixMass(m.gaps[anchor][keys[i]], &mass)
		if i == len(keys)-1 {
			node = mass
		}
	}
	robustMix(&mass, &node)
	if m.tick > 0 {
		mass = tickBlur(&mass, m.tick)
	}
	return *logDensity(&mass, m.res)
}

// TestUpperMass checks that the delay densities built from the held
// mixtures of the upper levels are those mixed level by level, bit for
// bit, for every context of the fitted models, and again after their
// delays changed (densities computed after a change must not read the
// mixtures held from before).
func TestUpperMass(t *testing.T) {
	r := inferredRun(t, multitierTrace(t, 10*time.Second))
	checked := 0
	for _, m := range r.models {
		if m == nil {
			continue
		}
		for round := range 2 {
			if round == 1 {
				// the delays change: one more sample in every context
				for k := range m.gaps[anchorLast] {
					if k.lvl == 0 {
						keys := gapKeysOf(k)
						m.addGap(anchorLast, keys[:], 40, 1)
					}
				}
			}
			// the densities go (a context not met yet), the held
			// mixtures are the model's to drop
			clear(m.gcache[anchorLast])
			clear(m.gcache[anchorArrival])
			for anchor := range m.gaps {
				for k := range m.gaps[anchor] {
					if k.lvl != 0 {
						continue
					}
					keys := gapKeysOf(k)
					want := directDensity(m, anchor, &keys)
					if got := m.gapDensity(anchor, &keys); *got != want {
						t.Errorf("round %d, anchor %d, context %+v: densities differ", round, anchor, k)
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no context checked")
	}
}
