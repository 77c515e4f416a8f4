package assembly

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// diagNode runs the engine on the saved run (diagInfer) and returns its
// state, the truth and the node named by environment variable env, or
// skips the test when env is not set.
func diagNode(t *testing.T, env string) (*run, *diag, int32) {
	t.Helper()
	name := os.Getenv(env)
	if name == "" {
		t.Skip("set " + env + " (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH)")
	}
	r, d := diagInfer(t)
	for n := range r.childrenOf {
		if d.name(int32(n)) == name {
			return r, d, int32(n)
		}
	}
	t.Fatalf("no node %q", name)
	return nil, nil, -1
}

// TestDiagnoseTimelines prints, for each wrong call of node
// WIREPATH_DIAG_TL, the true and the found requests' timelines.
func TestDiagnoseTimelines(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_TL")
	ms := func(x int64) float64 { return float64(x) / 1e6 }
	tl := func(p int32, t0 int64, mark int32) string {
		if p < 0 {
			return "none"
		}
		pc := &r.calls[p]
		var kids []int32
		for _, c := range r.childrenOf[n] {
			if d.tp[c] == p || r.parent[c] == p {
				kids = append(kids, c)
			}
		}
		sort.Slice(kids, func(i, j int) bool { return r.calls[kids[i]].send < r.calls[kids[j]].send })
		var b strings.Builder
		fmt.Fprintf(&b, "%s arr %.3f", r.kinds.name(pc.kind), ms(pc.arr-t0))
		for _, c := range kids {
			cc := &r.calls[c]
			tag := ""
			if d.tp[c] == p && r.parent[c] != p {
				tag = "-"
			} else if d.tp[c] != p && r.parent[c] == p {
				tag = "+"
			}
			if c == mark {
				tag += "*"
			}
			fmt.Fprintf(&b, " | %s%s ev%d [%.3f %.3f]", tag, r.kinds.name(cc.kind), r.evid[c], ms(cc.send-t0), ms(cc.back-t0))
		}
		fmt.Fprintf(&b, " | rep %.3f", ms(pc.rep-t0))
		return b.String()
	}
	k := 0
	for _, c := range r.childrenOf[n] {
		f, tp := r.parent[c], d.tp[c]
		if tp == diagUnknown || r.evid[c] == evRoot || f == tp {
			continue
		}
		k++
		if k > 200 {
			break
		}
		t0 := r.calls[c].send
		t.Logf("call %d %s conf %.2f\n   true  %s\n   found %s\n   %s", c, r.kinds.name(r.calls[c].kind), r.conf[c], tl(tp, t0, c), tl(f, t0, c), pairTerms(d, n, []int32{tp, f}))
	}
}

// pairTerms returns the terms by which the truth's assignment of requests
// ps's calls differs from the engine's (truth−engine), largest first.
func pairTerms(d *diag, n int32, ps []int32) string {
	r := d.r
	x := r.xfits[n]
	sum := func(tru bool) termSums {
		out := termSums{}
		s := &search{r: r, m: r.models[n]}
		for _, p := range ps {
			if p < 0 {
				continue
			}
			var ks []int32
			for _, c := range r.childrenOf[n] {
				q := r.parent[c]
				if tru && d.tp[c] != diagUnknown && r.evid[c] != evRoot {
					q = d.tp[c]
				}
				if q == p {
					ks = append(ks, c)
				}
			}
			if x != nil {
				s.m = x.scoring(r.arrOf(p))
			}
			d.replayTerms(s, p, ks, out)
		}
		return out
	}
	tt, te := sum(true), sum(false)
	keys := map[string]bool{}
	for k := range tt {
		keys[k] = true
	}
	for k := range te {
		keys[k] = true
	}
	type kv struct {
		k string
		v float64
	}
	var v []kv
	tot := 0.0
	for k := range keys {
		if dv := tt[k] - te[k]; dv > 0.05 || dv < -0.05 {
			v = append(v, kv{k, dv})
			tot += dv
		}
	}
	sort.Slice(v, func(i, j int) bool { return math.Abs(v[i].v) > math.Abs(v[j].v) })
	var b strings.Builder
	fmt.Fprintf(&b, "truth−engine %.2f:", tot)
	for i, e := range v {
		if i >= 8 {
			break
		}
		fmt.Fprintf(&b, " %s %.2f;", e.k, e.v)
	}
	return b.String()
}

