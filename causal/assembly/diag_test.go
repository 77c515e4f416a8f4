package assembly

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

// diagTruth is the truth a diagnostic compares with: a testbed run's
// (f) or a generated trace's (g, the file `wirepath gen` writes beside
// the trace).
type diagTruth struct {
	f *truth.File
	g *gen.Truth
}

// requests returns the number of true requests (and background trees).
func (s *diagTruth) requests() int {
	if s.g != nil {
		return s.g.NumInstances()
	}
	return len(s.f.Requests)
}

// diagRun reads the saved run the diagnostics look at, named by
// WIREPATH_DIAG_TRACE and WIREPATH_DIAG_TRUTH (a testbed truth.jsonl or a
// generated NAME.truth.tsv), or skips the test.
func diagRun(t *testing.T) (*trace.Trace, *diagTruth) {
	t.Helper()
	tp, fp := os.Getenv("WIREPATH_DIAG_TRACE"), os.Getenv("WIREPATH_DIAG_TRUTH")
	if tp == "" || fp == "" {
		t.Skip("set WIREPATH_DIAG_TRACE and WIREPATH_DIAG_TRUTH to diagnose a run")
	}
	tr, err := trace.ReadFile(tp, trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(fp, ".tsv") {
		g, err := gen.ReadTruthFile(fp)
		if err != nil {
			t.Fatal(err)
		}
		return tr, &diagTruth{g: g}
	}
	f, err := truth.ReadFile(fp)
	if err != nil {
		t.Fatal(err)
	}
	return tr, &diagTruth{f: f}
}

// diagInfer runs the engine with its defaults on the saved run the
// diagnostics look at (diagRun) and returns its state and the truth.
func diagInfer(t *testing.T) (*run, *diag) {
	t.Helper()
	tr, f := diagRun(t)
	e, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := e.inferHook(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, newDiag(r, tr, f)
}

// TestDiagnose classifies the wrong requests of a testbed run by their
// first wrong decision: which link, which evidence decided it, how sure
// the engine was, whether the true request was among the alternatives and
// whether it fitted at all; and, per node, how the true assignment scores
// against the engine's under the engine's own final model (a search
// failure when the truth scores higher, a model failure when lower).
// It is a diagnostic for docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run TestDiagnose -v
//
// WIREPATH_DIAG_BEAM overrides the beam. WIREPATH_DIAG_TRADE=NODE lists
// the node's wrong calls (the engine's answer, and with
// WIREPATH_DIAG_ORACLE the oracle search's) with the times that could
// tell the found request from the true one, and counts the two-call swaps
// and the calls sent together with the call their found request truly
// made. WIREPATH_DIAG_HANDOFF=1 counts the calls handed a pooled
// connection by whether they belong to the freeing call's request.
func TestDiagnose(t *testing.T) {
	tr, f := diagRun(t)
	opt := DefaultOptions()
	if b := os.Getenv("WIREPATH_DIAG_BEAM"); b != "" {
		fmt.Sscan(b, &opt.Beam)
	}
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	var hook func(r *run, n int32, pass int)
	if pn := os.Getenv("WIREPATH_DIAG_PASSES"); pn != "" {
		hook = func(r *run, n int32, pass int) {
			if tr.Str(r.l.nodeSym[n]) != pn {
				return
			}
			by := map[int32]int{}
			bg := 0
			for _, c := range r.childrenOf[n] {
				if p := r.parent[c]; p >= 0 {
					by[p]++
				} else {
					bg++
				}
			}
			var h [4]int
			for _, p := range r.parentsOf[n] {
				h[min(by[p], 3)]++
			}
			if pass == 0 {
				iso := r.isolated(n)
				byKind := map[int32][2]int{}
				for p := range iso {
					v := byKind[r.calls[p].kind]
					v[0]++
					v[1] += by[p]
					byKind[r.calls[p].kind] = v
				}
				all := map[int32]int{}
				long := map[int32]int64{}
				for _, p := range r.parentsOf[n] {
					all[r.calls[p].kind]++
					pc := &r.calls[p]
					if pc.callMsg >= 0 && pc.retMsg >= 0 {
						long[pc.kind] = max(long[pc.kind], pc.rep-pc.arr)
					} else {
						long[pc.kind] = -1
					}
				}
				t.Logf("%s: longest request by kind (ns, -1 unseen end) %v, open span %d", pn, long, r.openSpan(n))
				t.Logf("%s: isolated requests by kind [n, calls]: %v; all requests by kind %v", pn, byKind, all)
			}
			t.Logf("%s pass %d: requests by calls %v, background %d, search %+v", pn, pass, h, bg, r.search[n])
		}
	}
	_, r, err := e.inferHook(context.Background(), tr, hook)
	if err != nil {
		t.Fatal(err)
	}
	d := newDiag(r, tr, f)
	d.report(t)
}

// Kinds of true parent a diagnosed call can have, besides a call.
const (
	diagNone    = -1 // a root or a background call
	diagUnknown = -2 // not mapped to the truth, or its parent unseen
)

type diag struct {
	r  *run
	tr *trace.Trace
	f  *diagTruth
	tp []int32 // per call, its true parent call (or diagNone, diagUnknown)
	// gaps, when set, collects the delays terms sees by position and kind
	gaps map[string][]int64
	req  []int // per call, its true request (-1 none or unknown)
}

func newDiag(r *run, tr *trace.Trace, f *diagTruth) *diag {
	d := &diag{r: r, tr: tr, f: f, tp: make([]int32, len(r.calls)), req: make([]int, len(r.calls))}
	callOf := map[int32]int32{}
	for c := range r.calls {
		if cm := r.calls[c].callMsg; cm >= 0 {
			callOf[cm] = int32(c)
		}
	}
	for c := range r.calls {
		d.tp[c], d.req[c] = diagUnknown, -1
	}
	if f.g != nil {
		d.fromGen(callOf)
		return d
	}
	m := score.MapTrace(tr, f.f, score.DefaultMapOptions())
	for c := range r.calls {
		cm := r.calls[c].callMsg
		if cm < 0 || m.TraceToTruth[cm] < 0 {
			continue
		}
		fm := &f.f.Messages[m.TraceToTruth[cm]]
		if fm.Dir != truth.Call {
			continue
		}
		d.req[c] = fm.Request
		if fm.CallParent < 0 {
			d.tp[c] = diagNone
			continue
		}
		if tt := m.TruthToTrace[fm.CallParent]; tt >= 0 {
			if p, ok := callOf[tt]; ok && r.calls[p].callee == r.calls[c].caller {
				d.tp[c] = p
			}
		}
	}
	return d
}

// fromGen sets the true parents and requests from a generated trace's
// truth, whose messages are the trace's (Observed) and whose instances
// are the requests (background work is an instance of its own).
func (d *diag) fromGen(callOf map[int32]int32) {
	g := d.f.g
	byObs := g.ByObserved()
	parents := score.TruthCallParents(g)
	for c := range d.r.calls {
		cm := d.r.calls[c].callMsg
		if cm < 0 || int(cm) >= len(byObs) || byObs[cm] < 0 {
			continue
		}
		ti := byObs[cm]
		d.req[c] = int(g.Instance[ti])
		pp := parents[ti]
		if pp < 0 {
			d.tp[c] = diagNone
			continue
		}
		if o := g.Observed[pp]; o >= 0 {
			if p, ok := callOf[o]; ok && d.r.calls[p].callee == d.r.calls[c].caller {
				d.tp[c] = p
			}
		}
	}
}

func (d *diag) name(n int32) string { return d.tr.Str(d.r.l.nodeSym[n]) }

func (d *diag) link(c int32) string {
	cc := &d.r.calls[c]
	return d.name(cc.caller) + "→" + d.name(cc.callee)
}

// wrong reports whether call c's request is known to be wrong.
func (d *diag) wrong(c int32) bool {
	if d.r.evid[c] == evRoot {
		return false
	}
	return d.tp[c] != diagUnknown && d.r.parent[c] != d.tp[c]
}

// trueAlt returns the probability the engine's alternatives give the true
// request of c (-1 when not listed).
func (d *diag) trueAlt(c int32) float64 {
	k := d.r.opt.Alternatives
	for _, a := range d.r.alts[int(c)*k : int(c)*k+k] {
		if a.p == d.tp[c] && a.prob > 0 {
			return float64(a.prob)
		}
	}
	return -1
}

// rootReq returns the true request of call p's tree (following the
// engine's calls, whose requests are the truth's).
func (d *diag) cause(c int32) string {
	r := d.r
	switch {
	case d.tp[c] >= 0 && !r.fits(c, d.tp[c]):
		return "truth-infeasible"
	case d.tp[c] >= 0 && r.exact[c] >= 0:
		return "exact-wrong"
	case d.tp[c] == diagNone:
		return "truth-none"
	case r.parent[c] < 0:
		return "made-none"
	case d.trueAlt(c) < 0:
		return "truth-unlisted"
	}
	return "truth-listed"
}

func confBin(v float32) string {
	switch {
	case v >= 0.99:
		return "≥.99"
	case v >= 0.9:
		return ".9-.99"
	case v >= 0.6:
		return ".6-.9"
	}
	return "<.6"
}

type diagRow struct {
	n     int
	sumAl float64
}

// rowOf returns m's row for key k, added when missing.
func rowOf(m map[string]*diagRow, k string) *diagRow {
	row := m[k]
	if row == nil {
		row = &diagRow{}
		m[k] = row
	}
	return row
}

// decision describes call c's decision: its link, evidence, stated
// confidence and cause, in columns.
func (d *diag) decision(c int32) string {
	r := d.r
	return fmt.Sprintf("%-22s %-14s %-6s %-16s", d.link(c), evidenceNames[r.evid[c]], confBin(r.conf[c]), d.cause(c))
}

func (d *diag) report(t *testing.T) {
	r := d.r
	// the calls each true request's correctness depends on: its own, and
	// any the engine gave it
	byReq := map[int][]int32{}
	for c := range r.calls {
		c := int32(c)
		if !d.wrong(c) {
			continue
		}
		if q := d.req[c]; q >= 0 {
			byReq[q] = append(byReq[q], c)
		}
		if p := r.parent[c]; p >= 0 && d.req[p] >= 0 && d.req[p] != d.req[c] {
			byReq[d.req[p]] = append(byReq[d.req[p]], c)
		}
	}
	firsts := map[string]*diagRow{}
	all := map[string]*diagRow{}
	for c := range r.calls {
		c := int32(c)
		if !d.wrong(c) {
			continue
		}
		rowOf(all, d.decision(c)).n++
	}
	for _, cs := range byReq {
		first := slices.MinFunc(cs, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		row := rowOf(firsts, d.decision(first))
		row.n++
		if a := d.trueAlt(first); a > 0 {
			row.sumAl += a
		}
	}
	t.Logf("wrong requests (by a wrong call): %d of %d", len(byReq), d.f.requests())
	t.Logf("first wrong decision of each wrong request: link, evidence, stated, cause: requests (mean prob of truth)")
	printRows(t, firsts)
	t.Logf("all wrong calls: link, evidence, stated, cause: calls")
	printRows(t, all)
	d.objectives(t)
	for n := range r.childrenOf {
		if os.Getenv("WIREPATH_DIAG_EFIRST") == d.name(int32(n)) {
			d.firstWrong(t, int32(n), r.models[n])
		}
	}
	for n := range r.childrenOf {
		if os.Getenv("WIREPATH_DIAG_TRADE") == d.name(int32(n)) {
			t.Logf("%s, the engine's answer:", d.name(int32(n)))
			d.trades(t, int32(n))
		}
	}
	if os.Getenv("WIREPATH_DIAG_HANDOFF") != "" {
		d.handoffs(t)
	}
	if os.Getenv("WIREPATH_DIAG_ORACLE") != "" {
		d.oracle(t)
	}
}

// handoffs counts, per caller, the calls handed a serial connection just
// freed (run.freed) by whether the call belongs to the request of the
// call whose reply freed it, in the truth and in the engine's answer, and
// how many of them the engine got right.
func (d *diag) handoffs(t *testing.T) {
	r := d.r
	prevOn := map[int32]int32{} // a handed call → the call whose reply freed its connection
	last := map[uint32]int32{}
	ord := make([]int32, 0, len(r.calls))
	for c := range r.calls {
		if r.calls[c].callMsg >= 0 && r.calls[c].send != noTime {
			ord = append(ord, int32(c))
		}
	}
	slices.SortStableFunc(ord, func(a, b int32) int { return cmpTime(r.calls[a].send, r.calls[b].send) })
	for _, c := range ord {
		m := &r.l.msgs[r.calls[c].callMsg]
		if m.Conn == 0 || m.Stream != 0 {
			continue
		}
		if p, ok := last[m.Conn]; ok && r.freed[c] != noTime && r.calls[p].back == r.freed[c] {
			prevOn[c] = p
		}
		last[m.Conn] = c
	}
	type row struct{ handed, trueSame, trueOther, engSame, engOther, right, sameWrong int }
	rows := map[string]*row{}
	for c, p := range prevOn {
		if d.tp[c] == diagUnknown || d.tp[p] == diagUnknown {
			continue
		}
		w := rows[d.name(r.calls[c].caller)]
		if w == nil {
			w = &row{}
			rows[d.name(r.calls[c].caller)] = w
		}
		w.handed++
		if d.req[c] == d.req[p] {
			w.trueSame++
		} else {
			w.trueOther++
		}
		same := r.parent[c] >= 0 && r.parent[c] == r.parent[p]
		if same {
			w.engSame++
		} else {
			w.engOther++
		}
		if !d.wrong(c) {
			w.right++
		} else if same {
			w.sameWrong++
		}
	}
	for n, m := range r.models {
		if m != nil {
			byP := map[int32][]int32{}
			for _, c := range r.childrenOf[n] {
				if p := r.parent[c]; p >= 0 {
					byP[p] = append(byP[p], c)
				}
			}
			t.Logf("%s: handoffs apart %v (share handed %.2f, overlapping %.2f, calls sent with more out than requests open %.2f)", d.name(int32(n)), m.handApart, r.handedShare(int32(n)), overlapShare(r, byP), r.overOpenShare(int32(n)))
		}
		if m != nil && m.waitInformative() {
			var lr [waitBins]float64
			for b := range lr {
				lr[b] = m.logWait(int8(b))
			}
			t.Logf("%s: waiters' log ratios by rank %.2f (link %.0f, other %.0f)", d.name(int32(n)), lr, m.wait.link, m.wait.other)
			// the same counts under the true assignment
			tru := func(c int32) int32 {
				if d.tp[c] == diagUnknown || d.tp[c] == diagNone {
					return -1
				}
				return d.tp[c]
			}
			byParent := map[int32][]int32{}
			for _, c := range r.childrenOf[n] {
				if a := tru(c); a >= 0 {
					byParent[a] = append(byParent[a], c)
				}
			}
			for _, ks := range byParent {
				slices.SortStableFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
			}
			tm := newNodeModel(1, 1)
			r.observeWaiters(int32(n), tm, tru, byParent, one)
			for b := range lr {
				lr[b] = tm.logWait(int8(b))
			}
			t.Logf("%s: truth: waiters' log ratios by rank %.2f (link %.0f, other %.0f)", d.name(int32(n)), lr, tm.wait.link, tm.wait.other)
		}
	}
	for name, w := range rows {
		t.Logf("%s: handed calls %d: truly the freeing call's request %d, another %d; engine: same request %d, another %d; right %d, wrong and given the freeing call's request %d",
			name, w.handed, w.trueSame, w.trueOther, w.engSame, w.engOther, w.right, w.sameWrong)
	}
}

// oracle fits each node's model on the true assignment and searches again
// with it: what the model and search get when learning is perfect.
func (d *diag) oracle(t *testing.T) {
	r := d.r
	var b strings.Builder
	for n := range r.childrenOf {
		n := int32(n)
		if r.models[n] == nil || r.entry[n] {
			continue
		}
		saved := slices.Clone(r.parent)
		tru := func(c int32) int32 {
			if d.tp[c] == diagUnknown || r.evid[c] == evRoot {
				return saved[c]
			}
			return d.tp[c]
		}
		for _, c := range r.childrenOf[n] {
			r.parent[c] = tru(c)
			r.conf[c] = 1
		}
		m := r.fit(n, false)
		s := newSearch(r, n, m)
		if b := os.Getenv("WIREPATH_DIAG_OBEAM"); b != "" {
			fmt.Sscan(b, &s.beam)
		}
		s.sum = true
		s.run(r.timeline(n))
		searched := slices.Clone(r.parent)
		if os.Getenv("WIREPATH_DIAG_FIRST") == d.name(n) {
			d.firstWrong(t, n, m)
		}
		if os.Getenv("WIREPATH_DIAG_TRACK") != "" {
			d.track(t, n, m, tru)
		}
		// the chain matching's candidate as the matching decodes it
		wrongC, crossC := -1, 0
		r.onChains = func(_ int32, calls, cand []int32, crossings int) {
			wrongC, crossC = 0, crossings
			for i, c := range calls {
				if d.tp[c] != diagUnknown && r.evid[c] != evRoot && cand[i] != d.tp[c] {
					wrongC++
				}
			}
		}
		r.improve(n, m, nil, 20)
		var sc chainCounts
		r.singleMatch(n, m, nil, &sc, false)
		wrongOf := func(asg func(c int32) int32) int {
			w := 0
			for _, c := range r.childrenOf[n] {
				if d.tp[c] != diagUnknown && r.evid[c] != evRoot && asg(c) != d.tp[c] {
					w++
				}
			}
			return w
		}
		wrong0 := wrongOf(func(c int32) int32 { return saved[c] })
		wrongS := wrongOf(func(c int32) int32 { return searched[c] })
		wrongL := wrongOf(func(c int32) int32 { return r.parent[c] })
		if os.Getenv("WIREPATH_DIAG_TRADE") == d.name(n) {
			d.trades(t, n)
		}
		oe := r.objective(n, m, func(c int32) int32 { return r.parent[c] })
		var cc chainCounts
		r.chainMatch(n, m, nil, &cc)
		r.onChains = nil
		wrongM := wrongOf(func(c int32) int32 { return r.parent[c] })
		om := r.objective(n, m, func(c int32) int32 { return r.parent[c] })
		d.split(t, n, m, tru)
		d.chains(t, n, tru)
		d.termReport(&b, n, m, nil, func(c int32) int32 { return saved[c] }, tru)
		if os.Getenv("WIREPATH_DIAG_SWAP") != "" {
			copy(r.parent, saved)
			d.swaps(&b, n, r.models[n], m, saved)
		}
		ot := r.objective(n, m, tru)
		fmt.Fprintf(&b, "  %-10s calls %5d wrong: engine %5d, oracle search %5d, oracle+local+single %5d (single-call matching %+v); oracle model: truth %.1f, found %.1f (truth−found %.1f)\n",
			d.name(n), len(r.childrenOf[n]), wrong0, wrongS, wrongL, sc, ot, oe, ot-oe)
		if cc.tried > 0 {
			fmt.Fprintf(&b, "  %-10s   chain matching: candidate %d wrong, %d chains crossed; kept %d: %d wrong, objective %.1f (truth−found %.1f)\n",
				d.name(n), wrongC, crossC, cc.kept, wrongM, om, ot-om)
		}
		copy(r.parent, saved)
	}
	t.Logf("per node, with the model fitted on the truth:\n%s", b.String())
}

func printRows(t *testing.T, rows map[string]*diagRow) {
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return rows[b].n - rows[a].n })
	for _, k := range keys {
		row := rows[k]
		t.Logf("  %s %5d  %.2f", k, row.n, row.sumAl/float64(row.n))
	}
}

// objectives compares, per node, the engine's assignment with the true one
// (where known; the engine's elsewhere) under the node's final model.
func (d *diag) objectives(t *testing.T) {
	r := d.r
	var b, terms strings.Builder
	for n := range r.childrenOf {
		n := int32(n)
		if r.models[n] == nil || r.entry[n] {
			continue
		}
		wrong := 0
		for _, c := range r.childrenOf[n] {
			if d.wrong(c) {
				wrong++
			}
		}
		if wrong == 0 {
			continue
		}
		eng := r.objective(n, r.models[n], func(c int32) int32 { return r.parent[c] })
		tru := r.objective(n, r.models[n], func(c int32) int32 {
			if d.tp[c] == diagUnknown || r.evid[c] == evRoot {
				return r.parent[c]
			}
			return d.tp[c]
		})
		d.chains(t, n, func(c int32) int32 {
			if d.tp[c] == diagUnknown || r.evid[c] == evRoot {
				return r.parent[c]
			}
			return d.tp[c]
		})
		fmt.Fprintf(&b, "  %-10s wrong calls %5d of %5d  engine %.1f  truth %.1f  truth−engine %.1f\n", d.name(n), wrong, len(r.childrenOf[n]), eng, tru, tru-eng)
		d.termReport(&terms, n, r.models[n], r.xfits[n], func(c int32) int32 { return r.parent[c] }, func(c int32) int32 {
			if d.tp[c] == diagUnknown || r.evid[c] == evRoot {
				return r.parent[c]
			}
			return d.tp[c]
		})
	}
	if b.Len() > 0 {
		t.Logf("per node, under the engine's final model (truth−engine > 0: the search missed a better assignment):\n%s", b.String())
		t.Logf("per node, the terms the truth and the engine differ by under the engine's final model:\n%s", terms.String())
	}
}

// scoreTrail runs search s over node n's timeline and returns, after
// each event, the best and the worst score of its hypotheses and whether
// the beam was full.
func scoreTrail(s *search, evs []event) (best, worst []float64, full []bool) {
	for i := range evs {
		s.step(&evs[i])
		b, w := math.Inf(-1), math.Inf(1)
		for _, h := range s.hyps {
			b, w = max(b, h.score), min(w, h.score)
		}
		best, worst, full = append(best, b), append(worst, w), append(full, len(s.hyps) >= s.beam)
		if len(s.hyps) == 1 && len(s.hyps[0].slots) == 0 && len(s.hyps[0].owns) == 0 {
			s.closeWindow()
		} else if len(s.pend) >= 2*s.commitLag {
			s.commit(s.commitLag, true)
		}
	}
	s.closeWindow()
	return
}

// track follows the true assignment through the search of node n under
// model m: how often it would have left the beam, and how far behind the
// best hypothesis it fell.
func (d *diag) track(t *testing.T, n int32, m *nodeModel, tru func(c int32) int32) {
	r := d.r
	evs := r.timeline(n)
	savedExact := slices.Clone(r.exact)
	savedParent := slices.Clone(r.parent)
	bs := newSearch(r, n, m)
	b, w, full := scoreTrail(bs, evs)
	for _, c := range r.childrenOf[n] {
		if p := tru(c); p >= 0 {
			r.exact[c] = p
		}
	}
	ts := newSearch(r, n, m)
	tb, _, _ := scoreTrail(ts, evs)
	t.Logf("  %s: beam search %+v; truth %+v", d.name(n), bs.cnt, ts.cnt)
	copy(r.exact, savedExact)
	copy(r.parent, savedParent)
	out, maxDef, firstOut := 0, 0.0, -1
	var defs []float64
	for i := range evs {
		if evs[i].typ != evSend {
			continue
		}
		if full[i] && tb[i] < w[i] {
			out++
			if firstOut < 0 {
				firstOut = i
			}
		}
		maxDef = max(maxDef, b[i]-tb[i])
		defs = append(defs, b[i]-tb[i])
	}
	if k := os.Getenv("WIREPATH_DIAG_EVENTS"); k != "" {
		var ne int
		fmt.Sscan(k, &ne)
		t0 := evs[0].t
		for i := range evs[:min(ne, len(evs))] {
			e := &evs[i]
			pa := int32(-9)
			if e.typ == evSend {
				pa = tru(e.call)
			}
			t.Logf("    ev %3d t %8.3f typ %d call %5d truth-parent %5d best %9.1f truth %9.1f worst %9.1f", i, float64(e.t-t0)/1e6, e.typ, e.call, pa, b[i], tb[i], w[i])
		}
	}
	slices.Sort(defs)
	q := func(f float64) float64 { return defs[int(f*float64(len(defs)-1))] }
	t.Logf("  %s: sends %d; truth below the beam's worst at %d sends (first at event %d of %d); best−truth: median %.1f, 90%% %.1f, max %.1f, final %.1f",
		d.name(n), len(defs), out, firstOut, len(evs), q(0.5), q(0.9), maxDef, b[len(b)-1]-tb[len(tb)-1])
}

// split prints the parts of the objective for the truth and for the
// current assignment: background terms, requests' replays, FIFO.
func (d *diag) split(t *testing.T, n int32, m *nodeModel, tru func(c int32) int32) {
	r := d.r
	parts := func(asg func(c int32) int32) (bg, rep, fifo float64, nbg int) {
		by := map[int32][]int32{}
		for _, c := range r.childrenOf[n] {
			if p := asg(c); p < 0 {
				bg += m.logBackgroundOf(c, r.calls[c].kind)
				nbg++
			} else {
				by[p] = append(by[p], c)
			}
		}
		s := &search{r: r, m: m}
		for _, p := range r.parentsOf[n] {
			rep += r.replay(s, p, by[p])
		}
		return bg, rep, r.fifoObjective(n, m, asg), nbg
	}
	a, b, c, k := parts(tru)
	e, f, g, l := parts(func(c int32) int32 { return r.parent[c] })
	t.Logf("  %s: truth bg %.1f (%d) replay %.1f fifo %.1f; found bg %.1f (%d) replay %.1f fifo %.1f", d.name(n), a, k, b, c, e, l, f, g)
}

// firstWrong prints node n's first wrong calls in order of send, with the
// true and the chosen requests' recent history.
func (d *diag) firstWrong(t *testing.T, n int32, m *nodeModel) {
	r := d.r
	kids := slices.Clone(r.childrenOf[n])
	slices.SortFunc(kids, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	t0 := r.sendOf(kids[0])
	hist := func(p int32, before int64) string {
		if p < 0 {
			return "none"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "p%d arr %.3f rep %.3f:", p, float64(r.arrOf(p)-t0)/1e6, float64(r.calls[p].rep-t0)/1e6)
		for _, c := range kids {
			if r.sendOf(c) <= before && d.tp[c] == p {
				fmt.Fprintf(&b, " [k%d %.3f-%.3f]", r.calls[c].kind, float64(r.sendOf(c)-t0)/1e6, float64(r.calls[c].back-t0)/1e6)
			}
		}
		return b.String()
	}
	shown := 0
	for _, c := range kids {
		if d.tp[c] == diagUnknown || r.parent[c] == d.tp[c] || shown >= 8 {
			continue
		}
		shown++
		t.Logf("call %d kind %d sent %.3f back %.3f conf %.2f\n    truth  %s\n    chosen %s", c, r.calls[c].kind,
			float64(r.sendOf(c)-t0)/1e6, float64(r.calls[c].back-t0)/1e6, r.conf[c], hist(d.tp[c], r.sendOf(c)), hist(r.parent[c], r.sendOf(c)))
	}
}

// chains counts node n's requests whose calls are wrong but are exactly
// the true calls of another request (a permutation of whole chains).
func (d *diag) chains(t *testing.T, n int32, tru func(c int32) int32) {
	r := d.r
	eng, tr := map[int32][]int32{}, map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			eng[p] = append(eng[p], c)
		}
		if p := tru(c); p >= 0 {
			tr[p] = append(tr[p], c)
		}
	}
	key := func(cs []int32) string { slices.Sort(cs); return fmt.Sprint(cs) }
	trueSets := map[string]bool{}
	for _, cs := range tr {
		trueSets[key(cs)] = true
	}
	hist := func(by map[int32][]int32) [4]int {
		var h [4]int
		for _, p := range r.parentsOf[n] {
			h[min(len(by[p]), 3)]++
		}
		return h
	}
	t.Logf("  %s: requests by number of calls (0/1/2/3+): engine %v, truth %v", d.name(n), hist(eng), hist(tr))
	wrong, perm := 0, 0
	for _, p := range r.parentsOf[n] {
		if key(eng[p]) == key(tr[p]) {
			continue
		}
		wrong++
		if len(eng[p]) > 0 && trueSets[key(eng[p])] {
			perm++
		}
	}
	t.Logf("  %s: requests with wrong calls %d, of which holding another request's whole true chain %d", d.name(n), wrong, perm)
}

