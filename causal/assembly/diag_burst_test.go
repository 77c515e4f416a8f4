package assembly

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDiagnoseBurst asks, at one node of a saved run, which part of the
// model class makes the truth lose even under the model fitted on the
// truth (the oracle of TestDiagnose): the node's model is fitted on the
// true assignment, then each variant below changes one part of it, and
// the node is searched again (beam, then the local search) under the
// variant. Each line gives the calls the search gets wrong and how the
// truth scores against the search's answer under that variant (> 0: the
// search missed a better answer; < 0: the variant's model prefers a
// wrong one). A variant that leaves fewer calls wrong names a part of
// the model that misreads the node. It is a diagnostic for
// docs/accuracy.md ("The fan-out's aggregator: search or model"), run by
// hand:
//
//	WIREPATH_DIAG_BURST=agg WIREPATH_DIAG_TRACE=fo16.tsv WIREPATH_DIAG_TRUTH=fo16.truth.tsv \
//	  go test ./causal/assembly -run TestDiagnoseBurst -v
//
// It also logs the shape of the true bursts (burstShape), the generator's
// story's verdict on each answer (burstModel) and a hill climb under the
// story; WIREPATH_DIAG_BURST_TRANS=1 lists the call graph's contexts of
// the engine's model against the truth's.
func TestDiagnoseBurst(t *testing.T) {
	node := os.Getenv("WIREPATH_DIAG_BURST")
	if node == "" {
		t.Skip("set WIREPATH_DIAG_BURST=NODE (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH)")
	}
	r, d := diagInfer(t)
	n := int32(-1)
	for i := range r.childrenOf {
		if d.name(int32(i)) == node && r.models[i] != nil {
			n = int32(i)
		}
	}
	if n < 0 {
		t.Fatalf("no node %q with a model", node)
	}
	bd := &burstDiag{r: r, d: d, n: n, saved: slices.Clone(r.parent)}
	saved, tru, wrongOf, requests := bd.saved, bd.tru, bd.wrongOf, bd.requests
	burstShape(t, r, n, tru)
	bm := newBurstModel(r, n, tru)
	bd.climbs(t, node, bm)
	bTruth := bm.score(r, n, tru)
	ra, ro := requests()
	t.Logf("%s: %d calls, engine's answer %d wrong; requests with a wrong call %d, only at %s %d; the generator's story: truth−engine %.1f nats", node, len(r.childrenOf[n]), wrongOf(), ra, node, ro, bTruth-bm.score(r, n, func(c int32) int32 { return r.parent[c] }))
	for _, c := range r.childrenOf[n] {
		r.parent[c] = tru(c)
	}
	tm := r.fit(n, false) // the model fitted on the truth, whose parts the variants borrow
	copy(r.parent, saved)
	if os.Getenv("WIREPATH_DIAG_BURST_TRANS") != "" {
		burstTrans(t, r, r.models[n], tm)
	}
	em := r.models[n]
	orig := *em                    // the engine's parts, restored before each variant
	exact := slices.Clone(r.exact) // the search may drop an exact link it finds no room for
	for _, v := range burstVariants(tm) {
		for _, c := range r.childrenOf[n] {
			r.parent[c] = tru(c)
			r.conf[c] = 1
		}
		m := em
		*em = orig
		copy(r.exact, exact)
		if !v.engine {
			m = r.fit(n, false)
		}
		v.edit(m)
		m.resetCaches()
		s := newSearch(r, n, m)
		s.run(r.timeline(n))
		beam := wrongOf()
		r.improve(n, m, nil, 20)
		found := r.objective(n, m, func(c int32) int32 { return r.parent[c] })
		truth := r.objective(n, m, tru)
		ra, _ := requests()
		t.Logf("  %-62s wrong: beam %4d, +local %4d; truth−found %8.1f nats; requests with a wrong call %d; story: truth−found %.1f", v.name, beam, wrongOf(), truth-found, ra, bTruth-bm.score(r, n, func(c int32) int32 { return r.parent[c] }))
		copy(r.parent, saved)
	}
}

