package whatif

import (
	"math"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// TestNodeOutliers: a visit whose work is far beyond the others' (a
// message the engine attached to the wrong request) is left out of the
// node's work, C² and busy periods, counted and noted; a node whose
// visits take one time and a few take four times as long keeps them all
// (no IQR, but within ten times the third quartile); too few visits
// keep everything.
func TestNodeOutliers(t *testing.T) {
	visits := func(works ...float64) []nodeVisit {
		var vs []nodeVisit
		for i, w := range works {
			end := int64(i+1) * 10e9
			vs = append(vs, nodeVisit{work: w, weight: 1, busy: []interval{{end - int64(w*1e3), end}}})
		}
		return vs
	}
	ms := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, c := range []struct {
		name     string
		works    []float64
		outliers float64
		workUS   float64
	}{
		{"a stray second", append(ms(19, 1000), 2e6), 1, 1000},
		{"bimodal service", append(ms(16, 1000), ms(4, 4000)...), 0, 1600},
		{"too few to judge", append(ms(6, 1000), 2e6), 0, (6*1000 + 2e6) / 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			nd := &Node{}
			nd.fromVisits(visits(c.works...), 10*float64(len(c.works)))
			if nd.Outliers != c.outliers || !near(nd.WorkUS, c.workUS) {
				t.Errorf("outliers %v, work %v µs; want %v, %v", nd.Outliers, nd.WorkUS, c.outliers, c.workUS)
			}
			// The busy periods are the kept visits' work over the span.
			busy := 0.0
			for _, w := range c.works {
				if c.outliers == 0 || w < 1e6 {
					busy += w
				}
			}
			if want := math.Min(busy/1e6/(10*float64(len(c.works))), 0.999); !near(nd.Utilisation, want) || nd.Source != Measured {
				t.Errorf("utilisation %v (%s), want %v", nd.Utilisation, nd.Source, want)
			}
		})
	}
}

// TestPrimaryInstances: of a request's alternative instances only the
// most probable one's work counts in the busy periods; requests without
// times (a pattern's means) have none.
func TestPrimaryInstances(t *testing.T) {
	m := &Model{Requests: []Request{
		{Root: 7, Weight: 0.3}, {Root: 7, Weight: 0.7}, {Root: 9, Weight: 1}, {Root: -1, Weight: 4},
		{Root: 11, Weight: 0.5}, {Root: 11, Weight: 0.5},
	}}
	got := m.primaryInstances()
	want := []bool{false, true, true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: primary %v, want %v", i, got[i], want[i])
		}
	}
}

// TestLinkFill: a measured link takes the minimum as γ, keeps its own
// samples' median and 90th percentile, and says where the capture point
// that measured it is.
func TestLinkFill(t *testing.T) {
	for _, c := range []struct {
		pos, want string
	}{{"A", "near app"}, {"B", "near db"}, {"between", "between"}, {"", ""}} {
		tl := trace.Link{A: "app", B: "db", Proto: "tcp", Conns: 1, Calls: 4, WindowA: -1, WindowB: -1,
			RTT:    trace.LinkRTT{Known: true, MinNS: 50e3, P50NS: 80e3, P90NS: 2e6, Samples: 30, Point: "s0", Method: "link"},
			Points: []trace.LinkPoint{{Point: "s0/1", Position: c.pos}}}
		l := &Link{A: "app", B: "db"}
		l.fill([]*trace.Link{&tl})
		if l.RTTUS != 50 || l.RTTP50US != 80 || l.RTTP90US != 2000 || l.RTTSource != Measured || l.Position != c.want {
			t.Errorf("position %q: %+v", c.pos, l)
		}
	}
}