// termSums are an assignment's objective at one node, split by term.
type termSums map[string]float64

// terms returns the objective of assignment asg at node n under model m,
// or the cross-fitted models the node's last pass searched with (as
// local.objective scores it), split by term: the call graph (trans) and the delays
// (gap) by position and kind, the reply's (end), overlap, repeat, size
// and origin, the payload evidence, FIFO and background.
func (d *diag) terms(n int32, m *nodeModel, x *crossFit, asg func(c int32) int32) termSums {
	r := d.r
	out := termSums{}
	by := map[int32][]int32{}
	at := func(t int64) *nodeModel {
		if x == nil {
			return m
		}
		return x.scoring(t)
	}
	for _, c := range r.childrenOf[n] {
		if p := asg(c); p < 0 {
			out[fmt.Sprintf("background k%d", r.calls[c].kind)] += at(r.sendOf(c)).logBackgroundOf(c, r.calls[c].kind)
		} else {
			by[p] = append(by[p], c)
		}
	}
	s := &search{r: r, m: m}
	for _, p := range r.parentsOf[n] {
		s.m = at(r.arrOf(p))
		d.replayTerms(s, p, by[p], out)
	}
	out["fifo"] += r.fifoObjective(n, m, asg)
	return out
}

// replayTerms adds request p's terms with its calls ks to out, as replay
// scores them.
func (d *diag) replayTerms(s *search, p int32, ks []int32, out termSums) {
	r, m := d.r, s.m
	pc := &r.calls[p]
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: pc.arr}
	if pc.callMsg < 0 {
		lo, _ := r.window(p, r.openSpan(pc.callee))
		sl.last = lo + r.tol
	}
	for _, st := range r.steps(nil, ks) {
		cc := &r.calls[st.c]
		if st.back {
			sl.backFrom(st.c, cc)
			continue
		}
		cx := s.ctx(&sl)
		scr := m.scorer(cx, cc.kind)
		at := fmt.Sprintf("pos %d k%d", cx.pos, cc.kind)
		out["trans "+at] += scr.logT
		out["gap "+at] += r.callGap(m, scr, st.c, sl.last, r.arrOf(p))
		if d.gaps != nil {
			gl, _, _ := r.observedGaps(m, st.c, sl.last, r.arrOf(p))
			d.gaps[at] = append(d.gaps[at], gl)
		}
		out["overlap"] += m.logOverlap(cx.pk, sl.out > 0)
		out["repeat"] += m.logRepeat(sl.kinds, kindBit(cc.kind))
		if sl.lastRet >= 0 && cc.reqBytes >= 0 {
			if lr := &r.calls[sl.lastRet]; lr.repBytes >= 0 {
				out["size"] += m.logSize(lr.kind, cc.kind, cx.pk, cc.reqBytes-lr.repBytes)
			}
		}
		out["origin"] += m.logOrigin(cx.pk, cc.kind, pc.reqBytes, cc.reqBytes)
		out["evidence"] += r.evidenceScore(m, st.c, &sl)
		sl = s.extend(&sl, st.c)
	}
	if pc.retMsg >= 0 && pc.flags&flagOneWay == 0 && sl.out > 0 {
		out["infeasible"] = math.Inf(-1)
		return
	}
	if pc.retMsg < 0 || pc.flags&flagOneWay != 0 {
		return
	}
	cx := s.ctx(&sl)
	scr := m.scorer(cx, endKind)
	at := fmt.Sprintf("pos %d end", cx.pos)
	out["trans "+at] += scr.logT
	g := scr.gap(pc.rep-sl.last, pc.rep-r.arrOf(p))
	out["gap "+at] += g
	if sl.lastRet >= 0 {
		if lr := &r.calls[sl.lastRet]; lr.repBytes >= 0 && pc.repBytes >= 0 {
			out["size end"] += m.logSize(lr.kind, endKind, cx.pk, pc.repBytes-lr.repBytes)
		}
	}
	out["origin end"] += m.logOrigin(cx.pk, endKind, pc.reqBytes, pc.repBytes)
}