// burstModel is the generator's own story of a fan-out node, fitted on the
// true assignment: every call leaves a delay after its request's arrival
// drawn from one distribution whatever the request's other calls did, the
// reply leaves a delay after the last of its calls' replies, and the kinds
// a request calls come as one set, drawn from the sets' frequencies. It
// scores an assignment of the node's calls by that likelihood alone (no
// call graph, no FIFO, no repeats), to ask whether the engine's model
// class, not its learning or its search, leaves the truth behind.
type burstModel struct {
	d, rep *[nGapBins]float64
	sets   map[uint64]float64
	n      float64
}

func newBurstModel(r *run, n int32, asg func(c int32) int32) *burstModel {
	var hd, hr hist
	kids := burstKids(r, n, asg)
	bm := &burstModel{sets: map[uint64]float64{}}
	for _, p := range r.parentsOf[n] {
		set, last := uint64(0), r.arrOf(p)
		for _, c := range kids[p] {
			hd.add(gapBin(r.sendOf(c)-r.arrOf(p)), 1)
			set |= kindBit(r.calls[c].kind)
			last = max(last, r.calls[c].back)
		}
		if rp := r.calls[p].rep; rp != noTime {
			hr.add(gapBin(rp-last), 1)
		}
		bm.sets[set]++
		bm.n++
	}
	md, mr := mixMass(&hd, &priorMass), mixMass(&hr, &priorMass)
	bm.d, bm.rep = logDensity(&md, 1), logDensity(&mr, 1)
	return bm
}

// burstKids returns each request of node n's calls under asg.
func burstKids(r *run, n int32, asg func(c int32) int32) map[int32][]int32 {
	kids := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if p := asg(c); p >= 0 {
			kids[p] = append(kids[p], c)
		}
	}
	return kids
}

// score is the log likelihood of asg under the model; a call given to no
// request costs 20 nats (the true assignment has none at the fan-out).
func (bm *burstModel) score(r *run, n int32, asg func(c int32) int32) float64 {
	kids := burstKids(r, n, asg)
	s := 0.0
	for _, c := range r.childrenOf[n] {
		if asg(c) < 0 {
			s -= 20
		}
	}
	for _, p := range r.parentsOf[n] {
		set, last := uint64(0), r.arrOf(p)
		for _, c := range kids[p] {
			s += bm.d[gapBin(r.sendOf(c)-r.arrOf(p))]
			set |= kindBit(r.calls[c].kind)
			last = max(last, r.calls[c].back)
		}
		if rp := r.calls[p].rep; rp != noTime {
			s += bm.rep[gapBin(rp-last)]
		}
		s += math.Log((bm.sets[set] + 0.5) / (bm.n + 0.5*float64(len(bm.sets)+1)))
	}
	return s
}

// reqScore is request p's term of score with calls kids.
func (bm *burstModel) reqScore(r *run, p int32, kids []int32) float64 {
	s, set, last := 0.0, uint64(0), r.arrOf(p)
	for _, c := range kids {
		s += bm.d[gapBin(r.sendOf(c)-r.arrOf(p))]
		set |= kindBit(r.calls[c].kind)
		last = max(last, r.calls[c].back)
	}
	if rp := r.calls[p].rep; rp != noTime {
		s += bm.rep[gapBin(rp-last)]
	}
	return s + math.Log((bm.sets[set]+0.5)/(bm.n+0.5*float64(len(bm.sets)+1)))
}

