package assembly

// A request's confidence, slot by slot.
//
// A request is exactly right when each of its calls has exactly its own
// children: every child it was given is its own (the links), and no call
// given elsewhere is (the keeps: pruned.go, members.go). Multiplying the
// links' probabilities by the keeps, as if independent, counts most of
// the doubt twice. Where two calls of a kind could go to either of two
// requests, the one given to A with probability p lists B with 1 − p,
// and the one given to B lists A with 1 − p: A's link is right and B's
// call not A's in the same hypotheses, so A is right with probability p,
// not p·p. Under a joint assignment the calls a request's own calls of a
// kind would lose and the calls of that kind it would gain from
// elsewhere are the two ends of the same exchanges.
//
// So the product runs over slots, a call and a kind of child: a slot's
// probability is the smaller of its links' product and its keep, the
// largest joint probability those two marginals allow (the Fréchet
// bound), which is the exact one when every exchange is a swap between
// slots of the same kind; a slot the assignment left empty has its keep
// alone. Slots are still multiplied as if independent. Nothing here is
// fitted: the links' and keeps' probabilities are each member's
// (members.go), and the request's confidence is still the members' mean.
// On the generated in-flight traces (timing only) and the unseen event
// loop at 16 in flight the requests were stated 0.44 and 0.38 for 0.64
// and 0.68 right, now 0.51 and 0.44; the assignment is untouched
// (docs/accuracy.md, "A request's doubt counted once").

// slotKeep is, for a call and a kind of child, the probability that no
// call of the kind given elsewhere belongs to it.
type slotKeep struct {
	kind int32
	keep float64
}

// slotKeeps holds, per call (as a parent), the keeps of its slots with
// any doubt; a slot it does not list keeps 1. Indexed by call, as the
// nodes' posteriors, run concurrently, each write their own requests'.
type slotKeeps [][]slotKeep

// lose multiplies the keep of call q's slot of kind k by 1 − p.
func (s slotKeeps) lose(q, k int32, p float64) {
	ks := s[q]
	for i := range ks {
		if ks[i].kind == k {
			ks[i].keep *= 1 - p
			return
		}
	}
	s[q] = append(ks, slotKeep{k, 1 - p})
}

// of returns the keep of call q's slot of kind k.
func (s slotKeeps) of(q, k int32) float64 {
	for _, x := range s[q] {
		if x.kind == k {
			return x.keep
		}
	}
	return 1
}

// clone returns a copy of s whose slices are its own.
func (s slotKeeps) clone() slotKeeps {
	c := make(slotKeeps, len(s))
	for q, ks := range s {
		if len(ks) > 0 {
			c[q] = append([]slotKeep(nil), ks...)
		}
	}
	return c
}

// linkProb returns member m's probability of call c's link to its
// parent: the member's where posterior set it, else the link's
// confidence (an exact link's 1).
func (r *run) linkProb(m int, c int32) float64 {
	if r.posted[c] {
		return float64(r.mconf[m][c])
	}
	return float64(r.conf[c])
}

// slotsProb returns member m's probability that call c has exactly its
// own children, kids being those it was given (its children in the
// request; a child whose parent is no longer c, cut at maxDepth, does
// not count): over c's slots, the smaller of each kind's links' product
// and its keep, and the keep of the kinds it was given none of.
func (b *builder) slotsProb(m int, c int32, kids []int32) float64 {
	r := b.r
	keeps := b.keep[m]
	p := 1.0
	for i, k := range kids {
		if r.parent[k] != c || b.kindSeen(c, kids[:i], r.calls[k].kind) {
			continue
		}
		kind := r.calls[k].kind
		links := 1.0
		for _, d := range kids[i:] {
			if r.parent[d] == c && r.calls[d].kind == kind {
				links *= r.linkProb(m, d)
			}
		}
		p *= min(links, keeps.of(c, kind))
	}
	for _, s := range keeps[c] {
		if !b.kindSeen(c, kids, s.kind) {
			p *= s.keep
		}
	}
	return p
}

// kindSeen reports whether any of kids still under c is of kind k.
func (b *builder) kindSeen(c int32, kids []int32, k int32) bool {
	for _, d := range kids {
		if b.r.parent[d] == c && b.r.calls[d].kind == k {
			return true
		}
	}
	return false
}
