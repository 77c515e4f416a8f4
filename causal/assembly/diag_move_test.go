package assembly

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestDiagnoseMoves classifies the wrong calls of node WIREPATH_DIAG_MV
// (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH) by the single move that
// would put each in its true request, from the engine's final
// assignment: where the call is (background, a request with another call
// of its kind, one with none other) and what its true request holds of
// its kind (none, one, more); whether the true request is among the
// call's alternatives (the local search's targets) and a candidate at
// all; and the move's gain under the engine's cross-fitted objective
// (the two requests' replays and the background rate; the FIFO evidence
// left out). It counts, too, the wrong requests (true requests at the
// node whose calls the engine got wrong) by the class of their first
// wrong call. A diagnostic for docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_MV=app WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run 'TestDiagnoseMoves$' -v -count=1
func TestDiagnoseMoves(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_MV")
	ls := newLocal(r, n, r.models[n], r.xfits[n])
	countKind := func(p int32, kind int32, except int32) int {
		if p < 0 {
			return 0
		}
		k := 0
		for _, e := range ls.kidsOf(p) {
			if e != except && r.calls[e].kind == kind {
				k++
			}
		}
		return k
	}
	type row struct{ n, listed, cand, gain int }
	rows := map[string]*row{}
	class := map[int32]string{}
	for _, c := range r.childrenOf[n] {
		if !d.wrong(c) || r.exact[c] >= 0 {
			continue
		}
		a, q, kind := r.parent[c], d.tp[c], r.calls[c].kind
		from := "bg"
		if a >= 0 {
			from = fmt.Sprintf("req with %d other", min(countKind(a, kind, c), 2))
		}
		to := "bg"
		if q >= 0 {
			to = fmt.Sprintf("req with %d", min(countKind(q, kind, c), 2))
		}
		key := from + " → " + to
		class[c] = key
		rw := rows[key]
		if rw == nil {
			rw = &row{}
			rows[key] = rw
		}
		rw.n++
		if q >= 0 && slices.Contains(ls.targets(c), q) {
			rw.listed++
		}
		if q >= 0 && ls.fitsIn(c, q) {
			rw.cand++
		}
		// the single move's gain
		g := 0.0
		if a >= 0 {
			g += ls.score(a, without(&ls.bufA, ls.kidsOf(a), c)) - ls.ps[r.parentPos[a]]
		} else {
			g -= ls.bg(c)
		}
		if q >= 0 {
			if !ls.fitsIn(c, q) {
				continue
			}
			g += ls.score(q, ls.with(&ls.buf, ls.kidsOf(q), c)) - ls.ps[r.parentPos[q]]
		} else {
			g += ls.bg(c)
		}
		if g > 0 {
			rw.gain++
		}
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return rows[keys[i]].n > rows[keys[j]].n })
	var b strings.Builder
	fmt.Fprintf(&b, "%-36s %6s %8s %8s %10s\n", "where the call is → where it belongs", "calls", "listed", "fits", "move gains")
	for _, k := range keys {
		rw := rows[k]
		fmt.Fprintf(&b, "%-36s %6d %8d %8d %10d\n", k, rw.n, rw.listed, rw.cand, rw.gain)
	}
	// wrong requests by their first wrong call (in order of send)
	first := map[int]int32{}
	for _, c := range r.childrenOf[n] {
		if _, ok := class[c]; !ok {
			continue
		}
		for _, x := range []int{d.req[c], reqOfParent(d, r.parent[c])} {
			if x < 0 {
				continue
			}
			if f, ok := first[x]; !ok || r.sendOf(c) < r.sendOf(f) {
				first[x] = c
			}
		}
	}
	byFirst := map[string]int{}
	for _, c := range first {
		byFirst[class[c]]++
	}
	fmt.Fprintf(&b, "wrong requests (%d) by the class of their first wrong call:\n", len(first))
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-36s %d\n", k, byFirst[k])
	}
	t.Logf("node %s, the wrong calls not exactly linked (gain: under the cross-fitted replay, FIFO left out):\n%s", d.name(n), b.String())
}

// reqOfParent returns the true request of the request (a call) p, or -1.
func reqOfParent(d *diag, p int32) int {
	if p < 0 {
		return -1
	}
	return d.req[p]
}

