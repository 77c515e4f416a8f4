package assembly

// The local search's FIFO evidence, held. A move is weighed by the FIFO
// evidence of the calls it can change (local.affected) before and after
// it; most moves are refused, and the next move tried weighs many of the
// same calls under the same assignment again. So each call's evidence
// under the current assignment is held (by its position in local.order)
// until a move changes it: a move of requests ps changes the evidence of
// the calls those requests can hold (local.inv), its moved calls among
// them, and no other (a call's evidence reads its request's calls and
// its candidates'); the calls of the requests before and after the move
// are let go too, for a call whose request is not among its candidates. The sums are the same additions in the same order,
// so no decision changes.

// fifoHold is the held evidence: by position, its value and whether it
// is held.
type fifoHold struct {
	val  []float64
	held []bool
	// tried holds the values fifoTried computed for the move being tried
	tried []float64
}

// fifoHeld is local.fifo, from the held values where there are.
func (ls *local) fifoHeld(at []int) float64 {
	h := &ls.hold
	if h.val == nil {
		h.val, h.held = make([]float64, len(ls.order)), make([]bool, len(ls.order))
	}
	total := 0.0
	for _, i := range at {
		if !h.held[i] {
			h.val[i], h.held[i] = ls.fifoOne(i), true
		}
		total += h.val[i]
	}
	return total
}

// fifoTried is local.fifo for the assignment of a move being tried,
// noting each call's value for fifoMoved.
func (ls *local) fifoTried(at []int) float64 {
	h := &ls.hold
	h.tried = h.tried[:0]
	total := 0.0
	for _, i := range at {
		f := ls.fifoOne(i)
		h.tried = append(h.tried, f)
		total += f
	}
	return total
}

// fifoMoved updates the held values for a move made: the requests ps
// changed from calls old to calls ks, and calls moved; at (with
// fifoTried's values) are the positions whose evidence it weighed.
func (ls *local) fifoMoved(ps, moved []int32, at []int, ks, old [][]int32) {
	h := &ls.hold
	if h.val == nil {
		return
	}
	r := ls.r
	for _, p := range ps {
		if p >= 0 {
			for _, i := range ls.inv[r.parentPos[p]] {
				h.held[i] = false
			}
		}
	}
	for _, c := range moved {
		h.held[ls.orderAt[r.childPos[c]]] = false
	}
	for _, cs := range [2][][]int32{ks, old} {
		for _, l := range cs {
			for _, c := range l {
				h.held[ls.orderAt[r.childPos[c]]] = false
			}
		}
	}
	for k, i := range at {
		h.val[i], h.held[i] = h.tried[k], true
	}
}
