package assembly

import (
	"math"
	"os"
)

// fdKey is the context of a request's first delay: the request's kind and
// the kind of its first call.
type fdKey struct{ pk, k int32 }

// fdLink is one candidate pair of a first call and a request.
type fdLink struct {
	c, q int32
	b    int // bin of the delay from q's arrival to c
	w    float64
}

var fdStrict = os.Getenv("WIREPATH_FDSTRICT") != ""

const (
	fdRounds   = 6 // EM rounds
	fdSinkhorn = 4 // balancing rounds per EM round
	fdMinW     = 0.01
)

// softFirst computes, for the calls that are the first of their request
// in the assignment byParent, the posterior of each candidate request
// whose first call each could be: soft EM of the first delays alone, each
// call's posterior over the requests open and yet to make their first
// call proportional to the delay's density, balanced (Sinkhorn) so that
// no request takes more than one first call in all. It returns the
// links with their weights, grouped by call.
func (r *run) softFirst(n int32, byParent map[int32][]int32, include func(int32) bool, asg func(int32) int32) []fdLink {
	first := map[int32]int64{} // each request's first call's send time
	isFirst := map[int32]bool{}
	for p, ks := range byParent {
		if len(ks) > 0 {
			first[p] = r.sendOf(ks[0])
			if r.exact[ks[0]] < 0 {
				isFirst[ks[0]] = true
			}
		}
	}
	var links []fdLink
	r.sweep(n, func(c int32, cands []int32) {
		if !isFirst[c] {
			return
		}
		t := r.sendOf(c)
		for _, q := range cands {
			if q != asg(c) && (!include(q) || r.exact[c] >= 0) {
				continue
			}
			if f, ok := first[q]; ok && q != asg(c) && f < t && fdStrict {
				continue
			}
			links = append(links, fdLink{c: c, q: q, b: gapBin(t - r.arrOf(q)), w: 1})
		}
	})
	if len(links) == 0 {
		return nil
	}
	key := func(l *fdLink) fdKey { return fdKey{r.calls[l.q].kind, r.calls[l.c].kind} }
	dens := map[fdKey]*[nGapBins]float64{}
	fitDens := func() {
		hs := map[fdKey]*hist{}
		for i := range links {
			l := &links[i]
			k := key(l)
			if hs[k] == nil {
				hs[k] = &hist{}
			}
			hs[k].add(l.b, l.w)
		}
		for k, h := range hs {
			m := mixMass(h, &priorMass)
			dens[k] = logDensity(&m, 1)
		}
	}
	// the first density: the assignment's own first delays
	for i := range links {
		if links[i].q != asg(links[i].c) {
			links[i].w = 0
		}
	}
	fitDens()
	colSum := map[int32]float64{}
	for range fdRounds {
		for i := range links {
			l := &links[i]
			l.w = math.Exp(dens[key(l)][l.b])
		}
		for range fdSinkhorn {
			normaliseRows(links)
			clear(colSum)
			for _, l := range links {
				colSum[l.q] += l.w
			}
			for i := range links {
				if s := colSum[links[i].q]; s > 1 {
					links[i].w /= s
				}
			}
		}
		normaliseRows(links)
		fitDens()
	}
	return links
}

// normaliseRows scales each call's weights (links grouped by call) to sum
// to one.
func normaliseRows(links []fdLink) {
	for i := 0; i < len(links); {
		j := i
		s := 0.0
		for ; j < len(links) && links[j].c == links[i].c; j++ {
			s += links[j].w
		}
		for k := i; k < j; k++ {
			if s > 0 {
				links[k].w /= s
			}
		}
		i = j
	}
}

