package assembly

import "math"

// The mass the beam lets go, and the mass a call leaves to requests it
// does not list.
//
// The last pass's search sums, for each call, over the hypotheses of the
// beam (a marginal), but the beam keeps a few hypotheses of the many a
// busy node's calls open: at 64 requests in flight each call can go to
// about 60 requests, and a send keeps 16 of about 900 candidates. At the
// send every candidate is scored (noteAlternatives sums them per request:
// the filtering distribution, all the evidence before the send and none
// after), and the search knows the share w of their mass it keeps. The
// call's posterior is then
//
//	P(q) = w·P_beam(q) + (1 − w)·P_send(q):
//
// what the beam holds is weighed by the beam's marginal, what it let go
// by the distribution it had when it let it go. Where the beam drops
// nothing (an exact window) it is the beam's marginal, as before. Only
// the share dropped at the call's own send counts: the candidates pruned
// at a later send extend the same hypotheses as those kept, so they
// differ from them in later calls' requests, not in this one's (counting
// every later step's loss made w about 0 wherever 16 or more requests
// are open, and the posterior the send's alone, which knows nothing of
// the replies: on the testbed the joint links' ECE rose from 0.102 to
// 0.108; docs/accuracy.md, "Calibration").
//
// A request's confidence counts the calls it may have lost
// (rivals.go): each call given elsewhere lists K alternatives, and what
// the listed ones leave shares evenly over the call's other candidates
// (probOf); those shares count too (run.mback, noteRivals).
//
// Neither changes an assignment: posterior sets them after the local
// search, which reads the search's own confidences.

// sendMass is what the search keeps of a pending call for its posterior:
// the log of the summed mass of all its candidates at its send (pruned
// or not), and the log of the share of it the beam kept.
type sendMass struct {
	all, kept float64
}

// lseScores returns log Σ exp(score) over the hypotheses hs.
func lseScores(hs []*hyp) float64 {
	return logSumExpOf(hs, func(h *hyp) float64 { return h.score })
}

// noteSend records, for call c decided by the summing search, the share w
// of its candidates' mass the beam kept and its distribution at the send
// over its best requests top (scores; all is the log mass of every
// candidate).
func (r *run) noteSend(c int32, w float64, top []altScore, all float64) {
	r.sendW[c] = float32(min(1, max(0, w)))
	k := searchAlts + 1
	fs := r.sendPost[int(c)*k : int(c)*k+k]
	for i := range fs {
		fs[i] = alt{-1, 0}
		if i < len(top) && !math.IsInf(all, -1) {
			fs[i] = alt{top[i].p, float32(math.Exp(top[i].score - all))}
		}
	}
}

// mixedProb returns the probability of request e (-1: none) for call c
// under its mixed posterior: w of the beam's post, 1 − w of the send's.
func (r *run) mixedProb(c int32, post []alt, e int32, nCand int) float64 {
	w := float64(r.sendW[c])
	p := w * probOf(post, e, nCand)
	if w < 1 {
		k := searchAlts + 1
		fs := r.sendPost[int(c)*k : int(c)*k+k]
		n := len(fs)
		for n > 0 && fs[n-1].prob <= 0 {
			n--
		}
		p += (1 - w) * probOf(fs[:n], e, nCand)
	}
	return p
}