// termReport prints, for node n, the terms by which the truth's
// objective differs from the engine's assignment eng (largest first)
// under model m (cross-fitted as x, if not nil).
func (d *diag) termReport(b *strings.Builder, n int32, m *nodeModel, x *crossFit, eng, tru func(c int32) int32) {
	r := d.r
	te := d.terms(n, m, x, eng)
	tt := d.terms(n, m, x, tru)
	keys := []string{}
	for k := range te {
		keys = append(keys, k)
	}
	for k := range tt {
		if _, ok := te[k]; !ok {
			keys = append(keys, k)
		}
	}
	diff := func(k string) float64 { return tt[k] - te[k] }
	d.gaps = map[string][]int64{}
	d.terms(n, m, x, eng)
	ge := d.gaps
	d.gaps = map[string][]int64{}
	d.terms(n, m, x, tru)
	gt := d.gaps
	d.gaps = nil
	quant := func(v []int64) string {
		if len(v) == 0 {
			return "-"
		}
		slices.Sort(v)
		q := func(f float64) float64 { return float64(v[int(f*float64(len(v)-1))]) / 1e6 }
		return fmt.Sprintf("n %d: %.2f %.2f %.2f %.2f %.2f ms", len(v), q(0.05), q(0.25), q(0.5), q(0.75), q(0.95))
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Compare(math.Abs(diff(b)), math.Abs(diff(a)))
	})
	sum := 0.0
	for _, k := range keys {
		sum += diff(k)
	}
	fmt.Fprintf(b, "  %s: truth−engine by term (total %.1f):\n", d.name(n), sum)
	saved, savedConf := slices.Clone(r.parent), slices.Clone(r.conf)
	for _, c := range r.childrenOf[n] {
		r.parent[c], r.conf[c] = tru(c), 1
	}
	mt := r.fit(n, false)
	copy(r.parent, saved)
	copy(r.conf, savedConf)
	lrs := func(t *lrTable) string {
		var v []string
		for i := range t.link {
			v = append(v, fmt.Sprintf("%.2f", t.logLR(i)))
		}
		return strings.Join(v, " ")
	}
	fmt.Fprintf(b, "    FIFO log LR by bin: engine's model %s (links %v, others %v); fitted on the truth %s (links %v, others %v)\n",
		lrs(&m.fifo), m.fifo.link, m.fifo.other, lrs(&mt.fifo), mt.fifo.link, mt.fifo.other)
	for _, a := range []struct {
		name string
		t    *tokAssoc
	}{{"engine's", m.assoc}, {"truth's", mt.assoc}} {
		if a.t == nil {
			continue
		}
		for x := range a.t.pred {
			nreq, npair, best := 0, 0, 0.0
			for k, v := range a.t.req {
				if k.assocCtx == x {
					nreq++
					_ = v
				}
			}
			for k, v := range a.t.pair {
				if k.assocCtx == x {
					npair++
					best = max(best, v)
				}
			}
			fmt.Fprintf(b, "    assoc %s model: context k%d→k%d: %.0f links, %d predictive request tokens, %d pairs (largest %.0f)\n", a.name, x.pk, x.ck, a.t.ctx[x], nreq, npair, best)
		}
	}
	if m.tok.nl > 0 || mt.tok.nl > 0 {
		fmt.Fprintf(b, "    tokens log LR by bin: engine's model %s (links %.0f, others %.0f); fitted on the truth %s (links %.0f, others %.0f)\n",
			lrs(&m.tok), m.tok.link, m.tok.other, lrs(&mt.tok), mt.tok.link, mt.tok.other)
	}
	for i, k := range keys {
		if i >= 12 || math.Abs(diff(k)) < 1 {
			break
		}
		fmt.Fprintf(b, "    %-28s truth %10.1f engine %10.1f  truth−engine %8.1f\n", k, tt[k], te[k], diff(k))
		if g, ok := strings.CutPrefix(k, "gap "); ok && !strings.HasSuffix(g, "end") {
			fmt.Fprintf(b, "      delays (5/25/50/75/95 %%): truth %s; engine %s\n", quant(gt[g]), quant(ge[g]))
		}
	}
}

