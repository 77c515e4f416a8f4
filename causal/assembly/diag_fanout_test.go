package assembly

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
)

// fanDiag is what TestDiagnoseFanOutSwaps reads: the node's calls by
// request under the engine's answer (eng) and the truth (tru), and the
// calls the engine gave another open request than the true one (sw).
type fanDiag struct {
	r        *run
	d        *diag
	node     int32
	eng, tru map[int32][]int32
	sw       []int32
}

// TestDiagnoseFanOutSwaps looks at a fan-out node's calls that the engine
// gives another open request than the true one (WIREPATH_DIAG_FANOUT=NODE
// on the saved run of diagRun): the FIFO ratios learnt (the engine's
// final model and one fitted on the truth); how the engine's wrong
// requests mix true ones; for pairs of calls of one kind whose requests
// were both open, whether the earlier call belongs to the request that
// arrived first or to the one that sent its other calls first (the
// fan-out order, fanorder.go), under the truth and the engine's answer;
// and, for each swapped call, whether the gap from the request's previous
// send (the send cluster), from its arrival, and the reply's gap after
// the latest of its requests' replies (the join) are likelier under the
// truth's links or the engine's. A diagnostic for docs/accuracy.md, run
// by hand.
func TestDiagnoseFanOutSwaps(t *testing.T) {
	name := os.Getenv("WIREPATH_DIAG_FANOUT")
	if name == "" {
		t.Skip("set WIREPATH_DIAG_FANOUT=NODE")
	}
	r, d := diagInfer(t)
	fd := &fanDiag{r: r, d: d, node: -1, eng: map[int32][]int32{}, tru: map[int32][]int32{}}
	for n := range r.childrenOf {
		if d.tr.Str(r.l.nodeSym[n]) == name {
			fd.node = int32(n)
		}
	}
	if fd.node < 0 {
		t.Fatalf("no node %s", name)
	}
	wrong := 0
	for _, c := range r.childrenOf[fd.node] {
		if p := r.parent[c]; p >= 0 {
			fd.eng[p] = append(fd.eng[p], c)
		}
		tp := d.tp[c]
		if tp >= 0 {
			fd.tru[tp] = append(fd.tru[tp], c)
		}
		if tp == diagUnknown || tp == r.parent[c] || (tp < 0 && r.parent[c] < 0) {
			continue
		}
		wrong++
		if tp >= 0 && r.parent[c] >= 0 {
			fd.sw = append(fd.sw, c)
		}
	}
	t.Logf("node %s: %d calls, %d wrong, %d given another request", name, len(r.childrenOf[fd.node]), wrong, len(fd.sw))
	fd.fifoTables(t)
	fd.mixes(t)
	fd.orders(t)
	fd.timings(t)
}

// fifoTables logs the FIFO ratios of the engine's final model and of one
// fitted on the truth's links.
func (fd *fanDiag) fifoTables(t *testing.T) {
	r, d := fd.r, fd.d
	show := func(who string, m *nodeModel) {
		var lr [fifoBins]float64
		for b := range lr {
			lr[b] = m.logFIFO(int8(b))
		}
		t.Logf("%s: parallel %v, fan-out order %v, FIFO log ratios by bin %.2f (links %.0f, others %.0f)",
			who, m.parallel(), r.fanOrder(m), lr, m.fifo.nl, m.fifo.no)
	}
	if m := r.models[fd.node]; m != nil {
		show("final model", m)
	}
	one := func(int32) float64 { return 1 }
	show("the truth's model", r.fitWith(fd.node, func(c int32) int32 { return max(d.tp[c], -1) }, one, one, func(int32) bool { return true }, true, false))
}

// mixes logs the engine's requests with a wrong call by the number of
// true requests their calls come from (1: a whole fan-out swapped).
func (fd *fanDiag) mixes(t *testing.T) {
	var mix [4]int
	for p, ks := range fd.eng {
		bad := false
		src := map[int32]bool{}
		for _, c := range ks {
			src[fd.d.tp[c]] = true
			bad = bad || fd.d.tp[c] != p
		}
		if bad {
			mix[min(len(src), 3)]++
		}
	}
	t.Logf("engine's requests with a wrong call, by the true requests their calls come from (1 / 2 / 3+): %d / %d / %d", mix[1], mix[2], mix[3])
}

// orders logs, for the pairs of calls of one kind whose requests (under
// the truth, then the engine's answer) were both open at the earlier
// call, how often the earlier call's request arrived first and how often
// it sent its calls of other kinds first.
func (fd *fanDiag) orders(t *testing.T) {
	for _, as := range []struct {
		who string
		by  map[int32][]int32
	}{{"truth", fd.tru}, {"engine", fd.eng}} {
		var arr, fan [2]int
		fd.pairs(as.by, func(q1, q2 int32, k int32) {
			arr[b2i(fd.r.calls[q1].arr >= fd.r.calls[q2].arr)]++
			f1, o1 := firstOther(fd.r, as.by[q1], k)
			f2, o2 := firstOther(fd.r, as.by[q2], k)
			if o1 && o2 && f1 != f2 {
				fan[b2i(f1 > f2)]++
			}
		})
		t.Logf("%s: pairs of one kind, both open: the earlier call's request arrived first %d of %d, sent its other kinds first %d of %d",
			as.who, arr[0], arr[0]+arr[1], fan[0], fan[0]+fan[1])
	}
}

