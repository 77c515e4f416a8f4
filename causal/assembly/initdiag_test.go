package assembly

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/report"
)

// TestInitialDelays compares, on a saved run, each node's initial model
// (fitted on no assignment) with the truth: the quantiles of a request's
// first delay (its arrival to its first call, by kind of request and of
// call) in the truth and under the initial model's density, and the share
// of requests whose first message is each kind. Run by hand:
//
//	WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run TestInitialDelays -v
func TestInitialDelays(t *testing.T) {
	tr, f := diagRun(t)
	opt := DefaultOptions()
	if os.Getenv("WIREPATH_DIAG_INIT") != "" {
		opt.Init = Init(os.Getenv("WIREPATH_DIAG_INIT"))
	}
	agg := causal.NewAggregator(tr, opt.Aggregate)
	r := newRun(opt, tr, agg.Namer())
	r.collectIsolated(1)
	d := newDiag(r, tr, f)
	for n := range r.childrenOf {
		n := int32(n)
		if r.entry[n] || len(r.childrenOf[n]) == 0 {
			continue
		}
		r.exactLinks(n)
		m := r.initialModel(n)
		t.Log(d.firstDelays(n, m))
		t.Log(d.laterDelays(n, m))
	}
}

// firstDelays reports node n's first delays in the truth and under model m.
func (d *diag) firstDelays(n int32, m *nodeModel) string {
	r := d.r
	type fk struct{ pk, ck int32 }
	first := map[int32]int32{} // request -> its first true call
	for _, c := range r.childrenOf[n] {
		p := d.tp[c]
		if p < 0 {
			continue
		}
		if f, ok := first[p]; !ok || r.sendOf(c) < r.sendOf(f) {
			first[p] = c
		}
	}
	delays := map[fk][]int64{}
	for p, c := range first {
		if r.calls[p].callMsg < 0 {
			continue
		}
		k := fk{r.calls[p].kind, r.calls[c].kind}
		delays[k] = append(delays[k], r.sendOf(c)-r.calls[p].arr)
	}
	keys := make([]fk, 0, len(delays))
	for k := range delays {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b fk) int { return len(delays[b]) - len(delays[a]) })
	s := fmt.Sprintf("%s: %d requests, %d calls\n", d.name(n), len(r.parentsOf[n]), len(r.childrenOf[n]))
	for i, k := range keys {
		if i >= 4 || len(delays[k]) < 10 {
			break
		}
		v := delays[k]
		slices.Sort(v)
		q := func(f float64) float64 { return float64(v[int(f*float64(len(v)-1))]) / 1e6 }
		cx := ctxKey{pk: k.pk, prev: noKind}
		keys := cx.gapKeys(k.ck)
		dens := m.gapDensity(anchorLast, &keys)
		for l, gk := range keys {
			if h := m.gaps[anchorLast][gk]; h != nil {
				s += fmt.Sprintf(" L%d %.0f", l, h.n)
			}
		}
		s += fmt.Sprintf("\n  first call %d of request kind %d: truth n %d: %.3f %.3f %.3f %.3f %.3f ms; initial model %s; P(first) %.2f\n",
			k.ck, k.pk, len(v), q(0.05), q(0.25), q(0.5), q(0.75), q(0.95), densQuant(dens), math.Exp(m.logTrans(cx, k.ck)))
	}
	return s
}

// densQuant returns the 5/25/50/75/95 % quantiles (ms) of log densities d.
func densQuant(d *[nGapBins]float64) string {
	var mass [nGapBins]float64
	tot := 0.0
	for b := range d {
		mass[b] = math.Exp(d[b]) * max(gapWidth[b], 1)
		tot += mass[b]
	}
	out := ""
	for _, f := range []float64{0.05, 0.25, 0.5, 0.75, 0.95} {
		acc := 0.0
		for b := range mass {
			acc += mass[b] / tot
			if acc >= f {
				out += fmt.Sprintf(" %.3f", (gapLow[b]+gapWidth[b]/2)/1e6)
				break
			}
		}
	}
	return out + " ms"
}