// modelParts are the parts of a node's model swapped between the model
// fitted on the engine's assignment and the one fitted on the truth.
var modelParts = []struct {
	name string
	swap func(dst, src *nodeModel)
}{
	{"delays", func(d, s *nodeModel) { d.gaps, d.anchorW = s.gaps, s.anchorW }},
	{"first delays", func(d, s *nodeModel) { d.gaps = mergeGaps(d.gaps, s.gaps, true) }},
	{"later delays", func(d, s *nodeModel) { d.gaps = mergeGaps(d.gaps, s.gaps, false) }},
	{"call graph", func(d, s *nodeModel) { d.trans = s.trans }},
	{"background", func(d, s *nodeModel) { d.bg = s.bg }},
	{"overlap", func(d, s *nodeModel) { d.ov = s.ov }},
	{"size, origin", func(d, s *nodeModel) { d.size, d.origin = s.size, s.origin }},
	{"fifo, repeat", func(d, s *nodeModel) { d.fifo, d.rep = s.fifo, s.rep }},
	{"tokens", func(d, s *nodeModel) { d.tok, d.assoc = s.tok, s.assoc }},
	{"kind sets", func(d, s *nodeModel) { d.sets = s.sets }},
}

// hybrid returns a copy of model m with part i taken from src (fresh
// caches).
func hybrid(m, src *nodeModel, i int) *nodeModel {
	h := *m
	h.tcache = make(map[tcKey]float64)
	h.scorers = make(map[uint64]*scorerEntry)
	h.gcache = [2]map[gKey]*[nGapBins]float64{make(map[gKey]*[nGapBins]float64), make(map[gKey]*[nGapBins]float64)}
	if i >= 0 {
		modelParts[i].swap(&h, src)
	}
	return &h
}

