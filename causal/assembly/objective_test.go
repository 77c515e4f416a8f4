package assembly

import "math"

// objective is the log likelihood of an assignment of node n's calls
// (asg: a call's request, -1 none) under model m, computed request by
// request as the search scores it: the reference the search is checked
// against. It is -Inf when the assignment breaks a hard constraint.
func (r *run) objective(n int32, m *nodeModel, asg func(c int32) int32) float64 {
	span := r.openSpan(n)
	byParent := map[int32][]int32{}
	total := 0.0
	for _, c := range r.childrenOf[n] {
		p := asg(c)
		if p < 0 {
			if r.exact[c] >= 0 {
				return math.Inf(-1)
			}
			total += m.logBackground(r.calls[c].kind)
			continue
		}
		if r.exact[c] >= 0 && r.exact[c] != p {
			return math.Inf(-1)
		}
		lo, hi := r.window(p, span)
		if t := r.sendOf(c); t < lo || t > hi || !r.fits(c, p) {
			return math.Inf(-1)
		}
		byParent[p] = append(byParent[p], c)
	}
	s := &search{r: r, m: m}
	for _, p := range r.parentsOf[n] {
		total += r.replay(s, p, byParent[p])
	}
	return total
}
