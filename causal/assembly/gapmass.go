package assembly

// A delay density (nodeModel.gapDensity) mixes the context's histogram
// with those of its coarser contexts, level by level from the node's; a
// model builds one for each context the searches meet (thousands at 64
// requests in flight), and the levels above the first are shared by
// every context with the same previous message, next message and reply
// state (level 1). Their mixture is computed once per level-1 context
// and held until the model's delays change (the densities themselves
// are kept after the deconvolution replaces the delays: fit.go): the
// same operations in the same order, so the same densities.

// upperMass is the mixture of a level-1 context's levels (1 to 3 over
// the prior), and of the node's alone (level 3 over the prior).
type upperMass struct {
	mass, node [nGapBins]float64
}

// upper returns the mixture of the levels above keys[0] (gapKeys' order:
// level 0 first, the node last), held by anchor and keys[1].
func (m *nodeModel) upper(anchor int, keys *[4]gKey) *upperMass {
	if m.mcache[anchor] == nil {
		m.mcache[anchor] = make(map[gKey]*upperMass)
	}
	if u := m.mcache[anchor][keys[1]]; u != nil {
		return u
	}
	u := &upperMass{mass: priorMass}
	for i := len(keys) - 1; i >= 1; i-- {
		u.mass = mixMass(m.gaps[anchor][keys[i]], &u.mass)
		if i == len(keys)-1 {
			u.node = u.mass
		}
	}
	m.mcache[anchor][keys[1]] = u
	return u
}

// gapsChanged lets go of the mixtures of anchor's delays, which changed.
func (m *nodeModel) gapsChanged(anchor int) {
	if len(m.mcache[anchor]) > 0 {
		clear(m.mcache[anchor])
	}
}
