package accuracy

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
)

// unseenFS holds the configurations of systems the engines were not
// tuned on (docs/accuracy.md, "Systems the engine was not tuned on").
//
//go:embed testdata/unseen/*.yaml
var unseenFS embed.FS

// UnseenConfigs are the names of those configurations, in the order of
// the table: a Node.js-style event loop, a bounded worker pool,
// asynchronous fan-out with out-of-order replies and optional calls, and
// background traffic with early failures.
var UnseenConfigs = []string{"eventloop", "workerpool", "fanout", "background"}

// UnseenConfig parses the named configuration.
func UnseenConfig(name string) (*gen.Config, error) {
	file := path.Join("testdata/unseen", name+".yaml")
	b, err := unseenFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("no unseen configuration %q", name)
	}
	return gen.ParseConfig(bytes.NewReader(b), name+".yaml")
}

// UnseenPoint is one method's score on one configuration at one number
// of requests in flight (the generator's closed-loop clients).
type UnseenPoint struct {
	Config, Method string
	Clients        int
	Stats          gen.Stats
	Score          ExactScore
	// Confidence is the mean confidence of the requests the engine
	// assembled (not background; NaN when it gives none), to set beside
	// the share exactly right.
	Confidence float64
	// Unbalanced lists the engine's accounting identities that do not
	// hold; Err is the engine's error, if it failed.
	Unbalanced []string
	Err        string
}

// UnseenSweep generates every named configuration at every number of
// clients (instances requests each; 0: the configuration's 1,000) and
// scores FCFS and each engine named in order on it. An engine's error is
// recorded in its point, not returned, so that one failure does not hide
// the rest.
func UnseenSweep(ctx context.Context, configs []string, clients []int, instances int, engines map[string]Engine, order []string) ([]UnseenPoint, error) {
	var pts []UnseenPoint
	for _, name := range configs {
		for _, n := range clients {
			cfg, err := UnseenConfig(name)
			if err != nil {
				return nil, err
			}
			cfg.Clients = n
			if instances > 0 {
				cfg.Instances = instances
			}
			out, err := gen.Generate(cfg, gen.Options{})
			if err != nil {
				return nil, fmt.Errorf("%s, %d in flight: %w", name, n, err)
			}
			base := UnseenPoint{Config: name, Clients: n, Stats: out.Stats, Confidence: math.NaN()}
			p := base
			p.Method, p.Score = MethodFCFS, ExactRequests(out, FCFS(out.Trace, false))
			pts = append(pts, p)
			for _, e := range order {
				pts = append(pts, unseenRun(ctx, base, e, engines[e], out))
			}
		}
	}
	return pts, nil
}

// unseenRun runs one engine on out and scores it.
func unseenRun(ctx context.Context, p UnseenPoint, name string, eng Engine, out *gen.Output) UnseenPoint {
	p.Method = name
	res, err := eng().Infer(ctx, out.Trace)
	if err != nil {
		p.Err = err.Error()
		return p
	}
	a, ok := EngineAssignment(res, out.Trace)
	if !ok {
		p.Err = "lists no instances"
		return p
	}
	p.Score = ExactRequests(out, a)
	p.Confidence = meanConfidence(res)
	p.Unbalanced = Unbalanced(res)
	return p
}

// meanConfidence is the mean confidence of res's requests that are not
// background, NaN when it has none.
func meanConfidence(res *causal.Result) float64 {
	sum, n := 0.0, 0
	for _, r := range res.Requests {
		if !r.Background {
			sum += r.Confidence
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// balances are accounting identities of the engines: the counter on the
// left equals the sum of those on the right, when the result has them
// all.
var balances = []struct {
	total string
	parts []string
}{
	{"messages", []string{"messages_in_requests", "messages_no_timestamp"}},
	{"calls", []string{"paired_by_call_id", "paired_by_stream", "paired_by_ordinal", "paired_by_order", "unpaired_calls", "unpaired_returns", "one_way_messages"}},
	{"calls", []string{"calls_root", "calls_background", "links_exact_id", "links_thread", "links_only_candidate", "links_joint"}},
}

// Unbalanced returns the accounting identities of balances that res's
// counters (those of its engine's stage) break, as "total = parts"
// strings with the values; identities with a counter res lacks are
// skipped.
func Unbalanced(res *causal.Result) []string {
	got := map[string]int64{}
	for _, c := range res.Accounting {
		if c.Stage == res.Engine {
			got[c.Name] += c.Value
		}
	}
	var bad []string
	for _, b := range balances {
		total, ok := got[b.total]
		sum := int64(0)
		var vals []string
		for _, p := range b.parts {
			v, has := got[p]
			ok = ok && has
			sum += v
			vals = append(vals, fmt.Sprintf("%s %d", p, v))
		}
		if ok && total != sum {
			bad = append(bad, fmt.Sprintf("%s %d ≠ %s", b.total, total, strings.Join(vals, " + ")))
		}
	}
	return bad
}
