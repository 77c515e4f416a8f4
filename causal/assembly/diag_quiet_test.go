package assembly

import (
	"os"
	"slices"
	"testing"
)

// Diagnostics of a node that takes its calls from a pool (issue 11,
// branch asm-opq, docs/accuracy.md "The backends' tier: what decides their queries"):
// each reads WIREPATH_DIAG_TRACE and WIREPATH_DIAG_TRUTH and looks at node
// WIREPATH_DIAG_PH.

// TestDiagnosePoolHandout compares, at node WIREPATH_DIAG_PH,
// the engine's FIFO ranks and the true FIFO ranks of its calls in send order and in the order their
// connections were handed out (the previous call's return on the same
// connection, where the call left within ho of it).
func TestDiagnosePoolHandout(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_PH")
	kids := slices.Clone(r.childrenOf[n])
	slices.SortFunc(kids, func(a, b int32) int { return int(r.sendOf(a) - r.sendOf(b)) })
	conn := func(c int32) uint32 {
		if m := r.calls[c].callMsg; m >= 0 {
			return r.l.msgs[m].Conn
		}
		return 0
	}
	last := map[uint32]int64{}
	prev := map[int32]int64{}
	var gaps []int64
	for _, c := range kids {
		k := conn(c)
		if b, ok := last[k]; ok && k != 0 {
			prev[c] = b
			gaps = append(gaps, r.sendOf(c)-b)
		}
		last[k] = r.calls[c].back
	}
	slices.Sort(gaps)
	q := func(f float64) int64 { return gaps[int(f*float64(len(gaps)-1))] }
	t.Logf("calls %d; send − previous return on the connection µs: 5%% %d 25%% %d 50%% %d 75%% %d 95%% %d", len(kids), q(.05)/1e3, q(.25)/1e3, q(.5)/1e3, q(.75)/1e3, q(.95)/1e3)
	for _, ho := range []int64{0, 100e3, 200e3, 500e3, 1000e3, 2000e3} {
		at := map[int32]int64{}
		for _, c := range kids {
			at[c] = r.sendOf(c)
			if b, ok := prev[c]; ok && r.sendOf(c)-b < ho && r.sendOf(c) >= b {
				at[c] = b
			}
		}
		ord := slices.Clone(kids)
		slices.SortStableFunc(ord, func(a, b int32) int { return int(at[a] - at[b]) })
		done := map[int32]bool{}
		edone := map[int32]bool{}
		eranks := [4]int{}
		for _, c := range ord {
			ep := r.parent[c]
			if ep < 0 {
				continue
			}
			rank := 0
			for _, p := range r.parentsOf[n] {
				if p != ep && !edone[p] && r.arrOf(p) < r.arrOf(ep) && r.calls[p].rep > at[c] {
					rank++
				}
			}
			edone[ep] = true
			eranks[min(rank, 3)]++
		}
		t.Logf("engine's FIFO ranks 0/1/2/3+ %v", eranks)
		ranks := [4]int{}
		wrongEng := [4]int{}
		for _, c := range ord {
			tp := d.tp[c]
			if tp == diagUnknown || tp < 0 {
				continue
			}
			rank := 0
			for _, p := range r.parentsOf[n] {
				if p != tp && !done[p] && r.arrOf(p) < r.arrOf(tp) && r.calls[p].rep > at[c] {
					rank++
				}
			}
			done[tp] = true
			if rank > 3 {
				rank = 3
			}
			ranks[rank]++
			if r.parent[c] != tp {
				wrongEng[rank]++
			}
		}
		t.Logf("handout within %4d µs: true FIFO ranks 0/1/2/3+ %v; engine wrong among them %v", ho/1e3, ranks, wrongEng)
	}
}

