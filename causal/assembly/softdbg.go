package assembly

import (
	"fmt"
	"math"
	"os"
)

var softDbg = os.Getenv("WIREPATH_SOFTDBG") != ""

func (m *nodeModel) dbgFirst(tag string, n int32) {
	if !softDbg {
		return
	}
	for k, h := range m.gaps[anchorArrival] {
		if k.lvl != 1 || k.prev != noKind || k.ret != 0 || h.n < 50 {
			continue
		}
		q := []float64{0.05, 0.25, 0.5, 0.75, 0.95}
		out := ""
		acc, j := 0.0, 0
		for b := 0; b < nGapBins && j < len(q); b++ {
			acc += h.w[b]
			for j < len(q) && acc >= q[j]*h.n {
				out += fmt.Sprintf(" %.2f", gapMinNS*math.Pow(10, float64(b-1)/gapPerDecade)/1e6)
				j++
			}
		}
		fmt.Fprintf(os.Stderr, "DBG %s node %d first k%d n %.0f:%s ms\n", tag, n, k.next, h.n, out)
	}
}

func (r *run) dbgPost(n int32) {
	if !softDbg {
		return
	}
	s, cnt, moved := 0.0, 0, 0
	for _, c := range r.childrenOf[n] {
		if r.exact[c] >= 0 || r.nCand[c] < 2 {
			continue
		}
		s += r.parentProb(c)
		cnt++
		if r.parent[c] != r.picked[c] {
			moved++
		}
	}
	fmt.Fprintf(os.Stderr, "DBG node %d calls %d mean parent prob %.3f moved %d\n", n, cnt, s/float64(max(cnt, 1)), moved)
}
