package assembly

import (
	"maps"
	"math"
	"os"
	"slices"
	"testing"
)

// TestDiagnoseTokenMap measures, for every node, how deterministic the
// map from a request's tokens to its calls' tokens is (derived tokens,
// assoc.go): per context (request kind, call kind), with the true links
// and with the engine's, the request tokens the derived-token model
// keeps as predictive, the links they cover, the share of those links
// whose call carries the request token's commonest call token
// (determinism: 1 for a function), the distinct call tokens, and the
// entropy of the call's token without and with the request's (bits).
// It also says whether the engine's model, learnt from its own
// assignment, maps each predictive request token to the same call token
// as the truth's.
//
//	WIREPATH_DIAG_TOKMAP=1 WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run TestDiagnoseTokenMap -v
func TestDiagnoseTokenMap(t *testing.T) {
	if os.Getenv("WIREPATH_DIAG_TOKMAP") == "" {
		t.Skip("set WIREPATH_DIAG_TOKMAP=1 (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH)")
	}
	r, d := diagInfer(t)
	for n := range r.childrenOf {
		truth, eng := newTokAssoc(), newTokAssoc()
		for _, c := range r.childrenOf[n] {
			if r.evid[c] == evRoot {
				continue
			}
			if p := d.tp[c]; p >= 0 {
				truth.addLink(r.calls[p].kind, r.calls[c].kind, r.ev[p].tok, r.ev[c].tok, 1)
			}
			if p := r.parent[c]; p >= 0 {
				eng.addLink(r.calls[p].kind, r.calls[c].kind, r.ev[p].tok, r.ev[c].tok, 1)
			}
		}
		rawT, rawE := tokMapCopy(truth), tokMapCopy(eng)
		truth.finish()
		eng.finish()
		ctxs := slices.SortedFunc(maps.Keys(truth.pred), func(a, b assocCtx) int {
			if a.pk != b.pk {
				return int(a.pk - b.pk)
			}
			return int(a.ck - b.ck)
		})
		for _, x := range ctxs {
			for _, m := range []struct {
				name string
				raw  *tokAssoc
				fin  *tokAssoc
			}{{"truth's links", rawT, truth}, {"engine's links", rawE, eng}} {
				s := tokMapStats(m.raw, m.fin, x)
				t.Logf("%s k%d→k%d %-14s: %4.0f links, %2d predictive request tokens on %4.0f, determinism %.3f, %3d call tokens, H(call) %.2f H(call|request) %.2f bits",
					d.name(int32(n)), x.pk, x.ck, m.name, m.raw.ctx[x], s.pred, s.links, s.det, s.calls, s.h, s.hc)
			}
			same, diff, miss := 0, 0, 0
			for k := range truth.req {
				if k.assocCtx != x {
					continue
				}
				bt, be := tokMapTop(truth, k), tokMapTop(eng, k)
				switch {
				case be == 0:
					miss++
				case bt == be:
					same++
				default:
					diff++
				}
			}
			t.Logf("%s k%d→k%d engine's model against the truth's: %d request tokens mapped to the same call token, %d to another, %d not learnt; smoothing κ: truth's links %g, engine's links %g, engine's model %g",
				d.name(int32(n)), x.pk, x.ck, same, diff, miss, truth.kappaOf(x), eng.kappaOf(x), r.models[n].assoc.kappaOf(x))
		}
	}
}

// tokMapCopy copies a tokAssoc's counts (before finish drops any).
func tokMapCopy(a *tokAssoc) *tokAssoc {
	return &tokAssoc{pair: maps.Clone(a.pair), req: maps.Clone(a.req), call: maps.Clone(a.call), ctx: maps.Clone(a.ctx)}
}

// tokMapTop is the call token of request token k's commonest pair (0: none).
func tokMapTop(a *tokAssoc, k assocTok) uint64 {
	var best uint64
	bn := 0.0
	for p, n := range a.pair {
		if p.assocCtx == k.assocCtx && p.a == k.t && (n > bn || n == bn && p.b < best) {
			best, bn = p.b, n
		}
	}
	return best
}

type tokMapStat struct {
	pred, calls int
	links       float64
	det, h, hc  float64
}

// tokMapStats sums, over the predictive request tokens of fin in context
// x, raw's links, the links of each one's commonest pair, the distinct
// call tokens, and the entropies of the call token (over the context's
// links) and of the call token given the request token (over the
// predictive tokens' links).
func tokMapStats(raw, fin *tokAssoc, x assocCtx) tokMapStat {
	var s tokMapStat
	top := map[uint64]float64{}
	calls := map[uint64]bool{}
	for p, n := range raw.pair {
		if p.assocCtx != x {
			continue
		}
		if _, ok := fin.req[assocTok{x, p.a}]; !ok {
			continue
		}
		top[p.a] = max(top[p.a], n)
		calls[p.b] = true
		na := raw.req[assocTok{x, p.a}]
		s.hc -= n * math.Log2(n/na)
	}
	for a, n := range top {
		s.pred++
		s.links += raw.req[assocTok{x, a}]
		s.det += n
	}
	if s.links > 0 {
		s.det /= s.links
		s.hc /= s.links
	}
	s.calls = len(calls)
	for k, n := range raw.call {
		if k.assocCtx == x {
			s.h -= n / raw.ctx[x] * math.Log2(n/raw.ctx[x])
		}
	}
	return s
}