// pairs calls f for each pair of calls of one kind (kind k) in two
// requests of by both open at the earlier call, q1 the earlier call's.
func (fd *fanDiag) pairs(by map[int32][]int32, f func(q1, q2, k int32)) {
	r := fd.r
	for p1, ks1 := range by {
		for p2, ks2 := range by {
			if p1 >= p2 {
				continue
			}
			for _, c1 := range ks1 {
				for _, c2 := range ks2 {
					if r.calls[c1].kind != r.calls[c2].kind {
						continue
					}
					e1, q1, q2 := c1, p1, p2
					if r.calls[c1].send > r.calls[c2].send {
						e1, q1, q2 = c2, p2, p1
					}
					if s := r.calls[e1].send; s > r.calls[q2].rep || s < r.calls[q2].arr {
						continue
					}
					f(q1, q2, r.calls[c1].kind)
				}
			}
		}
	}
}

// timings logs, for the swapped calls, which of the truth's links and
// the engine's make each timing likelier under the truth's histograms.
func (fd *fanDiag) timings(t *testing.T) {
	r := fd.r
	var sendGaps, arrGaps, joinGaps []int64
	for p, ks := range fd.tru {
		for _, c := range ks {
			if g, ok := prevSendGap(r, ks, c); ok {
				sendGaps = append(sendGaps, g)
			}
			arrGaps = append(arrGaps, r.calls[c].send-r.calls[p].arr)
		}
		if j, ok := joinGap(r, &r.calls[p], ks); ok {
			joinGaps = append(joinGaps, j)
		}
	}
	t.Logf("truth: gap from the previous send %s; from the arrival %s; reply after the latest return %s", quant(sendGaps), quant(arrGaps), quant(joinGaps))
	hs, ha, hj := logHist(sendGaps), logHist(arrGaps), logHist(joinGaps)
	var llr [3][3]int
	for _, c := range fd.sw {
		tp, ep := fd.d.tp[c], r.parent[c]
		et, ee := fd.eng[tp], fd.eng[ep]
		mt := append(slices.Clone(et), c)
		me := slices.DeleteFunc(slices.Clone(ee), func(x int32) bool { return x == c })
		gt, okT := prevSendGap(r, mt, c)
		ge, okE := prevSendGap(r, ee, c)
		tallyLR(&llr[0], okT && okE, hs(gt)-hs(ge))
		tallyLR(&llr[1], true, ha(r.calls[c].send-r.calls[tp].arr)-ha(r.calls[c].send-r.calls[ep].arr))
		jt1, o1 := joinGap(r, &r.calls[tp], mt)
		jt2, o2 := joinGap(r, &r.calls[ep], me)
		je1, o3 := joinGap(r, &r.calls[tp], et)
		je2, o4 := joinGap(r, &r.calls[ep], ee)
		tallyLR(&llr[2], o1 && o2 && o3 && o4, hj(jt1)+hj(jt2)-hj(je1)-hj(je2))
	}
	for i, nm := range []string{"gap from the previous send", "gap from the arrival", "join, both requests"} {
		t.Logf("swapped calls, %-28s truth likelier %d, engine likelier %d, tie or unknown %d", nm, llr[i][0], llr[i][1], llr[i][2])
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quant is v's 10th, 50th and 90th percentiles in µs.
func quant(v []int64) string {
	slices.Sort(v)
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("p10 %d p50 %d p90 %d µs", v[len(v)/10]/1000, v[len(v)/2]/1000, v[len(v)*9/10]/1000)
}

// prevSendGap is the gap from the latest other call of ks sent before c
// to c's send.
func prevSendGap(r *run, ks []int32, c int32) (int64, bool) {
	s := r.calls[c].send
	best, ok := int64(0), false
	for _, k := range ks {
		if k == c {
			continue
		}
		if t := r.calls[k].send; t <= s && (!ok || s-t < best) {
			best, ok = s-t, true
		}
	}
	return best, ok
}

// joinGap is the gap from the latest reply of ks to the request's reply.
func joinGap(r *run, pc *call, ks []int32) (int64, bool) {
	if pc.retMsg < 0 || len(ks) == 0 {
		return 0, false
	}
	last := pc.arr
	for _, k := range ks {
		last = max(last, r.calls[k].back)
	}
	return pc.rep - last, true
}

// logHist returns the log density of a gap under the histogram of v in
// the engine's log bins (add-one smoothed).
func logHist(v []int64) func(int64) float64 {
	var h [nGapBins]float64
	for _, g := range v {
		h[gapBin(g)]++
	}
	n := float64(len(v)) + nGapBins
	return func(g int64) float64 { return math.Log((h[gapBin(g)] + 1) / n) }
}

// tallyLR counts the sign of a log likelihood ratio d (known: ok).
func tallyLR(c *[3]int, ok bool, d float64) {
	switch {
	case !ok || math.Abs(d) <= 0.1:
		c[2]++
	case d > 0:
		c[0]++
	default:
		c[1]++
	}
}

// firstOther is the first send among ks of a kind other than k.
func firstOther(r *run, ks []int32, k int32) (int64, bool) {
	t, ok := int64(0), false
	for _, x := range ks {
		if r.calls[x].kind != k && (!ok || r.calls[x].send < t) {
			t, ok = r.calls[x].send, true
		}
	}
	return t, ok
}
