package main

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// tree is a synthetic request: client -> web -> app, where app calls
// store twice in sequence and then b1 and b2 in parallel (times in µs).
//
//	0  client sends GET (web receives at 10)
//	20 web calls app (app receives at 30)
//	40 app calls store (store 45..55, app receives at 60)
//	90 app calls store again (store 95..105, app receives at 110)
//	130 app calls b1 (b1 135..185, app receives at 190)
//	140 app calls b2 (b2 145..165, app receives at 170)
//	200 app answers web (web receives at 210)
//	230 web answers the client (it receives at 240)
var tree = struct {
	ev []event
	ms []msgRef
}{
	ev: []event{
		{0, 10, "client", "web"}, {20, 30, "web", "app"},
		{40, 45, "app", "store"}, {55, 60, "store", "app"},
		{90, 95, "app", "store"}, {105, 110, "store", "app"},
		{130, 135, "app", "b1"}, {140, 145, "app", "b2"},
		{185, 190, "b1", "app"}, {165, 170, "b2", "app"},
		{200, 210, "app", "web"}, {230, 240, "web", "client"},
	},
	ms: []msgRef{
		{0, 0, -1, "CALL"}, {1, 1, 0, "CALL"},
		{2, 2, 1, "CALL"}, {3, 2, 1, "RETURN"},
		{4, 4, 1, "CALL"}, {5, 4, 1, "RETURN"},
		{6, 6, 1, "CALL"}, {7, 7, 1, "CALL"},
		{8, 6, 1, "RETURN"}, {9, 7, 1, "RETURN"},
		{10, 1, 0, "RETURN"}, {11, 0, -1, "RETURN"},
	},
}

