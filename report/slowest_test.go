package report

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// TestSlowestRequests: the keeper lists the slowest requests of all the
// windows, slowest first (ties in order of arrival), each with the ID the
// merged result gives it, against an oracle that holds every request.
func TestSlowestRequests(t *testing.T) {
	lat := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		max     int
		windows [][]causal.Request
	}{
		{"fewer than it keeps", 5, [][]causal.Request{
			{{StartNS: 10, Latency: lat(3)}, {StartNS: 20, Latency: lat(1)}},
		}},
		{"a slow one in the last window", 2, [][]causal.Request{
			{{StartNS: 10, Latency: lat(5)}, {StartNS: 20, Latency: lat(6)}, {StartNS: 30, Latency: lat(1)}},
			{{StartNS: 40, Latency: lat(2)}, {StartNS: 50, Latency: lat(9)}},
		}},
		{"background trees numbered after the requests", 3, [][]causal.Request{
			{{StartNS: 10, Latency: lat(1)}, {StartNS: 15, Latency: lat(8), Background: true}},
			{{StartNS: 20, Latency: lat(7)}, {StartNS: 5, Latency: lat(9), Background: true}},
		}},
		{"ties and unknown latencies", 3, [][]causal.Request{
			{{StartNS: 10, Latency: lat(4)}, {StartNS: 20}, {StartNS: 30, Latency: lat(4)}},
			{{StartNS: 40, Latency: lat(4)}, {StartNS: 50}},
		}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var random [][]causal.Request
	for range 20 {
		var w []causal.Request
		for range rng.IntN(50) {
			w = append(w, causal.Request{StartNS: rng.Int64N(1000), Latency: lat(float64(rng.IntN(30))), Background: rng.IntN(5) == 0})
		}
		random = append(random, w)
	}
	tests = append(tests, struct {
		name    string
		max     int
		windows [][]causal.Request
	}{"random", 25, random})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &SlowestRequests{max: tc.max}
			var all []causal.Request
			for _, w := range tc.windows {
				for i := range w {
					w[i].Label = fmt.Sprint(len(all) + i) // names the request for the comparison
				}
				all = append(all, w...)
				if err := s.Add(w); err != nil {
					t.Fatal(err)
				}
			}
			if s.Total() != len(all) {
				t.Errorf("total %d, want %d", s.Total(), len(all))
			}
			if got, want := ids(s.Requests()), ids(oracleSlowest(all, tc.max)); got != want {
				t.Errorf("kept\n got  %s\n want %s", got, want)
			}
		})
	}
}

// oracleSlowest numbers every request as a merged result does
// (causal.MergedRequestOrder, stable) and returns the n slowest as the
// HTML list sorts them (stable by latency).
func oracleSlowest(all []causal.Request, n int) []causal.Request {
	merged := slices.Clone(all)
	slices.SortStableFunc(merged, func(a, b causal.Request) int {
		return causal.MergedRequestOrder(a.Background, b.Background, a.StartNS, b.StartNS)
	})
	for i := range merged {
		merged[i].ID = i
	}
	byArrival := map[string]int{}
	for i := range all {
		byArrival[all[i].Label] = i
	}
	slices.SortStableFunc(merged, func(a, b causal.Request) int {
		return cmp.Or(cmp.Compare(latencyOf(&b), latencyOf(&a)), cmp.Compare(byArrival[a.Label], byArrival[b.Label]))
	})
	return merged[:min(n, len(merged))]
}

func ids(rs []causal.Request) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%s:id%d", r.Label, r.ID))
	}
	return fmt.Sprint(s)
}
