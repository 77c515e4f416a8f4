package causal

// WellFormed reports whether p's hops are numbered 0..n-1 with the root
// first and every parent before its children, the order the Aggregator
// writes and every consumer of a pattern's tree relies on.
func (p *Pattern) WellFormed() bool {
	if len(p.Hops) == 0 || p.Hops[0].Parent != nil {
		return false
	}
	for i, h := range p.Hops {
		if h.ID != i {
			return false
		}
		if i > 0 && (h.Parent == nil || *h.Parent < 0 || *h.Parent >= i) {
			return false
		}
	}
	return true
}

// Children returns the children of every hop of p, in hop order (which the
// Aggregator makes the order of mean start). Parents that name no other hop
// of p are ignored.
func (p *Pattern) Children() [][]int {
	kids := make([][]int, len(p.Hops))
	for _, h := range p.Hops {
		if h.Parent != nil && *h.Parent >= 0 && *h.Parent < len(p.Hops) && *h.Parent != h.ID {
			kids[*h.Parent] = append(kids[*h.Parent], h.ID)
		}
	}
	return kids
}