// swaps searches node n (beam search and local search, no cross-fitting)
// with the model fitted on the engine's assignment (me) and on the truth
// (mt), and with each part of one taken from the other: which learnt part
// makes the search miss the truth.
func (d *diag) swaps(b *strings.Builder, n int32, me, mt *nodeModel, saved []int32) {
	r := d.r
	wrongWith := func(m *nodeModel) int {
		copy(r.parent, saved)
		s := newSearch(r, n, m)
		s.sum = true
		s.run(r.timeline(n))
		r.improve(n, m, nil, 20)
		w := 0
		for _, c := range r.childrenOf[n] {
			if d.tp[c] != diagUnknown && r.evid[c] != evRoot && r.parent[c] != d.tp[c] {
				w++
			}
		}
		return w
	}
	fmt.Fprintf(b, "  %-10s wrong calls searching with the model fitted on: the engine's answer %d, the truth %d\n", d.name(n), wrongWith(hybrid(me, mt, -1)), wrongWith(hybrid(mt, me, -1)))
	for i, p := range modelParts {
		fmt.Fprintf(b, "  %-10s   %-12s  engine's model with the truth's: %5d; truth's model with the engine's: %5d\n", d.name(n), p.name, wrongWith(hybrid(me, mt, i)), wrongWith(hybrid(mt, me, i)))
	}
	copy(r.parent, saved)
}

