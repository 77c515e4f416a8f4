package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestServiceMapLabelsOnTheirLines lays out generated maps (a tiered
// system like the demo's, and random graphs of up to 14 hosts) and checks
// that no label overlaps another label or a host, that every label lies
// inside the drawing, and that its centre is on its own line (the line
// between the pair's hosts), so no label can be read as another line's.
func TestServiceMapLabelsOnTheirLines(t *testing.T) {
	type graph struct {
		name  string
		edges [][2]string
		roots []string
	}
	demo := graph{name: "demo", roots: []string{"client"}, edges: [][2]string{
		{"client", "web1"}, {"web1", "client"}, {"client", "web2"}, {"web2", "client"},
		{"web1", "app"}, {"app", "web1"}, {"web2", "app"}, {"app", "web2"},
		{"app", "redis"}, {"redis", "app"}, {"app", "auth"}, {"auth", "app"},
	}}
	graphs := []graph{demo}
	rng := rand.New(rand.NewPCG(12, 34))
	for g := range 40 {
		n := 3 + rng.IntN(12)
		gr := graph{name: fmt.Sprintf("random-%d", g), roots: []string{"h0"}}
		for i := 1; i < n; i++ {
			p := rng.IntN(i)
			gr.edges = append(gr.edges, [2]string{fmt.Sprintf("h%d", p), fmt.Sprintf("h%d", i)})
			if rng.IntN(2) == 0 {
				gr.edges = append(gr.edges, [2]string{fmt.Sprintf("h%d", i), fmt.Sprintf("h%d", p)})
			}
		}
		for range rng.IntN(n) {
			a, b := rng.IntN(n), rng.IntN(n)
			if a != b {
				gr.edges = append(gr.edges, [2]string{fmt.Sprintf("h%d", a), fmt.Sprintf("h%d", b)})
			}
		}
		graphs = append(graphs, gr)
	}
	for _, g := range graphs {
		edges := map[[2]string]*mapEdge{}
		var order [][2]string
		for i, k := range g.edges {
			if edges[k] != nil {
				continue
			}
			edges[k] = &mapEdge{From: k[0], To: k[1], Expected: float64(10 + i*7), Count: 10 + i, netSum: float64(i) * 123.4, netW: 1}
			order = append(order, k)
		}
		l := layoutMap(edges, order, g.roots)
		if l.Failed > 0 {
			t.Errorf("%s: %d labels found no free place after %d tries", g.name, l.Failed, l.Tries)
		}
		var boxes []smRect
		for _, n := range l.Hosts {
			q := l.Pos[n]
			boxes = append(boxes, smRect{q[0], q[1], smHostW / 2, smHostH / 2})
		}
		for _, pr := range l.Pairs {
			r := pr.Label
			for _, o := range boxes {
				if r.overlaps(o) {
					t.Errorf("%s: the label of %s–%s overlaps a host or a label", g.name, pr.A, pr.B)
				}
			}
			boxes = append(boxes, r)
			if r.x-r.hw < 0 || r.x+r.hw > l.W || r.y-r.hh < 0 || r.y+r.hh > l.H {
				t.Errorf("%s: the label of %s–%s is outside the drawing", g.name, pr.A, pr.B)
			}
			a, b := l.Pos[pr.A], l.Pos[pr.B]
			if d := distToSegment(r.x, r.y, a, b); d > 0.5 {
				t.Errorf("%s: the label of %s–%s is %.1f px off its line", g.name, pr.A, pr.B, d)
			}
		}
	}
}

// distToSegment is the distance from (x, y) to the segment a–b.
func distToSegment(x, y float64, a, b [2]float64) float64 {
	dx, dy := b[0]-a[0], b[1]-a[1]
	l2 := dx*dx + dy*dy
	t := 0.0
	if l2 > 0 {
		t = math.Max(0, math.Min(1, ((x-a[0])*dx+(y-a[1])*dy)/l2))
	}
	return math.Hypot(x-a[0]-t*dx, y-a[1]-t*dy)
}
