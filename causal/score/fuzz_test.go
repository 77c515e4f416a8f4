package score

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// FuzzScore feeds hostile results (the JSON a user hands `wirepath score`)
// to Score against a fixed truth: it must never panic, and what it reports
// must add up.
func FuzzScore(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Strings(f, "cmd/wirepath/testdata/traces/rpc-small.tsv")
	out := generate(f, "children-d-cc", 2*time.Second, nil)
	insts, _ := trueInstances(out)
	good, _ := json.Marshal(resultOf(out, insts))
	f.Add(string(good))                                                           // a perfect result with every instance listed
	f.Add(strings.Replace(string(good), `"parent":0`, `"parent":7`, 1))           // a parent out of range
	f.Add(strings.Replace(string(good), `"parent":1`, `"parent":2`, 1))           // a parent after its child
	f.Add(strings.Replace(string(good), `"messages":[`, `"messages":[99999,`, 1)) // an unknown message
	f.Add(strings.Replace(string(good), `"signature":"`, `"signature":"(`, 1))    // a bad signature
	f.Add(`{"version":1,"engine":"x","trace":{"messages":0},"patterns":[{"signature":"A->B","hops":[{"id":0,"parent":0,"from":"A","to":"B","kind":"RETURN"}],"count":3,"instances":[{"messages":[0,0,0]}]}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var res causal.Result
		if json.Unmarshal([]byte(in), &res) != nil {
			return
		}
		for _, view := range Views {
			opt := DefaultOptions()
			opt.View = view
			r, err := Score(&res, out.Truth, opt)
			if err != nil {
				continue
			}
			p := r.Patterns
			if p.TruePositives+p.FalsePositives != p.Inferred || p.FalseNegatives > p.Truth || p.TruePositives > p.Inferred {
				t.Fatalf("patterns do not add up: %+v", p)
			}
			for _, c := range []*CountScore{r.Instances, r.Messages} {
				if c == nil {
					continue
				}
				if c.FalsePositiveRate < 0 || c.FalsePositiveRate > 1 || c.FalseNegativeRate < 0 || c.FalseNegativeRate > 1 || c.Correct > c.Inferred && c == r.Instances {
					t.Fatalf("counts out of range: %+v", c)
				}
			}
			for _, pt := range r.TopN {
				if pt.Omitted > pt.N || pt.Excused > pt.Omitted {
					t.Fatalf("top-N point %+v", pt)
				}
			}
		}
	})
}

// FuzzScoreRequests scores arbitrary results' requests against a testbed
// fixture's truth: whatever a result file says (indices out of range, a
// call whose CALL was not seen, cycles), the scorer must not panic and its
// counts must add up.
func FuzzScoreRequests(f *testing.F) {
	x := newFixture()
	tr, of := x.traceOf(nil, -1)
	good, _ := json.Marshal(requestResult(tr, treeResult(tr, of, trueParents(x.f))))
	f.Add(string(good))
	f.Add(strings.Replace(string(good), `"msg":1,`, `"msg":-1,`, 1))               // a CALL not seen
	f.Add(strings.Replace(string(good), `"call":1,`, `"call":99,`, 1))             // a call out of range
	f.Add(strings.Replace(string(good), `"parent":0,`, `"parent":-7,`, 1))         // a parent out of range
	f.Add(strings.Replace(string(good), `"call_parent":-1`, `"call_parent":3`, 1)) // a root given a caller
	f.Fuzz(func(t *testing.T, in string) {
		var res causal.Result
		if json.Unmarshal([]byte(in), &res) != nil {
			return
		}
		s := NewRequestScores([]*causal.Result{&res}, tr, x.f, DefaultMapOptions())
		for _, r := range s.Engines {
			if r.Requests.Right > r.Requests.Observed || r.Requests.Observed > r.Requests.All {
				t.Fatalf("requests do not add up: %+v", r.Requests)
			}
		}
	})
}
