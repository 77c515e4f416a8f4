package assembly

// The FIFO evidence of a send held by eligible set. Within one call's
// send with the slots in one order for every hypothesis (slotOrder), the
// FIFO evidence fifoRanks gives hypothesis h's slots is a function of
// which of ord's slots are eligible (made no call of the call's kind) and
// of nothing else of h: tiedRanks, which readyOrder's absence sends to
// crossRank or logFIFO, reads the eligible slots' requests, their
// positions and the model, and every hypothesis has the same request at
// each position. The beam's hypotheses differ in a few calls, so most
// share their eligible set with another: their evidence is computed once
// a send (TestFIFOHeld checks it against fifoRanks on every send).

// checkFIFOHeld, when set (by tests), gets at every answer held the
// answer and fifoRanks's own.
var checkFIFOHeld func(held, fresh []float64)

// fifoHeld holds, within one send, the FIFO evidence of each eligible
// set met (as a mask over ord's positions).
type fifoHeld struct {
	masks []uint64
	vals  []float64 // len(masks) rows of n
	n     int
}

// reset empties the held evidence, for a send over n slots.
func (f *fifoHeld) reset(n int) {
	f.masks, f.vals, f.n = f.masks[:0], f.vals[:0], n
}

// fifoRanksHeld sets s.fifo as fifoRanks(h, kb) would, from what is held
// for h's eligible set when it was met before in this send (s.held
// reset by send). Only where there are at most 64 orderable slots (one
// bit each) and the evidence is informative; otherwise fifoRanks.
func (s *search) fifoRanksHeld(h *hyp, kb uint64) {
	if len(s.ord) > 64 || !s.m.fifoInformative() {
		s.fifoRanks(h, kb)
		return
	}
	var mask uint64
	for j, i := range s.ord {
		if h.slots[i].kinds&kb == 0 {
			mask |= 1 << uint(j)
		}
	}
	f := &s.held
	for k, m := range f.masks {
		if m == mask {
			s.fifo = append(s.fifo[:0], f.vals[k*f.n:(k+1)*f.n]...)
			if checkFIFOHeld != nil {
				held := append([]float64(nil), s.fifo...)
				s.fifoRanks(h, kb)
				checkFIFOHeld(held, s.fifo)
			}
			return
		}
	}
	s.fifoRanks(h, kb)
	f.masks = append(f.masks, mask)
	f.vals = append(f.vals, s.fifo...)
}