// mergeGaps returns dst's delay histograms with those of the first
// message of a request (first) or of the later ones taken from src; the
// node-wide levels stay dst's.
func mergeGaps(dst, src [2]map[gKey]*hist, first bool) [2]map[gKey]*hist {
	var out [2]map[gKey]*hist
	for a := range out {
		out[a] = map[gKey]*hist{}
		for k, h := range dst[a] {
			if k.lvl >= 2 || (k.prev == noKind) != first {
				out[a][k] = h
			}
		}
		for k, h := range src[a] {
			if k.lvl < 2 && (k.prev == noKind) == first {
				out[a][k] = h
			}
		}
	}
	return out
}

// trades prints node n's wrong calls under the current assignment with
// the times that could tell the found request from the true one (ms,
// relative to the call's send).
func (d *diag) trades(t *testing.T, n int32) {
	r := d.r
	trueCall := map[int32]int32{} // true parent -> its call (the first)
	for _, c := range r.childrenOf[n] {
		if p := d.tp[c]; p >= 0 {
			if _, ok := trueCall[p]; !ok {
				trueCall[p] = c
			}
		}
	}
	ms := func(x int64) float64 { return float64(x) / 1e6 }
	k, wrong, paired, near := 0, 0, 0, 0
	for _, c := range r.childrenOf[n] {
		f, tp := r.parent[c], d.tp[c]
		if tp == diagUnknown || r.evid[c] == evRoot || f == tp {
			continue
		}
		wrong++
		if oc, ok := trueCall[f]; ok && f >= 0 && oc != c {
			if d.tp[oc] == f && r.parent[oc] == tp {
				paired++
			}
			if dt := r.sendOf(oc) - r.sendOf(c); dt > -tradeNear && dt < tradeNear {
				near++
			}
		}
		if k >= 40 {
			continue
		}
		k++
		cc := &r.calls[c]
		line := fmt.Sprintf("call %d send 0 freed %v back %.3f", c, r.freed[c] != noTime, ms(cc.back-cc.send))
		for _, q := range []struct {
			name string
			p    int32
		}{{"true", tp}, {"found", f}} {
			if q.p < 0 {
				line += fmt.Sprintf(" | %s none", q.name)
				continue
			}
			pc := &r.calls[q.p]
			line += fmt.Sprintf(" | %s arr %.3f rep %.3f", q.name, ms(pc.arr-cc.send), ms(pc.rep-cc.send))
			if oc, ok := trueCall[q.p]; ok && oc != c {
				o := &r.calls[oc]
				line += fmt.Sprintf(" own call send %.3f back %.3f freed %v", ms(o.send-cc.send), ms(o.back-cc.send), r.freed[oc] != noTime)
			}
		}
		t.Log(line)
	}
	t.Logf("%s: %d wrong calls; %d in a two-call swap, %d sent within %.1f ms of the call their found request truly made", d.name(n), wrong, paired, near, float64(tradeNear)/1e6)
}

// tradeNear is how close two calls' sends must be for trades to count them
// as sent together.
const tradeNear = 100_000 // ns

// overlapShare returns the share of the calls of an assignment (calls by
// request) sent while another call of their request was out, of the
// requests that made more than one; their order is made by send (as
// fitWith's): how far a node's requests are not the waiters waitRanks
// ranks (a request that waits for a pooled connection with a call of
// its own out: fan-out).
func overlapShare(r *run, byParent map[int32][]int32) float64 {
	busy, all := r.overlapCounts(byParent)
	if all == 0 {
		return 0
	}
	return float64(busy) / float64(all)
}