// TestDecompose: a tree's latency, each link's transit, each node's own
// time (its hold less the union of its calls' waits, the parallel ones
// counted once) and the post-wait samples of the sequential calls alone.
func TestDecompose(t *testing.T) {
	ev := func(i int) event {
		e := tree.ev[i]
		return event{e.send * 1000, e.recv * 1000, e.src, e.dst}
	}
	b := decompose(tree.ms, ev)
	const us = 1e-3 // ms
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !near(b.Latency, 240*us) {
		t.Errorf("latency %v ms, want 0.240", b.Latency)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"transit client->web", b.Transit["client->web"], 20 * us},
		{"transit web->app", b.Transit["web->app"], 20 * us},
		{"transit app->store", b.Transit["app->store"], 20 * us},
		{"transit app->b1", b.Transit["app->b1"], 10 * us},
		{"own web", b.Own["web"], (230 - 10 - (210 - 20)) * us},
		// app holds 30..200 and waits 40..60, 90..110, 130..190 (b2 inside b1's)
		{"own app", b.Own["app"], (170 - 20 - 20 - 60) * us},
		{"own store", b.Own["store"], 20 * us},
		{"own b1", b.Own["b1"], 50 * us},
		{"own b2", b.Own["b2"], 20 * us},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v ms, want %v", c.name, c.got, c.want)
		}
	}
	want := []postWait{
		{"app", "store", 20 * us, 30 * us}, // 60 -> the next send at 90
		{"app", "store", 20 * us, 20 * us}, // 110 -> 130
		{"web", "app", 190 * us, 20 * us},  // 210 -> its answer at 230
	}
	got := slices.Clone(b.Waits)
	slices.SortFunc(got, func(x, y postWait) int { return cmp.Or(strings.Compare(x.Node, y.Node), cmp.Compare(y.Post, x.Post)) })
	if len(got) != len(want) {
		t.Fatalf("post-waits %+v, want %+v (none for the parallel b1, b2)", got, want)
	}
	for i := range want {
		if got[i].Node != want[i].Node || got[i].Callee != want[i].Callee || !near(got[i].Wait, want[i].Wait) || !near(got[i].Post, want[i].Post) {
			t.Errorf("post-wait %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestDecomposeUnanswered: a call without its answer adds its call's
// transit, no own time for its callee, and no post-wait.
func TestDecomposeUnanswered(t *testing.T) {
	ev := []event{{0, 10, "client", "web"}, {20, 30, "web", "app"}, {60, 70, "web", "client"}}
	ms := []msgRef{{0, 0, -1, "CALL"}, {1, 1, 0, "CALL"}, {2, 0, -1, "RETURN"}}
	b := decompose(ms, func(i int) event { return ev[i] })
	if b.Transit["web->app"] != 10e-6 || b.Own["app"] != 0 || len(b.Waits) != 0 || b.Own["web"] != 50e-6 {
		t.Errorf("got transit %v, own %v, waits %v", b.Transit, b.Own, b.Waits)
	}
}

// TestUnion: overlapping and nested intervals count once.
func TestUnion(t *testing.T) {
	for _, c := range []struct {
		iv   [][2]int64
		want int64
	}{
		{nil, 0},
		{[][2]int64{{0, 10}}, 10},
		{[][2]int64{{20, 30}, {0, 10}}, 20},
		{[][2]int64{{0, 10}, {5, 15}}, 15},
		{[][2]int64{{0, 100}, {10, 20}, {30, 40}}, 100},
		{[][2]int64{{0, 10}, {10, 20}}, 20},
	} {
		if got := union(slices.Clone(c.iv)); got != c.want {
			t.Errorf("union(%v) = %d, want %d", c.iv, got, c.want)
		}
	}
}

// TestOLSFit: the line of a synthetic post-wait that grows with log10 of
// the wait by a known slope is recovered within a few standard errors,
// and its standard error shrinks with the samples; with no relation the
// slope is within its error of zero.
func TestOLSFit(t *testing.T) {
	for _, c := range []struct {
		name         string
		slope, noise float64
		n            int
	}{
		{"exact line", 0.25, 0, 50},
		{"noisy line", 0.25, 0.1, 400},
		{"no relation", 0, 0.1, 400},
		{"falling", -0.1, 0.05, 200},
	} {
		r := rand.New(rand.NewPCG(1, uint64(c.n)))
		var x, y []float64
		for range c.n {
			w := math.Pow(10, -1+2*r.Float64()) // waits 0.1..10 ms
			x = append(x, math.Log10(w))
			y = append(y, 0.2+c.slope*math.Log10(w)+c.noise*r.NormFloat64())
		}
		f := olsFit(x, y)
		if f.N != c.n || math.Abs(f.B-c.slope) > 4*f.SE+1e-9 || (c.noise == 0) != (f.SE < 1e-9) {
			t.Errorf("%s: slope %v ±%v (n %d), want %v", c.name, f.B, f.SE, f.N, c.slope)
		}
		if c.noise > 0 && f.SE > 2*c.noise/math.Sqrt(float64(c.n)) {
			t.Errorf("%s: standard error %v too wide for %d samples of noise %v", c.name, f.SE, c.n, c.noise)
		}
	}
	if f := olsFit([]float64{1, 1, 1}, []float64{2, 3, 4}); f.B != 0 || f.A != 3 {
		t.Errorf("no spread in x: %+v, want a flat line at 3", f)
	}
}

// TestGrow: a group whose post-wait follows a known line in the windows
// without the change foretells, from the waits of the windows with it,
// the growth the line gives; fewer than minN samples in a window give none.
func TestGrow(t *testing.T) {
	g := &group{node: "web", callee: "app", kind: "item"}
	for i := range 100 {
		w0 := 1 + float64(i%10)/10 // 1..1.9 ms
		w1 := 10 * w0              // a decade longer
		g.wait[0] = append(g.wait[0], w0)
		g.post[0] = append(g.post[0], 0.2+0.3*math.Log10(w0))
		g.wait[1] = append(g.wait[1], w1)
		g.post[1] = append(g.post[1], 0.2+0.3*math.Log10(w1)+0.5) // and 0.5 ms the line does not give
	}
	gr, ok := grow(g, 30)
	if !ok || math.Abs(gr.predicted-0.3) > 0.01 || math.Abs(gr.measured-0.8) > 0.01 {
		t.Errorf("grow: %+v %v, want predicted 0.3 and measured 0.8", gr, ok)
	}
	if _, ok := grow(g, 101); ok {
		t.Error("grow with minN above the samples: want none")
	}
}

// TestOnFraction: the share of an interval within the odd windows.
func TestOnFraction(t *testing.T) {
	for _, c := range []struct{ t0, t1, want float64 }{
		{10, 11, 0},      // an even window
		{11, 12, 1},      // an odd one
		{10.5, 11.5, .5}, // half in each
		{10, 14, .5},     // two of each
		{11.2, 11.2, 0},  // empty
	} {
		if got := onFraction(c.t0, c.t1, 1); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("onFraction(%v, %v) = %v, want %v", c.t0, c.t1, got, c.want)
		}
	}
}

// TestMachineFit: a machine busy 0.9 cores in the windows without the
// change and 0.4 with it, sampled every 1.1 s (intervals straddling the
// windows), is fitted as 0.9 and -0.5; intervals outside the run's span
// and counters that went back are left out.
func TestMachineFit(t *testing.T) {
	const hz = 100
	busyAt := func(t float64) float64 { // ticks used by time t (from 0)
		var ticks float64
		for s := 0.0; s < t; s += 0.001 {
			r := 0.9
			if int64(s)%2 == 1 {
				r = 0.4
			}
			ticks += r * hz * 0.001
		}
		return ticks
	}
	var ss []statSample
	for t := 0.0; t < 30; t += 1.1 {
		ss = append(ss, statSample{t, busyAt(t)})
	}
	ss = append(ss, statSample{31, 0}) // a counter that went back
	f := machineFit(ss, 2, 31, 1, hz)
	if math.Abs(f.A-0.9) > 0.01 || math.Abs(f.B+0.5) > 0.01 || f.N != 25 {
		t.Errorf("machineFit: %+v, want 0.9 cores and -0.5 over 25 intervals", f)
	}
}

// TestSegments: a node's work segments are an arrival followed by its
// own send, timed from its previous event; the node's first event (no
// previous) and arrivals followed by another arrival give none, and
// neither do those within the warm-up.
func TestSegments(t *testing.T) {
	tr := &trace.Trace{}
	add := func(send, recv int64, src, dst string, k trace.Kind) {
		tr.Messages = append(tr.Messages, trace.Message{SendTS: trace.Timestamp(send * 1000), RecvTS: trace.Timestamp(recv * 1000),
			SrcNode: tr.Intern(src), DstNode: tr.Intern(dst), Kind: k})
	}
	add(0, 10, "client", "web", trace.KindCall)
	add(15, 20, "web", "app", trace.KindCall)
	add(90, 100, "app", "web", trace.KindReturn)
	add(120, 130, "web", "client", trace.KindReturn)
	var web []segment
	for _, s := range segments(tr, 1e9, 0) {
		if s.node == "web" {
			web = append(web, s)
		}
	}
	if len(web) != 1 || math.Abs(web[0].idle-0.085) > 1e-9 || math.Abs(web[0].dur-0.020) > 1e-9 || web[0].on {
		t.Errorf("web's segments %+v, want one: idle 0.085 ms, 0.020 ms, without the change", web)
	}
	if got := segments(tr, 1e9, 200_000); len(got) != 0 {
		t.Errorf("segments within the warm-up: %+v, want none", got)
	}
}

// TestIdleByNode: segments whose time follows a known line in log10 of
// the idle time, a decade idler with the change and 0.1 ms slower beyond
// the line, give the line's growth and the measured one per node.
func TestIdleByNode(t *testing.T) {
	var segs []segment
	for i := range 100 {
		idle := 1 + float64(i%10)/10
		segs = append(segs,
			segment{key: "db|q", node: "db", idle: idle, dur: 0.3 + 0.2*math.Log10(idle)},
			segment{key: "db|q", node: "db", idle: 10 * idle, dur: 0.3 + 0.2*math.Log10(10*idle) + 0.1, on: true},
			segment{key: "db|rare", node: "db", idle: idle, dur: 5, on: i < 10}) // too few with the change
	}
	got := idleByNode(segs, 30)
	db := got["db"]
	if db == nil || db.n != 100 || math.Abs(db.predicted/100-0.2) > 0.005 || math.Abs(db.measured/100-0.3) > 0.005 {
		t.Errorf("idleByNode: %+v, want 100 segments, foretold +0.2 ms and measured +0.3 each", db)
	}
}