// climb improves asg (a call's request, by call) under the model by moving
// one call to another request that can hold it, or swapping two calls of
// one kind between their requests, while a move gains; it returns the
// moves made.
func (bm *burstModel) climb(r *run, n int32, asg map[int32]int32) int {
	kids := burstKids(r, n, func(c int32) int32 { return asg[c] })
	without := func(ks []int32, c int32) []int32 {
		return slices.DeleteFunc(slices.Clone(ks), func(x int32) bool { return x == c })
	}
	moves := 0
	for sweep := 0; sweep < 20; sweep++ {
		moved := 0
		for _, c := range r.childrenOf[n] {
			p0 := asg[c]
			if p0 < 0 || r.exact[c] >= 0 {
				continue
			}
			base0 := bm.reqScore(r, p0, kids[p0])
			best, bq, bc2 := 1e-9, int32(-1), int32(-1)
			for _, q := range r.parentsOf[n] {
				if q == p0 || !r.fits(c, q) {
					continue
				}
				c2 := int32(-1)
				for _, k := range kids[q] {
					if r.calls[k].kind == r.calls[c].kind {
						c2 = k
					}
				}
				k0, kq := without(kids[p0], c), append(slices.Clone(kids[q]), c)
				if c2 >= 0 {
					if !r.fits(c2, p0) || r.exact[c2] >= 0 {
						continue
					}
					k0, kq = append(k0, c2), without(kq, c2)
				}
				gain := bm.reqScore(r, p0, k0) + bm.reqScore(r, q, kq) - base0 - bm.reqScore(r, q, kids[q])
				if gain > best {
					best, bq, bc2 = gain, q, c2
				}
			}
			if bq < 0 {
				continue
			}
			kids[p0], kids[bq] = without(kids[p0], c), append(kids[bq], c)
			asg[c] = bq
			if bc2 >= 0 {
				kids[bq], kids[p0] = without(kids[bq], bc2), append(kids[p0], bc2)
				asg[bc2] = p0
			}
			moved++
		}
		moves += moved
		if moved == 0 {
			break
		}
	}
	return moves
}

// burstTrans logs the call graph's level-0 contexts of the engine's model
// em against the truth's tm: the weight of each next event.
func burstTrans(t *testing.T, r *run, em, tm *nodeModel) {
	keys := map[tKey]bool{}
	for k := range em.trans {
		if k.lvl == 0 {
			keys[k] = true
		}
	}
	for k := range tm.trans {
		if k.lvl == 0 {
			keys[k] = true
		}
	}
	name := func(k int32) string {
		if k == endKind {
			return "end"
		}
		if k == noKind {
			return "-"
		}
		return r.kinds.name(k)
	}
	ks := slices.SortedFunc(maps.Keys(keys), func(a, b tKey) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.prev, b.prev), cmp.Compare(a.ret, b.ret))
	})
	for _, k := range ks {
		var b strings.Builder
		for i, m := range []*nodeModel{em, tm} {
			d := m.trans[k]
			fmt.Fprintf(&b, " %s n %4.0f:", []string{"engine", "truth"}[i], func() float64 {
				if d == nil {
					return 0
				}
				return d.n
			}())
			if d == nil {
				continue
			}
			for _, nx := range slices.Sorted(maps.Keys(d.c)) {
				fmt.Fprintf(&b, " %s %.0f", name(nx), d.c[nx])
			}
		}
		t.Logf("  pos %d prev %s ret %d:%s", k.pos, name(k.prev), k.ret, b.String())
	}
}

// burstShape logs how the true bursts of node n lie in time: the spread
// of a request's sends (first to last), and how many calls of other
// requests leave within it.
func burstShape(t *testing.T, r *run, n int32, tru func(c int32) int32) {
	sends := []int64{}
	for _, c := range r.childrenOf[n] {
		sends = append(sends, r.sendOf(c))
	}
	slices.Sort(sends)
	var spread []float64
	inside, alone := 0, 0
	for _, ks := range burstKids(r, n, tru) {
		lo, hi := r.sendOf(ks[0]), r.sendOf(ks[0])
		for _, c := range ks {
			lo, hi = min(lo, r.sendOf(c)), max(hi, r.sendOf(c))
		}
		i, _ := slices.BinarySearch(sends, lo)
		j, _ := slices.BinarySearch(sends, hi+1)
		other := j - i - len(ks)
		inside += other
		if other == 0 {
			alone++
		}
		spread = append(spread, float64(hi-lo)/1e3)
	}
	slices.Sort(spread)
	q := func(f float64) float64 { return spread[int(f*float64(len(spread)-1))] }
	t.Logf("true bursts: %d requests; spread of a request's sends 5/50/95 %%: %.0f / %.0f / %.0f µs; other requests' calls sent within a burst: %.2f on average, none in %d",
		len(spread), q(0.05), q(0.5), q(0.95), float64(inside)/float64(len(spread)), alone)
}

// burstVariant is one change to a node's model that TestDiagnoseBurst
// searches under.
type burstVariant struct {
	name   string
	edit   func(m *nodeModel)
	engine bool // start from the engine's final model, not the truth's
}

