package assembly

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestDiagnoseCacheCalls looks at the cache calls (memcached and Redis
// kinds) of node WIREPATH_DIAG_CC under the engine's final models: the
// objective of the engine's answer, of the answer with the cache calls
// put at the truth, and of the truth; whether the local search leaves
// the answer with the cache calls at the truth; and what each kind
// matching and kind-pair matching would gain and move from the answer;
// the wrong cache calls by the tokens they share with their true and
// their found request (cacheTokens); and two passes of hard EM from the
// answer with the cache calls at the truth (emFrom). A diagnostic for
// docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_CC=app WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run 'TestDiagnoseCacheCalls$' -v
func TestDiagnoseCacheCalls(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_CC")
	me, xe := r.models[n], r.xfits[n]
	saved := slices.Clone(r.parent)
	kids := r.childrenOf[n]
	cache := func(c int32) bool {
		k := r.kinds.name(r.calls[c].kind)
		return strings.Contains(k, "memcache") || strings.Contains(k, "redis")
	}
	known := func(c int32) bool { return d.tp[c] != diagUnknown && r.evid[c] != evRoot }
	wrongBy := func() (int, map[string]int) {
		w, by := 0, map[string]int{}
		for _, c := range kids {
			if known(c) && r.parent[c] != d.tp[c] {
				w++
				by[r.kinds.name(r.calls[c].kind)]++
			}
		}
		return w, by
	}
	obj := func() float64 { return newLocal(r, n, me, xe).objective() }
	set := func(f func(c int32) int32) {
		for _, c := range kids {
			r.parent[c] = f(c)
		}
	}
	eng := obj()
	d.cacheTokens(t, n, cache)
	w, by := wrongBy()
	t.Logf("engine's answer: objective %.1f, wrong %d %v", eng, w, by)
	set(func(c int32) int32 {
		if known(c) && cache(c) {
			return d.tp[c]
		}
		return saved[c]
	})
	h := obj()
	w, by = wrongBy()
	t.Logf("cache calls at the truth: objective %.1f (%+.1f), wrong %d %v", h, h-eng, w, by)
	hyb := slices.Clone(r.parent)
	var b strings.Builder
	d.termReport(&b, n, me, xe, func(c int32) int32 { return saved[c] }, func(c int32) int32 { return hyb[c] })
	t.Logf("terms, cache calls at the truth − the answer:\n%s", b.String())
	r.improve(n, me, xe, 20)
	w, by = wrongBy()
	t.Logf("  + local search: objective %.1f (%+.1f), wrong %d %v", obj(), obj()-eng, w, by)
	near := slices.Clone(r.parent)
	d.emFrom(t, n, near, saved, wrongBy)
	set(func(c int32) int32 {
		if known(c) {
			return d.tp[c]
		}
		return saved[c]
	})
	t.Logf("truth: objective %.1f (%+.1f)", obj(), obj()-eng)
	// per cache kind at the truth alone
	var kinds []int32
	for _, c := range kids {
		if cache(c) && !slices.Contains(kinds, r.calls[c].kind) {
			kinds = append(kinds, r.calls[c].kind)
		}
	}
	for _, k := range kinds {
		set(func(c int32) int32 {
			if known(c) && r.calls[c].kind == k {
				return d.tp[c]
			}
			return saved[c]
		})
		o := obj()
		w, _ = wrongBy()
		t.Logf("kind %s alone at the truth: objective %+.1f, wrong %d", r.kinds.name(k), o-eng, w)
	}
	// logMatched refines a matching's answer as keepIfGain does and logs
	// its objective against the engine's, the calls it moved and the
	// wrong calls left.
	logMatched := func(what string) {
		after := newLocal(r, n, me, xe)
		after.sweepAll(20)
		moved := 0
		for _, c := range kids {
			if r.parent[c] != saved[c] {
				moved++
			}
		}
		w, by := wrongBy()
		t.Logf("%s matched: objective %+.1f, moved %d (needs %+.1f), wrong %d %v", what, after.objective()-eng, moved, kindMatchMinGain*float64(moved), w, by)
	}
	// the matchings from the answer, each tried alone
	for _, k := range kinds {
		set(func(c int32) int32 { return saved[c] })
		ls := newLocal(r, n, me, xe)
		ok := ls.kindMatchable(k)
		if !ok {
			t.Logf("kind %s: not matchable", r.kinds.name(k))
			continue
		}
		ls.matchKind(k)
		logMatched("kind " + r.kinds.name(k))
	}
	set(func(c int32) int32 { return saved[c] })
	for _, pr := range newLocal(r, n, me, xe).kindPairs() {
		set(func(c int32) int32 { return saved[c] })
		ls := newLocal(r, n, me, xe)
		var names []string
		for _, k := range pr {
			if k >= 0 {
				names = append(names, r.kinds.name(k))
			}
		}
		if !ls.matchPair(pr) {
			t.Logf("set %v: matchPair moved none", names)
			continue
		}
		for _, k := range pr {
			if k >= 0 {
				if lk := newLocal(r, n, me, xe); lk.kindMatchable(k) {
					lk.matchKind(k)
				}
			}
		}
		logMatched(fmt.Sprintf("set %v", names))
	}
	copy(r.parent, saved)
}

// emFrom runs two passes of hard EM at node n from the assignment near
// (fit, cross-fit, beam search, local search, kind and kind-pair
// matchings) and logs the wrong calls after each and how near and the
// engine's answer (saved) score under each pass's models.
func (d *diag) emFrom(t *testing.T, n int32, near, saved []int32, wrongBy func() (int, map[string]int)) {
	r := d.r
	kids := r.childrenOf[n]
	for pass := range 2 {
		m := r.fit(n, false)
		x := r.crossFitModels(n, nil, m, false)
		cur := slices.Clone(r.parent)
		score := func(a []int32) float64 {
			for _, c := range kids {
				r.parent[c] = a[c]
			}
			return newLocal(r, n, m, x).objective()
		}
		on, oe := score(near), score(saved)
		copy(r.parent, cur)
		s := newSearch(r, n, m)
		s.x = x
		s.sum = true
		s.run(r.timeline(n))
		r.improve(n, m, x, 20)
		var km kindMatchCounts
		var kp kindPairCounts
		r.kindMatch(n, m, x, &km)
		r.kindPairMatch(n, m, x, &kp)
		w, by := wrongBy()
		t.Logf("EM pass %d from it: its models score it %+.1f against the answer; searched: objective %+.1f against the answer, wrong %d %v", pass, on-oe, newLocal(r, n, m, x).objective()-oe, w, by)
	}
}

// cacheTokens counts node n's wrong cache calls by whether the tokens
// they share with their true request's own (its CALL's) weigh more,
// as much or less than those shared with the request the engine gave
// them, and by whether the two requests are of one kind.
func (d *diag) cacheTokens(t *testing.T, n int32, cache func(c int32) bool) {
	r := d.r
	cnt := map[string]int{}
	for _, c := range r.childrenOf[n] {
		f, tp := r.parent[c], d.tp[c]
		if tp == diagUnknown || r.evid[c] == evRoot || f == tp || !cache(c) {
			continue
		}
		k := r.kinds.name(r.calls[c].kind)
		if f < 0 || tp < 0 {
			cnt[k+" none"]++
			continue
		}
		ct := r.ev[c].tok
		var pt, pf [3][]uint64
		pt[0], pf[0] = r.ev[tp].tok, r.ev[f].tok
		ot, _ := sharedIDFs(r.idf, ct, &pt)
		of, _ := sharedIDFs(r.idf, ct, &pf)
		same := "same kind"
		if r.calls[tp].kind != r.calls[f].kind {
			same = "other kind"
		}
		switch {
		case ot > of+1e-9:
			cnt[k+" true shares more, "+same]++
		case of > ot+1e-9:
			cnt[k+" found shares more, "+same]++
		default:
			cnt[k+fmt.Sprintf(" shares alike (%.1f), ", ot)+same]++
		}
	}
	keys := make([]string, 0, len(cnt))
	for k := range cnt {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("  %-60s %d", k, cnt[k])
	}
}
