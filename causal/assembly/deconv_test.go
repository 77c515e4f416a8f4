package assembly

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// genStream builds a node's trace: requests arriving at app from clients
// as a Poisson stream (rate per ms), each making one call to db after a
// delay first (from its arrival), the call answered after a service
// time, and the request answered a delay reply after that; every
// request and call on its own connection, so that nothing links a call
// to its request but timing. Delays are log-normal: medians in ms and a
// log-scale sigma. It returns the trace builder.
func genStream(seed uint64, n int, rate, first, service, reply, sigma float64) *tb {
	rng := rand.New(rand.NewPCG(seed, 1))
	ln := func(med float64) float64 { return med * math.Exp(sigma*rng.NormFloat64()) }
	b := newTB()
	t := 1.0
	for i := range n {
		t += rng.ExpFloat64() / rate
		call := t + ln(first)
		back := call + ln(service)
		end := back + ln(reply)
		cl, ap := fmt.Sprintf("c:%d", i), fmt.Sprintf("a:%d", i)
		b.rpc(t, end, "client", cl, "app", "app:80", "r"+cl, 100)
		b.rpc(call, back, "app", ap, "db", "db:5432", "q"+cl, 60)
	}
	slices.SortStableFunc(b.t.Messages, func(x, y trace.Message) int { return cmpTime(int64(x.SendTS), int64(y.SendTS)) })
	return b
}

// TestInitialModelDelays checks that the first model, fitted on no
// assignment, recovers the delays of a generated stream: a request's
// first call after its arrival and its reply after its call's reply
// came back, whether the node is quiet or has dozens of requests in
// flight. Subtracting a floor of unrelated pairs bin by bin (the
// convolution's way) left its noise, clipped at zero, in the long
// delays' wide bins, and learnt a median of 5–25 ms for delays of 0.5
// and 1 ms at 64 in flight.
func TestInitialModelDelays(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64 // requests per ms
	}{
		{"quiet", 0.01},
		{"4 in flight", 0.25},
		{"16 in flight", 1},
		{"64 in flight", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const first, service, reply, sigma = 0.5, 10, 1, 0.8
			b := genStream(7, 1000, tc.rate, first, service, reply, sigma)
			opt := DefaultOptions()
			opt.Init = InitCluster
			r := newRun(opt, b.t, causal.NewAggregator(b.t, opt.Aggregate).Namer())
			var n int32 = -1
			for i := range r.l.nodeSym {
				if b.t.Str(r.l.nodeSym[i]) == "app" {
					n = int32(i)
				}
			}
			if n < 0 || len(r.parentsOf[n]) == 0 || len(r.childrenOf[n]) == 0 {
				t.Fatal("no app node")
			}
			r.exactLinks(n)
			m := r.initialModel(n)
			pk := r.calls[r.parentsOf[n][0]].kind
			kid := &r.calls[r.childrenOf[n][0]]
			check := func(what string, cx ctxKey, next int32, want float64) {
				keys := cx.gapKeys(next)
				got := densMedian(m.gapDensity(anchorLast, &keys)) / 1e6
				if math.Abs(math.Log(got/want)) > math.Log(1.4) {
					t.Errorf("%s: median delay %.3f ms, want %.3f ms", what, got, want)
				}
			}
			check("first call", ctxKey{pk: pk, prev: noKind}, kid.kind, first)
			check("reply", ctxKey{pk: pk, prev: kid.kind, pos: 1, ret: kid.retClass}, endKind, reply)
		})
	}
}

// densMedian returns the median (ns) of log densities d by bin.
func densMedian(d *[nGapBins]float64) float64 {
	var mass [nGapBins]float64
	tot := 0.0
	for b := range d {
		mass[b] = math.Exp(d[b]) * gapWidth[b]
		tot += mass[b]
	}
	acc := 0.0
	for b := range mass {
		acc += mass[b]
		if acc >= tot/2 {
			return gapLow[b] + gapWidth[b]/2
		}
	}
	return math.Inf(1)
}