// TestDiagnoseMoveSets groups the wrong calls of node WIREPATH_DIAG_MV
// into the smallest sets that must move together: calls linked by a
// request they leave or enter (a swap is a set of two calls, a chain of
// three requests handing on one call each a set of two or three), and
// reports, by the set's size, how many sets there are, how many moving
// all their calls to the truth gains under the engine's cross-fitted
// replay (FIFO evidence left out), and how many wrong requests they hold.
func TestDiagnoseMoveSets(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_MV")
	ls := newLocal(r, n, r.models[n], r.xfits[n])
	uf := map[int32]int32{}
	var find func(x int32) int32
	find = func(x int32) int32 {
		p, ok := uf[x]
		if !ok || p == x {
			uf[x] = x
			return x
		}
		uf[x] = find(p)
		return uf[x]
	}
	// a request is its call id; background is a node of its own per call
	// (offset by the number of calls)
	node := func(p, c int32) int32 {
		if p < 0 {
			return int32(len(r.calls)) + c
		}
		return p
	}
	var wrong []int32
	for _, c := range r.childrenOf[n] {
		if !d.wrong(c) || r.exact[c] >= 0 || d.tp[c] >= 0 && !ls.fitsIn(c, d.tp[c]) {
			continue
		}
		wrong = append(wrong, c)
		a, b := find(node(r.parent[c], c)), find(node(d.tp[c], c))
		uf[a] = b
	}
	sets := map[int32][]int32{}
	for _, c := range wrong {
		k := find(node(r.parent[c], c))
		sets[k] = append(sets[k], c)
	}
	type row struct{ sets, gain, calls, cycle, multi, multiGain, multiCalls int }
	rows := map[int]*row{}
	for _, cs := range sets {
		sz := min(len(cs), 5)
		rw := rows[sz]
		if rw == nil {
			rw = &row{}
			rows[sz] = rw
		}
		rw.sets++
		rw.calls += len(cs)
		newKids := map[int32][]int32{}
		g := 0.0
		bgIn := false
		for _, c := range cs {
			for _, p := range []int32{r.parent[c], d.tp[c]} {
				if p >= 0 {
					if _, ok := newKids[p]; !ok {
						newKids[p] = slices.Clone(ls.kidsOf(p))
					}
				}
			}
			if r.parent[c] < 0 || d.tp[c] < 0 {
				bgIn = true
			}
		}
		for _, c := range cs {
			if a := r.parent[c]; a >= 0 {
				newKids[a] = without(new([]int32), newKids[a], c)
			} else {
				g -= ls.bg(c)
			}
			if q := d.tp[c]; q >= 0 {
				newKids[q] = ls.with(new([]int32), newKids[q], c)
			} else {
				g += ls.bg(c)
			}
		}
		for p, ks := range newKids {
			g += ls.score(p, ks) - ls.ps[r.parentPos[p]]
		}
		if g > 0 {
			rw.gain++
		}
		if !bgIn {
			rw.cycle++
		}
		var kinds []int32
		for _, c := range cs {
			if !slices.Contains(kinds, r.calls[c].kind) {
				kinds = append(kinds, r.calls[c].kind)
			}
		}
		if len(kinds) > 1 && os.Getenv("WIREPATH_DIAG_MV_LIST") != "" {
			listSet(t, r, d, cs, g)
		}
		if len(kinds) > 1 {
			rw.multi++
			rw.multiCalls += len(cs)
			if g > 0 {
				rw.multiGain++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %6s %6s %12s %10s %12s %12s %12s\n", "calls/set", "sets", "calls", "no bg in it", "all gain", "2+ kinds", "their calls", "2+k gain")
	for sz := 1; sz <= 5; sz++ {
		if rw := rows[sz]; rw != nil {
			fmt.Fprintf(&b, "%-10d %6d %6d %12d %10d %12d %12d %12d\n", sz, rw.sets, rw.calls, rw.cycle, rw.gain, rw.multi, rw.multiCalls, rw.multiGain)
		}
	}
	t.Logf("node %s, wrong calls (not exact, truth feasible) in sets that move together (5: five or more):\n%s", d.name(n), b.String())
}

// listSet logs the calls of a set of wrong calls that must move together
// (TestDiagnoseMoveSets, WIREPATH_DIAG_MV_LIST): each call's kind, send,
// the request it is in and its true one, and the set's gain g.
func listSet(t *testing.T, r *run, d *diag, cs []int32, g float64) {
	t.Helper()
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	var b strings.Builder
	fmt.Fprintf(&b, "set of %d calls, gain %.1f:\n", len(cs), g)
	for _, c := range cs {
		fmt.Fprintf(&b, "  call %d kind %d send %d: in %d, truly %d\n", c, r.calls[c].kind, r.sendOf(c), r.parent[c], d.tp[c])
	}
	t.Log(b.String())
}