// TestDiagnoseNextOrder measures, on the truth, whether node
// WIREPATH_DIAG_NX's un-id'd calls go to the candidate whose next exactly
// linked call leaves first: the true request's rank among the open
// candidates of its kind, by their next exact call's send after the
// call's return.
func TestDiagnoseNextOrder(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_NX")
	exactKids := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if r.evid[c] == evExactID || r.evid[c] == evThread {
			exactKids[r.parent[c]] = append(exactKids[r.parent[c]], c)
		}
	}
	next := func(q int32, after int64) int64 {
		best := int64(-1)
		for _, c := range exactKids[q] {
			if s := r.calls[c].send; s >= after && (best < 0 || s < best) {
				best = s
			}
		}
		return best
	}
	busy := func(q int32, s, b int64) bool {
		for _, c := range exactKids[q] {
			if r.calls[c].send < b && r.calls[c].back > s {
				return true
			}
		}
		return false
	}
	hist := map[string]*[6]int{}
	engHist := map[string]*[6]int{}
	for _, c := range r.childrenOf[n] {
		tp := d.tp[c]
		if tp < 0 || r.evid[c] == evExactID || r.evid[c] == evThread || r.evid[c] == evRoot {
			continue
		}
		cc := &r.calls[c]
		nt := next(tp, cc.back)
		if nt < 0 {
			continue
		}
		rank, ncand := 0, 0
		erank := -1
		fe := r.parent[c]
		var fnt int64 = -1
		if fe >= 0 {
			fnt = next(fe, cc.back)
		}
		erank = 0
		madeBefore := func(q int32, engine bool) bool {
			for _, o := range r.childrenOf[n] {
				par := d.tp[o]
				if engine {
					par = r.parent[o]
				}
				if par == q && o != c && r.calls[o].kind == cc.kind && r.calls[o].send < cc.send {
					return true
				}
			}
			return false
		}
		for _, q := range r.parentsOf[n] {
			qc := &r.calls[q]
			if qc.kind != r.calls[tp].kind || qc.arr > cc.send || qc.rep < cc.back {
				continue
			}
			if busy(q, cc.send, cc.back) {
				continue
			}
			x := next(q, cc.back)
			if x < 0 {
				continue
			}
			if !madeBefore(q, false) {
				ncand++
				if x < nt {
					rank++
				}
			}
			if fnt >= 0 && x < fnt && !madeBefore(q, true) {
				erank++
			}
		}
		k := r.kinds.name(cc.kind)
		if hist[k] == nil {
			hist[k], engHist[k] = &[6]int{}, &[6]int{}
		}
		if ncand > 5 {
			ncand = 5
		}
		if rank > 4 {
			rank = 4
		}
		hist[k][rank]++
		hist[k][5] += ncand
		if fnt >= 0 {
			if erank > 4 {
				erank = 4
			}
			engHist[k][erank]++
		}
	}
	for k, h := range hist {
		t.Logf("%-28s truth's rank 0..4+: %v (mean candidates %.2f); engine's %v", k, h[:5], float64(h[5])/float64(h[0]+h[1]+h[2]+h[3]+h[4]), engHist[k][:5])
	}
}

// TestDiagnoseReadyOrder measures, under the truth and the engine's
// assignment, the rank of each un-id'd call's request among the free
// candidates of its kind by the time they became ready (the later of
// the arrival and their last return before the call).
func TestDiagnoseReadyOrder(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_RO")
	for _, engine := range []bool{false, true} {
		par := func(o int32) int32 {
			if engine {
				return r.parent[o]
			}
			return d.tp[o]
		}
		kids := map[int32][]int32{}
		for _, o := range r.childrenOf[n] {
			if p := par(o); p >= 0 {
				kids[p] = append(kids[p], o)
			}
		}
		hist := map[string]*[2][5]int{}
		for _, c := range r.childrenOf[n] {
			tp := par(c)
			if tp < 0 || r.evid[c] == evExactID || r.evid[c] == evThread || r.evid[c] == evRoot || d.tp[c] < 0 {
				continue
			}
			cc := &r.calls[c]
			type cand struct {
				q     int32
				ready int64
			}
			var cs []cand
			for _, q := range r.parentsOf[n] {
				qc := &r.calls[q]
				if qc.kind != r.calls[tp].kind || qc.arr > cc.send || qc.rep < cc.back {
					continue
				}
				ok, ready := true, qc.arr
				for _, o := range kids[q] {
					oc := &r.calls[o]
					if o == c {
						continue
					}
					if oc.send < cc.send && oc.back > cc.send {
						ok = false
					}
					if oc.kind == cc.kind && oc.send < cc.send {
						ok = false
					}
					if oc.back <= cc.send && oc.back > ready {
						ready = oc.back
					}
				}
				if ok || q == tp {
					cs = append(cs, cand{q, ready})
				}
			}
			sort.Slice(cs, func(i, j int) bool { return cs[i].ready < cs[j].ready })
			k := r.kinds.name(cc.kind)
			if hist[k] == nil {
				hist[k] = &[2][5]int{}
			}
			for i, x := range cs {
				b := min(i, 4)
				if x.q == tp {
					hist[k][0][b]++
				} else {
					hist[k][1][b]++
				}
			}
		}
		for k, h := range hist {
			t.Logf("engine %v %-24s ready rank 0..4+: links %v others %v", engine, k, h[0], h[1])
		}
	}
}

