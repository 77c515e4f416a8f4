package assembly

import (
	"os"
	"testing"
)

// TestDiagnoseTicks classifies the wrong calls of a run with coarse
// timestamps (a generated trace at 1 ms: WIREPATH_DIAG_TRACE and
// WIREPATH_DIAG_TRUTH, as TestDiagnose) by what the timestamps could
// tell: whether the true request and the one the engine chose arrived in
// the same tick of the node's clock, whether the call was sent in the
// same tick as a call the chosen request truly made (a swap inside a
// tick), and whether a host's clock offset puts one of the messages
// involved before its cause (a CALL received before it was sent, a
// RETURN sent before its CALL, on the two hosts' raw clocks). It is a
// diagnostic for docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_TICKS=1 WIREPATH_DIAG_TRACE=hotel.tsv WIREPATH_DIAG_TRUTH=hotel.truth.tsv \
//	  go test ./causal/assembly -run TestDiagnoseTicks -v
func TestDiagnoseTicks(t *testing.T) {
	if os.Getenv("WIREPATH_DIAG_TICKS") == "" {
		t.Skip("set WIREPATH_DIAG_TICKS (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH)")
	}
	r, d := diagInfer(t)
	rawArr := func(p int32) int64 {
		if cm := r.calls[p].callMsg; cm >= 0 && r.l.msgs[cm].RecvTS.Known() {
			return int64(r.l.msgs[cm].RecvTS)
		}
		return noTime
	}
	rawSend := func(c int32) int64 {
		if cm := r.calls[c].callMsg; cm >= 0 && r.l.msgs[cm].SendTS.Known() {
			return int64(r.l.msgs[cm].SendTS)
		}
		return noTime
	}
	backwards := func(c int32) bool {
		cc := &r.calls[c]
		if cc.callMsg < 0 {
			return false
		}
		m := &r.l.msgs[cc.callMsg]
		if m.SendTS.Known() && m.RecvTS.Known() && m.RecvTS < m.SendTS {
			return true
		}
		if cc.retMsg >= 0 {
			rm := &r.l.msgs[cc.retMsg]
			return rm.SendTS.Known() && m.SendTS.Known() && rm.SendTS < m.SendTS
		}
		return false
	}
	// per node and kind, the calls each true request made (for swaps)
	byTrue := map[int32][]int32{}
	for c := range r.calls {
		if p := d.tp[c]; p >= 0 {
			byTrue[p] = append(byTrue[p], int32(c))
		}
	}
	var n, arrTie, swapTie, sameArrTick, back, none, allBack int
	for c := range r.calls {
		if backwards(int32(c)) {
			allBack++
		}
	}
	for c := range r.calls {
		c := int32(c)
		if !d.wrong(c) {
			continue
		}
		n++
		tp, ep := d.tp[c], r.parent[c]
		if tp < 0 || ep < 0 {
			none++
			continue
		}
		if a, b := rawArr(tp), rawArr(ep); a != noTime && a == b {
			arrTie++
		}
		for _, o := range byTrue[ep] {
			if o != c && r.calls[o].kind == r.calls[c].kind && rawSend(o) == rawSend(c) {
				swapTie++
				break
			}
		}
		if rawArr(tp) == rawSend(c) || rawArr(ep) == rawSend(c) {
			sameArrTick++
		}
		if backwards(c) || backwards(tp) || backwards(ep) {
			back++
		}
	}
	t.Logf("calls whose messages a clock offset puts before their cause: %d of %d", allBack, len(r.calls))
	t.Logf("wrong calls %d: to or from no request %d; true and chosen request arrived in the same tick %d; sent in the tick of a call of the same kind the chosen request truly made %d; sent in the tick one of the two arrived in %d; a message of the call or of either request before its cause %d",
		n, none, arrTie, swapTie, sameArrTick, back)
}
