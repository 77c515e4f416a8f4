package assembly

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
)

// TestDiagnoseFanOutSwaps looks at a fan-out node's calls that the engine
// gives another open request than the true one (WIREPATH_DIAG_FANOUT=NODE
// on the saved run of diagRun) and counts, for each piece of timing or
// size evidence, how often it is closer to its typical value under the
// truth's links than under the engine's: the gap from the request's
// previous call sent (the send cluster of parallel calls), from its
// arrival, from its latest event (what the engine's delay model reads),
// and the reply's gap after the latest of the request's replies (the
// join). Each is compared over the two requests involved (the true one
// and the engine's), with every other call where the engine put it.
// A diagnostic for docs/accuracy.md, run by hand.
func TestDiagnoseFanOutSwaps(t *testing.T) {
	name := os.Getenv("WIREPATH_DIAG_FANOUT")
	if name == "" {
		t.Skip("set WIREPATH_DIAG_FANOUT=NODE")
	}
	r, d := diagInfer(t)
	node := int32(-1)
	for n := range r.childrenOf {
		if d.tr.Str(r.l.nodeSym[n]) == name {
			node = int32(n)
		}
	}
	if node < 0 {
		t.Fatalf("no node %s", name)
	}
	eng := map[int32][]int32{}
	tru := map[int32][]int32{}
	wrong, swaps := 0, 0
	var sw []int32
	for _, c := range r.childrenOf[node] {
		if p := r.parent[c]; p >= 0 {
			eng[p] = append(eng[p], c)
		}
		tp := d.tp[c]
		if tp >= 0 {
			tru[tp] = append(tru[tp], c)
		}
		if tp == diagUnknown || tp == r.parent[c] || (tp < 0 && r.parent[c] < 0) {
			continue
		}
		wrong++
		if tp >= 0 && r.parent[c] >= 0 {
			swaps++
			sw = append(sw, c)
		}
	}
	t.Logf("node %s: %d calls, %d wrong, %d given another request", name, len(r.childrenOf[node]), wrong, swaps)
	if m := r.models[node]; m != nil {
		var lr [fifoBins]float64
		for b := range lr {
			lr[b] = m.logFIFO(int8(b))
		}
		var lf [fifoBins]float64
		for b := range lf {
			lf[b] = m.logFIFOFan(int8(b))
		}
		t.Logf("final model: parallel %v, fan-out order %v, FIFO log ratios by bin %.2f (links %.0f, others %.0f), started %.2f (links %.0f, others %.0f)", m.parallel(), r.fanOrder(m), lr, m.fifo.nl, m.fifo.no, lf, m.fifoFan.nl, m.fifoFan.no)
	}
	one := func(int32) float64 { return 1 }
	tm := r.fitWith(node, func(c int32) int32 {
		if tp := d.tp[c]; tp >= 0 {
			return tp
		}
		return -1
	}, one, one, func(int32) bool { return true }, true, false)
	var lr, lf [fifoBins]float64
	for b := range lr {
		lr[b], lf[b] = tm.logFIFO(int8(b)), tm.logFIFOFan(int8(b))
	}
	t.Logf("the truth's model: FIFO log ratios by bin %.2f (links %.0f, others %.0f), started %.2f (links %.0f, others %.0f)", lr, tm.fifo.nl, tm.fifo.no, lf, tm.fifoFan.nl, tm.fifoFan.no)
	// the engine's requests with a wrong call: from how many true requests
	// their calls come (1: a whole fan-out given to another request)
	var mix [4]int
	engCons := [2]int{}
	for p, ks := range eng {
		bad := false
		src := map[int32]bool{}
		for _, c := range ks {
			src[d.tp[c]] = true
			bad = bad || d.tp[c] != p
		}
		if bad {
			mix[min(len(src), 3)]++
		}
	}
	for p1, ks1 := range eng {
		for p2, ks2 := range eng {
			if p1 >= p2 {
				continue
			}
			for _, c1 := range ks1 {
				for _, c2 := range ks2 {
					k := r.calls[c1].kind
					if r.calls[c2].kind != k {
						continue
					}
					e1, e2, q1, q2 := c1, c2, p1, p2
					if r.calls[e1].send > r.calls[e2].send {
						e1, e2, q1, q2 = e2, e1, p2, p1
					}
					if r.calls[e1].send > r.calls[q2].rep || r.calls[e1].send < r.calls[q2].arr {
						continue
					}
					f1, o1 := firstOther(r, eng[q1], k)
					f2, o2 := firstOther(r, eng[q2], k)
					if o1 && o2 && f1 != f2 {
						if f1 < f2 {
							engCons[0]++
						} else {
							engCons[1]++
						}
					}
				}
			}
		}
	}
	t.Logf("engine's requests with a wrong call, by the true requests their calls come from (1 / 2 / 3+): %d / %d / %d", mix[1], mix[2], mix[3])
	t.Logf("engine's pairs of one kind, both open: the earlier call's request sent its other kinds first: yes %d, no %d", engCons[0], engCons[1])
	// the truth's typical values of each feature (median), from the truth's links
	var sendGaps, arrGaps, joinGaps []int64
	for p, ks := range tru {
		pc := &r.calls[p]
		for _, c := range ks {
			if g, ok := prevSendGap(r, ks, c); ok {
				sendGaps = append(sendGaps, g)
			}
			arrGaps = append(arrGaps, r.calls[c].send-pc.arr)
		}
		if j, ok := joinGap(r, pc, ks); ok {
			joinGaps = append(joinGaps, j)
		}
	}
	q := func(v []int64) string {
		slices.Sort(v)
		if len(v) == 0 {
			return "-"
		}
		return fmt.Sprintf("p10 %d p50 %d p90 %d µs", v[len(v)/10]/1000, v[len(v)/2]/1000, v[len(v)*9/10]/1000)
	}
	t.Logf("truth: send gap %s; arrival gap %s; join %s", q(sendGaps), q(arrGaps), q(joinGaps))
	var cnt [4][3]int // feature × (truth closer, engine closer, tie/unknown)
	for _, c := range sw {
		tp, ep := d.tp[c], r.parent[c]
		// the engine's assignment with c moved to its true request
		et, ee := eng[tp], eng[ep]
		mt := append(slices.Clone(et), c)
		me := slices.DeleteFunc(slices.Clone(ee), func(x int32) bool { return x == c })
		// (b) send cluster: the gap from the request's previous send
		gt, okT := prevSendGap(r, mt, c)
		ge, okE := prevSendGap(r, ee, c)
		tally(&cnt[0], okT, okE, gt, ge)
		// (c) the arrival gap
		tally(&cnt[1], true, true, r.calls[c].send-r.calls[tp].arr, r.calls[c].send-r.calls[ep].arr)
		// (a) the join, summed over both requests
		jt1, o1 := joinGap(r, &r.calls[tp], mt)
		jt2, o2 := joinGap(r, &r.calls[ep], me)
		je1, o3 := joinGap(r, &r.calls[tp], et)
		je2, o4 := joinGap(r, &r.calls[ep], ee)
		tally(&cnt[2], o1 && o2, o3 && o4, jt1+jt2, je1+je2)
		// (d) the size against the truth's request size: not measured here
		_ = cnt[3]
	}
	hs, ha, hj := logHist(sendGaps), logHist(arrGaps), logHist(joinGaps)
	var llr [3][3]int
	for _, c := range sw {
		tp, ep := d.tp[c], r.parent[c]
		et, ee := eng[tp], eng[ep]
		mt := append(slices.Clone(et), c)
		me := slices.DeleteFunc(slices.Clone(ee), func(x int32) bool { return x == c })
		gt, okT := prevSendGap(r, mt, c)
		ge, okE := prevSendGap(r, ee, c)
		if okT && okE {
			tallyF(&llr[0], hs(gt)-hs(ge))
		} else {
			llr[0][2]++
		}
		tallyF(&llr[1], ha(r.calls[c].send-r.calls[tp].arr)-ha(r.calls[c].send-r.calls[ep].arr))
		jt1, o1 := joinGap(r, &r.calls[tp], mt)
		jt2, o2 := joinGap(r, &r.calls[ep], me)
		je1, o3 := joinGap(r, &r.calls[tp], et)
		je2, o4 := joinGap(r, &r.calls[ep], ee)
		if o1 && o2 && o3 && o4 {
			tallyF(&llr[2], hj(jt1)+hj(jt2)-hj(je1)-hj(je2))
		} else {
			llr[2][2]++
		}
	}
	// order: the swapped pairs (c true in tp given to ep, c2 of its kind
	// true in ep given to tp): does the order of the two calls follow the
	// two requests' arrival order, and their other calls' send order?
	var ord [2][3]int // arrival, other kinds' first send × (truth, engine, unknown)
	for _, c := range sw {
		tp, ep := d.tp[c], r.parent[c]
		k := r.calls[c].kind
		c2 := int32(-1)
		for _, x := range eng[tp] {
			if r.calls[x].kind == k && d.tp[x] == ep {
				c2 = x
			}
		}
		if c2 < 0 || r.calls[c].send > r.calls[c2].send {
			continue // count each pair once, from its earlier call
		}
		// c left first: the truth says tp's call left first
		a := r.calls[tp].arr < r.calls[ep].arr
		tallyB(&ord[0], a)
		ft, okT := firstOther(r, tru[tp], k)
		fe, okE := firstOther(r, tru[ep], k)
		if okT && okE && ft != fe {
			tallyB(&ord[1], ft < fe)
		} else {
			ord[1][2]++
		}
	}
	t.Logf("swapped pairs, the earlier call's true request arrived first: yes %d, no %d", ord[0][0], ord[0][1])
	t.Logf("swapped pairs, the earlier call's true request sent its other kinds first: yes %d, no %d, unknown %d", ord[1][0], ord[1][1], ord[1][2])
	var all [2][3]int
	for p1, ks1 := range tru {
		for p2, ks2 := range tru {
			if p1 >= p2 {
				continue
			}
			for _, c1 := range ks1 {
				for _, c2 := range ks2 {
					if r.calls[c1].kind != r.calls[c2].kind {
						continue
					}
					k := r.calls[c1].kind
					e1, e2 := c1, c2
					if r.calls[e1].send > r.calls[e2].send {
						e1, e2 = e2, e1
					}
					q1, q2 := d.tp[e1], d.tp[e2]
					if r.calls[e1].send > r.calls[q2].rep || r.calls[e2].send < r.calls[q1].arr || r.calls[e1].send < r.calls[q2].arr {
						continue // not both open at the earlier send
					}
					tallyB(&all[0], r.calls[q1].arr < r.calls[q2].arr)
					f1, o1 := firstOther(r, tru[q1], k)
					f2, o2 := firstOther(r, tru[q2], k)
					if o1 && o2 && f1 != f2 {
						tallyB(&all[1], f1 < f2)
					} else {
						all[1][2]++
					}
				}
			}
		}
	}
	t.Logf("all true pairs of one kind, both open: earlier call's request arrived first: yes %d, no %d", all[0][0], all[0][1])
	t.Logf("all true pairs of one kind, both open: earlier call's request sent its other kinds first: yes %d, no %d, unknown %d", all[1][0], all[1][1], all[1][2])
	for i, nm := range []string{"send cluster LLR", "arrival LLR", "join LLR"} {
		t.Logf("%-48s truth likelier %d, engine likelier %d, tie or unknown %d", nm, llr[i][0], llr[i][1], llr[i][2])
	}
	for i, nm := range []string{"send cluster (gap from previous send)", "arrival to send", "join (reply after latest return, both requests)"} {
		t.Logf("%-48s truth closer %d, engine closer %d, tie or unknown %d", nm, cnt[i][0], cnt[i][1], cnt[i][2])
	}
}

// tally counts which of two gaps is smaller (closer to the immediate).
func tally(c *[3]int, okT, okE bool, gt, ge int64) {
	switch {
	case !okT || !okE || gt == ge:
		c[2]++
	case gt < ge:
		c[0]++
	default:
		c[1]++
	}
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

// tallyF counts the sign of a log likelihood ratio.
func tallyF(c *[3]int, d float64) {
	switch {
	case d > 0.1:
		c[0]++
	case d < -0.1:
		c[1]++
	default:
		c[2]++
	}
}

func tallyB(c *[3]int, yes bool) {
	if yes {
		c[0]++
	} else {
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