// TestDiagnoseWrongKinds counts node WIREPATH_DIAG_WK's wrong calls by
// what the found request has against them: another kind of request than
// the truth's, an exactly linked call of its own out while the call is,
// or another call of its own out under the engine's assignment.
func TestDiagnoseWrongKinds(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_WK")
	kids := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			kids[p] = append(kids[p], c)
		}
	}
	cnt := map[string]int{}
	for _, c := range r.childrenOf[n] {
		f, tp := r.parent[c], d.tp[c]
		if tp == diagUnknown || r.evid[c] == evRoot || f == tp {
			continue
		}
		cc := &r.calls[c]
		k := r.kinds.name(cc.kind)
		cnt[k+" wrong"]++
		switch {
		case f < 0:
			cnt[k+" to none"]++
			continue
		case tp < 0:
			cnt[k+" truly none"]++
			continue
		}
		if r.kinds.name(r.calls[f].kind) != r.kinds.name(r.calls[tp].kind) {
			cnt[k+" other request kind"]++
		}
		for _, o := range kids[f] {
			oc := &r.calls[o]
			if o == c || oc.send >= cc.back || oc.back <= cc.send {
				continue
			}
			if r.evid[o] == evExactID || r.evid[o] == evThread {
				cnt[k+" overlaps an exact call"]++
			} else {
				cnt[k+" overlaps a call"]++
			}
		}
	}
	keys := make([]string, 0, len(cnt))
	for k := range cnt {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-50s %d", k, cnt[k])
	}
}

// TestDiagnoseFairOracle searches node WIREPATH_DIAG_FO (beam, then local
// search) with models fitted on the truth as the engine fits its own:
// cross-fitted, so that no link is scored by a model fitted on it; and
// with the engine's cross-fitted models with the truth's delays. The
// oracle of TestDiagnose fits one model on the whole truth, which has
// learnt every true link. WIREPATH_DIAG_FO_MATCH=1 also runs the last
// pass's kind and kind-pair matchings after the local search (the
// engine's answer has had them).
func TestDiagnoseFairOracle(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_FO")
	saved := slices.Clone(r.parent)
	savedConf := slices.Clone(r.conf)
	tru := func(c int32) int32 {
		if d.tp[c] == diagUnknown || r.evid[c] == evRoot {
			return saved[c]
		}
		return d.tp[c]
	}
	wrong := func() int {
		w := 0
		for _, c := range r.childrenOf[n] {
			if d.tp[c] != diagUnknown && r.evid[c] != evRoot && r.parent[c] != d.tp[c] {
				w++
			}
		}
		return w
	}
	wrongByKind := func() map[string]int {
		w := map[string]int{}
		for _, c := range r.childrenOf[n] {
			if d.tp[c] != diagUnknown && r.evid[c] != evRoot && r.parent[c] != d.tp[c] {
				w[r.kinds.name(r.calls[c].kind)]++
			}
		}
		return w
	}
	t.Logf("the engine's answer: wrong calls by kind %v", wrongByKind())
	for _, c := range r.childrenOf[n] {
		r.parent[c], r.conf[c] = tru(c), 1
	}
	mt := r.fit(n, false)
	xt := r.crossFitModels(n, nil, mt, false)
	copy(r.parent, saved)
	copy(r.conf, savedConf)
	me, xe := r.models[n], r.xfits[n]
	run := func(name string, m *nodeModel, x *crossFit) {
		copy(r.parent, saved)
		s := newSearch(r, n, m)
		s.x = x
		s.sum = true
		s.run(r.timeline(n))
		ws := wrong()
		r.improve(n, m, x, 20)
		wl := wrong()
		if os.Getenv("WIREPATH_DIAG_FO_MATCH") != "" {
			var km kindMatchCounts
			var kp kindPairCounts
			r.kindMatch(n, m, x, &km)
			r.kindPairMatch(n, m, x, &kp)
			t.Logf("%-40s + kind and kind-pair matchings: wrong calls %d (kinds kept %d of %d, sets kept %d of %d); by kind %v", name, wrong(), km.kept, km.tried, kp.kept, kp.tried, wrongByKind())
		}
		t.Logf("%-40s wrong calls: search %d, + local search %d (engine %d)", name, ws, wl, func() int {
			w := 0
			for _, c := range r.childrenOf[n] {
				if d.tp[c] != diagUnknown && r.evid[c] != evRoot && saved[c] != d.tp[c] {
					w++
				}
			}
			return w
		}())
	}
	run("engine's cross-fitted models", me, xe)
	run("truth's, one model", mt, nil)
	if xt != nil && xe != nil {
		run("truth's, cross-fitted", mt, xt)
		for i, p := range modelParts {
			h := &crossFit{starts: xe.starts, own: xe.own}
			for k := range h.ms {
				h.ms[k] = hybrid(xe.ms[k], xt.ms[k], i)
			}
			run("engine's cross-fitted with truth's "+p.name, me, h)
		}
	}
	copy(r.parent, saved)
}
