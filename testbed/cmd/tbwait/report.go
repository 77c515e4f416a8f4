package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
)

// mean is a running mean with its standard error.
type mean struct{ n, s1, s2 float64 }

func (m *mean) add(v float64) { m.n++; m.s1 += v; m.s2 += v * v }
func (m *mean) get() float64  { return m.s1 / max(m.n, 1) }
func (m *mean) se() float64 {
	if m.n < 2 {
		return 0
	}
	v := max(m.s2/m.n-m.get()*m.get(), 0) * m.n / (m.n - 1)
	return math.Sqrt(v / m.n)
}

// window is one kind's sums in one setting: the client's latency, the
// capture's, the transit over all links, each node's own time, and the
// post-wait time per request.
type window struct {
	client, latency, transit, overlap, post mean
	own                                     map[string]float64
}

// byKind groups the samples per kind and setting (0 without the change,
// 1 with it), and lists the nodes with an own time.
func byKind(all []sample) (map[string]*[2]window, []string) {
	ks := map[string]*[2]window{}
	nodes := map[string]bool{}
	for _, s := range all {
		w := ks[s.kind]
		if w == nil {
			w = &[2]window{{own: map[string]float64{}}, {own: map[string]float64{}}}
			ks[s.kind] = w
		}
		x := &w[boolIndex(s.on)]
		x.client.add(s.client)
		x.latency.add(s.b.Latency)
		var tr, own, post float64
		for _, l := range slices.Sorted(maps.Keys(s.b.Transit)) { // in order: sums the same every run
			tr += s.b.Transit[l]
		}
		for _, n := range slices.Sorted(maps.Keys(s.b.Own)) {
			x.own[n] += s.b.Own[n]
			own += s.b.Own[n]
			nodes[n] = true
		}
		for _, p := range s.b.Waits {
			post += p.Post
		}
		x.transit.add(tr)
		x.overlap.add(tr + own - s.b.Latency)
		x.post.add(post)
	}
	return ks, slices.Sorted(maps.Keys(nodes))
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeDecomposition prints, per kind, the change (with less without) of
// the client's latency and of its parts.
func writeDecomposition(w io.Writer, all []sample) {
	ks, nodes := byKind(all)
	head := "| kind | n without | n with | client Δ ms (±σ) | capture Δ | transit Δ (all links) |"
	sep := "|---|---:|---:|---:|---:|---:|"
	for _, n := range nodes {
		head += " own " + n + " Δ |"
		sep += "---:|"
	}
	fmt.Fprintln(w, head+" client's own Δ | overlap Δ |")
	fmt.Fprintln(w, sep+"---:|---:|")
	for _, k := range slices.Sorted(maps.Keys(ks)) {
		off, on := &ks[k][0], &ks[k][1]
		if off.client.n == 0 || on.client.n == 0 {
			continue
		}
		d := func(a, b *mean) string { return fmt.Sprintf("%+.2f", b.get()-a.get()) }
		row := fmt.Sprintf("| %s | %.0f | %.0f | %+.2f ±%.2f | %s | %s |", k, off.client.n, on.client.n,
			on.client.get()-off.client.get(), math.Hypot(on.client.se(), off.client.se()), d(&off.latency, &on.latency), d(&off.transit, &on.transit))
		for _, n := range nodes {
			row += fmt.Sprintf(" %+.2f |", on.own[n]/on.client.n-off.own[n]/off.client.n)
		}
		cOwn := (on.client.get() - on.latency.get()) - (off.client.get() - off.latency.get())
		fmt.Fprintf(w, "%s %+.2f | %s |\n", row, cOwn, d(&off.overlap, &on.overlap))
	}
	fmt.Fprintln(w, "\n(ms per request; own: the node's time holding a call less its waits on its own calls; overlap: transit plus own times less the capture's latency, the parallel calls' time counted twice)")
}

// group is one caller's post-wait samples after one callee in one kind,
// without (0) and with (1) the change.
type group struct {
	node, callee, kind string
	wait, post         [2][]float64
}

// postWaitGroups gathers the samples per caller, callee and kind.
func postWaitGroups(all []sample) []*group {
	gs := map[string]*group{}
	for _, s := range all {
		for _, p := range s.b.Waits {
			key := p.Node + "\x00" + p.Callee + "\x00" + s.kind
			g := gs[key]
			if g == nil {
				g = &group{node: p.Node, callee: p.Callee, kind: s.kind}
				gs[key] = g
			}
			i := boolIndex(s.on)
			g.wait[i] = append(g.wait[i], p.Wait)
			g.post[i] = append(g.post[i], p.Post)
		}
	}
	out := make([]*group, 0, len(gs))
	for _, k := range slices.Sorted(maps.Keys(gs)) {
		out = append(out, gs[k])
	}
	return out
}

// trimmed drops the samples whose post-wait is above the 99th percentile
// (a single descheduled process would move a mean of a hundred), and
// returns log10 of the waits (ms, at least 10 µs) and the post-waits.
func trimmed(wait, post []float64) (x, y []float64) {
	if len(post) == 0 {
		return nil, nil
	}
	s := slices.Sorted(slices.Values(post))
	cut := s[min(len(s)-1, int(float64(len(s))*0.99))]
	for i := range post {
		if post[i] <= cut {
			x = append(x, math.Log10(max(wait[i], 0.01)))
			y = append(y, post[i])
		}
	}
	return x, y
}

// growth is a group's fit in the windows without the change and the
// change of its mean post-wait: measured (with less without) and as the
// fit gives it from the waits' change.
type growth struct {
	f                   fit
	measured, predicted float64
	n                   [2]int
}

// grow fits g (nil-safe: ok false without minN samples in each window).
func grow(g *group, minN int) (growth, bool) {
	x0, y0 := trimmed(g.wait[0], g.post[0])
	x1, y1 := trimmed(g.wait[1], g.post[1])
	if len(x0) < minN || len(x1) < minN {
		return growth{}, false
	}
	f := olsFit(x0, y0)
	avg := func(v []float64) float64 {
		var s float64
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	return growth{f: f, measured: avg(y1) - avg(y0), predicted: f.B * (avg(x1) - f.MeanX), n: [2]int{len(x0), len(x1)}}, true
}

// writePostWait prints the post-wait test: per caller, callee and kind
// the fit and the changes (of the callers listed, all if none is); then
// per kind the change per request, over every caller.
func writePostWait(w io.Writer, all []sample, minN int, callers []string) {
	callers = slices.DeleteFunc(callers, func(s string) bool { return s == "" })
	ks, _ := byKind(all)
	perKind := map[string]*[2]float64{}
	fmt.Fprintln(w, "| caller | callee | kind | n without | n with | wait without ms | wait with ms | post-wait slope ms per decade of wait (±σ) | post-wait Δ ms | from the windows without |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, g := range postWaitGroups(all) {
		gr, ok := grow(g, minN)
		if !ok {
			continue
		}
		if len(callers) == 0 || slices.Contains(callers, g.node) {
			fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %.2f | %.2f | %+.3f ±%.3f | %+.3f | %+.3f |\n", g.node, g.callee, g.kind, gr.n[0], gr.n[1],
				median(g.wait[0]), median(g.wait[1]), gr.f.B, gr.f.SE, gr.measured, gr.predicted)
		}
		if ks[g.kind] == nil || ks[g.kind][1].client.n == 0 {
			continue
		}
		p := perKind[g.kind]
		if p == nil {
			p = &[2]float64{}
			perKind[g.kind] = p
		}
		per := float64(gr.n[1]) / ks[g.kind][1].client.n
		p[0] += per * gr.measured
		p[1] += per * gr.predicted
	}
	fmt.Fprintln(w, "\n| kind | client Δ ms | own time Δ (all nodes) | post-wait Δ per request (fitted groups) | of it foretold by the windows without |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, k := range slices.Sorted(maps.Keys(ks)) {
		off, on := &ks[k][0], &ks[k][1]
		if off.client.n == 0 || on.client.n == 0 {
			continue
		}
		var own float64
		for n := range on.own {
			own += on.own[n] / on.client.n
		}
		for n := range off.own {
			own -= off.own[n] / off.client.n
		}
		p := perKind[k]
		if p == nil {
			p = &[2]float64{}
		}
		fmt.Fprintf(w, "| %s | %+.2f | %+.2f | %+.2f | %+.2f |\n", k, on.client.get()-off.client.get(), own, p[0], p[1])
	}
	fmt.Fprintln(w, "\n(post-waits of calls that overlapped no other call of their caller; the top 1 % of each window's post-waits left out of the fits)")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