// TestDiagnoseReplyGaps: at node WIREPATH_DIAG_PH, the true and
// the engine's gaps from a call's return to its request's reply (with
// WIREPATH_DIAG_FIRSTGAP set: from the request's arrival to the call), and
// how many of the engine's wrong calls fall below 0.8 of the true least.
func TestDiagnoseReplyGaps(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_PH")
	var tg, eg, wg, wt []int64
	for _, c := range r.childrenOf[n] {
		tp := d.tp[c]
		if tp == diagUnknown || tp < 0 || r.evid[c] == evRoot {
			continue
		}
		gf := func(p int32) int64 { return r.calls[p].rep - r.calls[c].back }
		if os.Getenv("WIREPATH_DIAG_FIRSTGAP") != "" {
			gf = func(p int32) int64 { return r.sendOf(c) - r.arrOf(p) }
		}
		g := gf(tp)
		tg = append(tg, g)
		if f := r.parent[c]; f >= 0 {
			eg = append(eg, gf(f))
			if f != tp {
				wg = append(wg, gf(f))
				wt = append(wt, g)
			}
		}
	}
	qs := func(g []int64) []int64 {
		slices.Sort(g)
		var o []int64
		for _, f := range []float64{0, .01, .02, .05, .25, .5, .75, .95} {
			o = append(o, g[int(f*float64(len(g)-1))]/1e3)
		}
		return o
	}
	t.Logf("true gaps µs 0/1/2/5/25/50/75/95%%: %v", qs(tg))
	t.Logf("engine gaps: %v", qs(eg))
	t.Logf("engine's wrong calls' gaps: %v (their truth %v)", qs(wg), qs(wt))
	lo := tg[0]
	below := 0
	for _, g := range wg {
		if g < lo*8/10 {
			below++
		}
	}
	t.Logf("SUMMARY wrong %d, of them below 0.8 × the true minimum gap: %d", len(wg), below)
}