// burstAnchors weighs the latest-trigger anchor at call for the calls'
// delays and at end for the reply's, in every context.
func burstAnchors(call, end float64) func(m *nodeModel) {
	return func(m *nodeModel) {
		for k := range m.anchorW {
			if k.next == endKind {
				m.anchorW[k] = end
			} else {
				m.anchorW[k] = call
			}
		}
	}
}

func burstNoFIFO(m *nodeModel) { m.fifo = newFallingLR(fifoBins) }

// burstByKind keys a call's delays by its own kind alone (not by the
// request's kind, the previous call's kind or the last reply's class).
func burstByKind(m *nodeModel) {
	for a := range m.gaps {
		g := map[gKey]*hist{}
		for k, h := range m.gaps[a] {
			if k.next != endKind && k.lvl < 2 {
				h = m.gaps[a][gKey{lvl: 2, next: k.next}]
			}
			g[k] = h
		}
		m.gaps[a] = g
	}
}

// burstVariants lists the variants: parts of the truth's model (tm)
// changed, and parts of the engine's model replaced by tm's.
func burstVariants(tm *nodeModel) []burstVariant {
	anchors, noFIFO, byKind := burstAnchors, burstNoFIFO, burstByKind
	noSets := func(m *nodeModel) { m.sets.informative = false }
	return []burstVariant{
		{"the truth's model", func(*nodeModel) {}, false},
		{"without the FIFO evidence", noFIFO, false},
		{"without the kind sets", noSets, false},
		{"calls timed from the arrival, the reply from the last reply", anchors(1e-6, 1-1e-6), false},
		{"calls from the arrival, reply from the last reply, no FIFO", func(m *nodeModel) { anchors(1e-6, 1-1e-6)(m); noFIFO(m) }, false},
		{"delays by the call's kind alone", byKind, false},
		{"delays by the call's kind alone, no FIFO", func(m *nodeModel) { byKind(m); noFIFO(m) }, false},
		{"by kind alone, from the arrival, reply from the last, no FIFO", func(m *nodeModel) { byKind(m); anchors(1e-6, 1-1e-6)(m); noFIFO(m) }, false},
		{"the same, no repeats", func(m *nodeModel) { byKind(m); anchors(1e-6, 1-1e-6)(m); noFIFO(m); m.rep = newLR(len(m.rep.link)) }, false},
		{"the engine's final model", func(*nodeModel) {}, true},
		{"the engine's final model without the FIFO evidence", noFIFO, true},
		{"the engine's, the truth's FIFO", func(m *nodeModel) { m.fifo = tm.fifo }, true},
		{"the engine's, the truth's kind sets", func(m *nodeModel) { m.sets = tm.sets }, true},
		{"the engine's, the truth's delays", func(m *nodeModel) { m.gaps, m.anchorW = tm.gaps, tm.anchorW }, true},
		{"the engine's, the truth's call graph", func(m *nodeModel) { m.trans = tm.trans }, true},
		{"the engine's, the truth's repeats", func(m *nodeModel) { m.rep = tm.rep }, true},
		{"the engine's, the truth's handoffs and waiters", func(m *nodeModel) { m.hand, m.wait, m.handApart = tm.hand, tm.wait, tm.handApart }, true},
		{"the engine's, the truth's call graph from the 4th call on", func(m *nodeModel) {
			m.trans = burstTransFrom(m.trans, tm.trans, func(k tKey) bool { return k.lvl == 0 && k.pos >= 3 })
		}, true},
		{"the engine's, the truth's call graph before the 4th call", func(m *nodeModel) {
			m.trans = burstTransFrom(m.trans, tm.trans, func(k tKey) bool { return k.lvl == 0 && k.pos < 3 })
		}, true},
		{"the engine's, its call graph blind to the previous kind", func(m *nodeModel) { m.trans = burstNoPrev(m.trans) }, true},
		{"the truth's, its call graph blind to the previous kind", func(m *nodeModel) { m.trans = burstNoPrev(m.trans) }, false},
		{"the engine's, the truth's call graph and repeats", func(m *nodeModel) { m.trans, m.rep = tm.trans, tm.rep }, true},
		{"the engine's, the truth's call graph, repeats, delays", func(m *nodeModel) { m.trans, m.rep, m.gaps, m.anchorW = tm.trans, tm.rep, tm.gaps, tm.anchorW }, true},
	}
}