// TestOracleInit runs the engine on a saved run with the initial model's
// first delays (WIREPATH_ORACLE_PART=first) or all its delays (delays)
// fitted on the truth, and writes the result to WIREPATH_ORACLE_OUT.
func TestOracleInit(t *testing.T) {
	out := os.Getenv("WIREPATH_ORACLE_OUT")
	if out == "" {
		t.Skip("set WIREPATH_ORACLE_OUT (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH)")
	}
	tr, f := diagRun(t)
	part := os.Getenv("WIREPATH_ORACLE_PART")
	initHook = func(r *run, n int32, m *nodeModel) {
		d := newDiag(r, tr, f)
		kids := r.childrenOf[n]
		saved := make([]int32, len(kids))
		for i, c := range kids {
			saved[i] = r.parent[c]
			if d.tp[c] != diagUnknown {
				r.parent[c] = d.tp[c]
			}
			r.conf[c] = 1
		}
		mt := r.fit(n, false)
		for i, c := range kids {
			r.parent[c] = saved[i]
		}
		switch part {
		case "first":
			m.gaps = mergeGaps(m.gaps, mt.gaps, true)
		case "delays":
			m.gaps, m.anchorW = mt.gaps, mt.anchorW
		}
		clear(m.gcache[0])
		clear(m.gcache[1])
		clear(m.scorers)
	}
	defer func() { initHook = nil }()
	opt := DefaultOptions()
	if os.Getenv("WIREPATH_DIAG_INIT") != "" {
		opt.Init = Init(os.Getenv("WIREPATH_DIAG_INIT"))
	}
	opt.Workers = 1
	opt.Aggregate.KeepInstances = true
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := e.inferHook(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := report.WriteJSON(w, res); err != nil {
		t.Fatal(err)
	}
}

// laterDelays reports node n's delays from a reply received to the
// request's next message, in the truth and under model m.
func (d *diag) laterDelays(n int32, m *nodeModel) string {
	r := d.r
	type lk struct {
		ck   int32
		ret  uint8
		next int32
	}
	by := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if p := d.tp[c]; p >= 0 {
			by[p] = append(by[p], c)
		}
	}
	delays := map[lk][]int64{}
	for p, ks := range by {
		slices.SortFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		step := func(t int64, next int32) {
			last, lc := int64(-1<<62), int32(-1)
			for _, k := range ks {
				kc := &r.calls[k]
				if kc.retMsg >= 0 && kc.back <= t && kc.back > last {
					last, lc = kc.back, k
				}
			}
			if lc >= 0 && last >= r.calls[p].arr {
				k := lk{r.calls[lc].kind, r.calls[lc].retClass, next}
				delays[k] = append(delays[k], t-last)
			}
		}
		for _, c := range ks {
			step(r.sendOf(c), r.calls[c].kind)
		}
		if pc := &r.calls[p]; pc.retMsg >= 0 {
			step(pc.rep, endKind)
		}
	}
	keys := make([]lk, 0, len(delays))
	for k := range delays {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b lk) int { return len(delays[b]) - len(delays[a]) })
	s := fmt.Sprintf("%s: later delays", d.name(n))
	for i, k := range keys {
		if i >= 6 || len(delays[k]) < 10 {
			break
		}
		v := delays[k]
		slices.Sort(v)
		q := func(f float64) float64 { return float64(v[int(f*float64(len(v)-1))]) / 1e6 }
		cx := ctxKey{pk: -99, prev: k.ck, ret: k.ret}
		keys := cx.gapKeys(k.next)
		dens := m.gapDensity(anchorLast, &keys)
		n1 := 0.0
		if h := m.gaps[anchorLast][keys[1]]; h != nil {
			n1 = h.n
		}
		s += fmt.Sprintf("\n  after %d/%d next %d: truth n %d: %.3f %.3f %.3f %.3f %.3f ms; initial model (n %.0f) %s", k.ck, k.ret, k.next,
			len(v), q(0.05), q(0.25), q(0.5), q(0.75), q(0.95), n1, densQuant(dens))
	}
	return s
}