// TestDiagnosePoolIdle: at node WIREPATH_DIAG_PH, for each
// call, the time between its request's arrival and its send during which
// the node had fewer calls out than its most at once (a pool connection
// free while the request waited; WIREPATH_DIAG_POOL=2: fewer than two),
// for the true request and the engine's.
func TestDiagnosePoolIdle(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_PH")
	type ev struct {
		t int64
		d int
	}
	var evs []ev
	for _, c := range r.childrenOf[n] {
		k := &r.calls[c]
		if k.send == noTime || k.back == noTime {
			continue
		}
		evs = append(evs, ev{k.send, 1}, ev{k.back, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.d - b.d
	})
	most, cur := 0, 0
	for _, e := range evs {
		cur += e.d
		most = max(most, cur)
	}
	if os.Getenv("WIREPATH_DIAG_POOL") == "2" {
		most = 2
	}
	// free(a, b): time in (a, b) with fewer than most calls out
	free := func(a, b int64) int64 {
		cur, last, tot := 0, int64(0), int64(0)
		for _, e := range evs {
			if e.t > a && cur < most {
				tot += min(e.t, b) - max(last, a)
			}
			if e.t >= b {
				break
			}
			cur += e.d
			last = e.t
		}
		return tot
	}
	var tf, wf, wt []int64
	for _, c := range r.childrenOf[n] {
		tp := d.tp[c]
		if tp == diagUnknown || tp < 0 || r.evid[c] == evRoot {
			continue
		}
		s := r.sendOf(c) - 1
		tf = append(tf, free(r.arrOf(tp), s))
		if f := r.parent[c]; f >= 0 && f != tp {
			wf = append(wf, free(r.arrOf(f), s))
			wt = append(wt, free(r.arrOf(tp), s))
		}
	}
	qs := func(g []int64) []int64 {
		g = slices.Clone(g)
		slices.Sort(g)
		var o []int64
		for _, f := range []float64{.5, .75, .9, .95, .99, 1} {
			o = append(o, g[int(f*float64(len(g)-1))]/1e3)
		}
		return o
	}
	t.Logf("most out at once %d; free time while waiting µs 50/75/90/95/99/100%%: truth %v; engine's wrong %v (their truth %v)", most, qs(tf), qs(wf), qs(wt))
	for _, lim := range []int64{2e6, 5e6, 10e6} {
		a, b := 0, 0
		for i := range wf {
			if wf[i] > lim {
				a++
			}
			if wt[i] > lim {
				b++
			}
		}
		t.Logf("over %d ms: engine's wrong %d, their truth %d, of %d", lim/1e6, a, b, len(wf))
	}
}

// TestDiagnoseQuietPairs: at node WIREPATH_DIAG_PH, pairs of
// requests that arrived close together on different connections, served
// (their true calls sent) in arrival order or not, by the gap and by
// whether the node sent anything between the two arrivals. With
// WIREPATH_DIAG_FULL=1 only the pairs whose later arrival found two calls
// or more out (a pool of two busy), =0 the others.
func TestDiagnoseQuietPairs(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_PH")
	var sends []int64
	for _, c := range r.childrenOf[n] {
		sends = append(sends, r.sendOf(c))
	}
	for _, p := range r.parentsOf[n] {
		if r.calls[p].rep != noTime {
			sends = append(sends, r.calls[p].rep)
		}
	}
	slices.Sort(sends)
	q := map[int32]int64{}
	for _, c := range r.childrenOf[n] {
		if tp := d.tp[c]; tp != diagUnknown && tp >= 0 && r.evid[c] != evRoot {
			if _, ok := q[tp]; !ok {
				q[tp] = r.sendOf(c)
			}
		}
	}
	ps := slices.Clone(r.parentsOf[n])
	slices.SortFunc(ps, func(a, b int32) int { return int(r.arrOf(a) - r.arrOf(b)) })
	type cnt struct{ kept, swapped int }
	var act, sil [9]cnt
	out := func(t int64) int {
		k := 0
		for _, c := range r.childrenOf[n] {
			if r.sendOf(c) <= t && r.calls[c].back > t {
				k++
			}
		}
		return k
	}
	full := os.Getenv("WIREPATH_DIAG_FULL")
	for i, a := range ps {
		for _, b := range ps[i+1:] {
			gap := r.arrOf(b) - r.arrOf(a)
			if gap > 12800e3 {
				break
			}
			sa, okA := q[a]
			sb, okB := q[b]
			if !okA || !okB || !r.crossConns(a, b) || sa < r.arrOf(b) {
				continue // not both waiting at b's arrival
			}
			bin := 0
			for g := gap; g >= 50e3 && bin < 8; g /= 2 {
				bin++
			}
			j, _ := slices.BinarySearch(sends, r.arrOf(a)+1)
			busy := j < len(sends) && sends[j] < r.arrOf(b)
			if full != "" && (out(r.arrOf(b)) >= 2) != (full == "1") {
				continue
			}
			x := &sil[bin]
			if busy {
				x = &act[bin]
			}
			if sa < sb {
				x.kept++
			} else {
				x.swapped++
			}
		}
	}
	t.Logf("by gap bin (<50 µs, 100, 200, 400, 800, 1600, 3200, 6400, 12800): node sent between: %v; silent between: %v", act, sil)
}

// TestDiagnoseFanSplit: at node WIREPATH_DIAG_PH, how many requests have
// every call right, all their calls under one other request (a whole
// swap) or their calls split between requests, and how far apart the
// truth's calls of one request were sent.
func TestDiagnoseFanSplit(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_PH")
	byTrue := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if tp := d.tp[c]; tp != diagUnknown && tp >= 0 && r.evid[c] != evRoot {
			byTrue[tp] = append(byTrue[tp], c)
		}
	}
	right, whole, split := 0, 0, 0
	var spread []int64
	for _, cs := range byTrue {
		ps := map[int32]bool{}
		lo, hi := r.sendOf(cs[0]), r.sendOf(cs[0])
		for _, c := range cs {
			ps[r.parent[c]] = true
			lo, hi = min(lo, r.sendOf(c)), max(hi, r.sendOf(c))
		}
		spread = append(spread, hi-lo)
		switch {
		case len(ps) == 1 && r.parent[cs[0]] == d.tp[cs[0]]:
			right++
		case len(ps) == 1:
			whole++
		default:
			split++
		}
	}
	slices.Sort(spread)
	q := func(f float64) int64 { return spread[int(f*float64(len(spread)-1))] / 1e3 }
	t.Logf("requests %d: all right %d, all under one other request %d, split %d; true sends' spread µs 50/75/90/95%% %d %d %d %d",
		len(byTrue), right, whole, split, q(.5), q(.75), q(.9), q(.95))
}

// TestDiagnoseGreedyFIFO: at node WIREPATH_DIAG_PH, each call in send
// order given to the earliest-arrived request that can still hold it and
// has none (no model): how many are right, against the engine.
func TestDiagnoseGreedyFIFO(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_PH")
	kids := slices.Clone(r.childrenOf[n])
	slices.SortFunc(kids, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	ps := slices.Clone(r.parentsOf[n])
	slices.SortFunc(ps, func(a, b int32) int { return cmpTime(r.arrOf(a), r.arrOf(b)) })
	used := map[int32]bool{}
	right, eng, tot := 0, 0, 0
	for _, c := range kids {
		tp := d.tp[c]
		if tp == diagUnknown || r.evid[c] == evRoot {
			continue
		}
		g := int32(-1)
		for _, p := range ps {
			if !used[p] && r.arrOf(p) < r.sendOf(c) && r.calls[p].rep > r.calls[c].back && r.kinds.name(r.calls[p].kind) != "GET /health" {
				g = p
				break
			}
		}
		if g >= 0 {
			used[g] = true
		}
		tot++
		if g == tp {
			right++
		}
		if r.parent[c] == tp {
			eng++
		}
	}
	t.Logf("greedy FIFO right %d of %d, engine %d", right, tot, eng)
}