// burstDiag is TestDiagnoseBurst's node n of run r, with the engine's
// answer (saved) and the truth (d).
type burstDiag struct {
	r     *run
	d     *diag
	n     int32
	saved []int32
}

// tru is call c's true request (the engine's where the truth is unknown).
func (b *burstDiag) tru(c int32) int32 {
	if b.d.tp[c] == diagUnknown || b.r.evid[c] == evRoot {
		return b.saved[c]
	}
	return b.d.tp[c]
}

// wrongOf counts the node's calls whose current request is wrong.
func (b *burstDiag) wrongOf() int {
	w := 0
	for _, c := range b.r.childrenOf[b.n] {
		if b.d.tp[c] != diagUnknown && b.r.evid[c] != evRoot && b.r.parent[c] != b.d.tp[c] {
			w++
		}
	}
	return w
}

// requests counts the requests with a wrong call anywhere, and those
// with wrong calls only at the node.
func (b *burstDiag) requests() (any, only int) {
	r, d := b.r, b.d
	at := map[int]uint8{} // bit 1: a wrong call at n, bit 2: elsewhere
	for c := range r.calls {
		if d.req[c] >= 0 && d.wrong(int32(c)) {
			if r.calls[c].caller == b.n {
				at[d.req[c]] |= 1
			} else {
				at[d.req[c]] |= 2
			}
		}
	}
	for _, v := range at {
		if v == 1 {
			only++
		}
	}
	return len(at), only
}

// climbs logs the story's hill climb from the engine's answer, the story
// fitted on the truth (bm) and on the engine's answer.
func (b *burstDiag) climbs(t *testing.T, node string, bm *burstModel) {
	r, n := b.r, b.n
	for _, fitOn := range []string{"the truth", "the engine's answer"} {
		sm := bm
		if fitOn != "the truth" {
			sm = newBurstModel(r, n, func(c int32) int32 { return b.saved[c] })
		}
		asg := map[int32]int32{}
		for _, c := range r.childrenOf[n] {
			asg[c] = b.saved[c]
		}
		mv := sm.climb(r, n, asg)
		for c, p := range asg {
			r.parent[c] = p
		}
		ra, _ := b.requests()
		cur := func(c int32) int32 { return r.parent[c] }
		t.Logf("%s: the story fitted on %s, climbed from the engine's answer (%d moves): %d calls wrong, requests with a wrong call %d; truth−climbed %.1f nats", node, fitOn, mv, b.wrongOf(), ra, sm.score(r, n, b.tru)-sm.score(r, n, cur))
		copy(r.parent, b.saved)
	}
}

// burstTransFrom returns the call graph em with the contexts that take
// tm's in place of its own (dropped where tm has none).
func burstTransFrom(em, tm map[tKey]*dist, take func(tKey) bool) map[tKey]*dist {
	out := map[tKey]*dist{}
	for k, d := range em {
		if !take(k) {
			out[k] = d
		}
	}
	for k, d := range tm {
		if take(k) {
			out[k] = d
		}
	}
	return out
}

// burstNoPrev returns call graph tr with the contexts that name the
// previous call's kind (levels 0 and 1) pooled over it: a request's next
// event predicted from its kind, its position and its last reply's class,
// not from the kind of call it sent last.
func burstNoPrev(tr map[tKey]*dist) map[tKey]*dist {
	pooled := map[tKey]*dist{}
	for k, d := range tr {
		if k.lvl > 1 {
			continue
		}
		pk := k
		pk.prev = noKind
		p := pooled[pk]
		if p == nil {
			p = &dist{c: map[int32]float64{}}
			pooled[pk] = p
		}
		for nx, w := range d.c {
			p.c[nx] += w
		}
		p.n += d.n
	}
	out := map[tKey]*dist{}
	for k, d := range tr {
		if k.lvl > 1 {
			out[k] = d
			continue
		}
		pk := k
		pk.prev = noKind
		out[k] = pooled[pk]
	}
	return out
}
