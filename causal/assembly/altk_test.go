package assembly

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestAlternativesListOnly: --alternatives K chooses how many of the
// search's alternatives a link lists and nothing else. The requests,
// their links, evidence and confidences are the same for every K, and a
// link's alternatives at K are the first K of those at the most K.
// (The search's own width fed the refits, the local search and the
// posterior, so listing fewer changed the assignment.)
func TestAlternativesListOnly(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.config, func(t *testing.T) {
			tr := configTrace(t, tc.config, tc.d)
			var widest *causal.Result
			for k := searchAlts; k >= 0; k-- {
				o := DefaultOptions()
				o.Alternatives = k
				res := inferWith(t, o, tr)
				if k == searchAlts {
					widest = res
					continue
				}
				compareListed(t, k, res, widest)
			}
		})
	}
}

func inferWith(t *testing.T, o Options, tr *trace.Trace) *causal.Result {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Infer(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Requests) == 0 {
		t.Fatal("no requests")
	}
	return res
}

// compareListed checks that res, listing k alternatives, is wide (listing
// more) cut to k alternatives per link.
func compareListed(t *testing.T, k int, res, wide *causal.Result) {
	t.Helper()
	if len(res.Requests) != len(wide.Requests) {
		t.Fatalf("K %d: %d requests, %d at K %d", k, len(res.Requests), len(wide.Requests), searchAlts)
	}
	listed := 0
	for i := range res.Requests {
		got, want := res.Requests[i], wide.Requests[i]
		got.Messages, want.Messages = slices.Clone(got.Messages), slices.Clone(want.Messages)
		if len(got.Messages) != len(want.Messages) {
			t.Fatalf("K %d: request %d has %d messages, %d at K %d", k, i, len(got.Messages), len(want.Messages), searchAlts)
		}
		for j := range got.Messages {
			g, w := got.Messages[j], want.Messages[j]
			if !slices.Equal(g.Alternatives, w.Alternatives[:min(k, len(w.Alternatives))]) {
				t.Fatalf("K %d: request %d message %d lists %v, want the first %d of %v", k, i, j, g.Alternatives, k, w.Alternatives)
			}
			listed += len(g.Alternatives)
			g.Alternatives, w.Alternatives = nil, nil
			got.Messages[j], want.Messages[j] = g, w
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Fatalf("K %d: request %d differs beyond its alternatives:\n%s\n%s", k, i, a, b)
		}
	}
	if k > 0 && listed == 0 {
		t.Errorf("K %d: no alternative listed", k)
	}
}
