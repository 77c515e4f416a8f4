package accuracy

import (
	"bytes"
	"context"
	_ "embed" // the in-flight sweep's configuration
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/trace"
)

// inflightYAML is the testbed's shape as a generator configuration: a web
// tier, a threaded application server calling a memcached store and a
// Redis cache over small shared pools and a second tier that fans out to
// three backends, each querying a database over a pool of two; failures
// and background calls over the same pools.
//
//go:embed testdata/inflight.yaml
var inflightYAML []byte

// InflightVariant is one evidence variant of the in-flight sweep: what
// the trace carries beside timing.
type InflightVariant struct {
	Name string
	Edit func(*gen.Config)
}

// InflightVariants are the sweep's variants, from the most evidence to
// the least: propagated ids, content tokens and the application's thread
// ids (traced); without the threads; timing, connections and labels only
// (opaque); opaque with a sniffer's 0.5 % random loss and the database
// host's clock 2 ms off.
var InflightVariants = []InflightVariant{
	{"ids, tokens, app traced", func(*gen.Config) {}},
	{"ids, tokens", func(c *gen.Config) { setNodes(c, func(n *gen.NodeSpec) { n.Traced = false }) }},
	{"opaque", opaque},
	{"opaque, 0.5 % loss, db clock 2 ms off", func(c *gen.Config) {
		opaque(c)
		c.Drop.Random = 0.005
		c.Skew = map[string]gen.Duration{"db": gen.Duration(2 * time.Millisecond)}
	}},
}

func opaque(c *gen.Config) {
	setNodes(c, func(n *gen.NodeSpec) { n.Traced, n.IDs = false, "" })
	c.Evidence.Tokens = nil
}

func setNodes(c *gen.Config, f func(*gen.NodeSpec)) {
	for k, n := range c.Nodes {
		f(&n)
		c.Nodes[k] = n
	}
}

// InflightPoint is one engine's score on one variant at one number of
// requests in flight (the generator's clients).
type InflightPoint struct {
	Variant, Engine string
	Clients         int
	Stats           gen.Stats
	Score           ExactScore
	// Links counts, per link (caller→callee; the backends b1, b2 and b3
	// as "backend"), the requests' calls with their true parent and all.
	Links map[string][2]int
}

// InflightSweep generates the in-flight configuration for every variant
// and number of clients (instances requests each; 0: the configuration's
// 1,000) and scores each engine named in order on it by TraceWeaver's
// metric, per link too.
func InflightSweep(ctx context.Context, variants []InflightVariant, clients []int, instances int, engines map[string]Engine, order []string) ([]InflightPoint, error) {
	var pts []InflightPoint
	for _, v := range variants {
		for _, n := range clients {
			cfg, err := gen.ParseConfig(bytes.NewReader(inflightYAML), "inflight.yaml")
			if err != nil {
				return nil, err
			}
			v.Edit(cfg)
			cfg.Clients = n
			if instances > 0 {
				cfg.Instances = instances
			}
			out, err := gen.Generate(cfg, gen.Options{})
			if err != nil {
				return nil, fmt.Errorf("%s, %d in flight: %w", v.Name, n, err)
			}
			for _, name := range order {
				res, err := engines[name]().Infer(ctx, out.Trace)
				if err != nil {
					return nil, fmt.Errorf("%s on %s, %d in flight: %w", name, v.Name, n, err)
				}
				a, ok := EngineAssignment(res, out.Trace)
				if !ok {
					return nil, fmt.Errorf("%s lists no instances", name)
				}
				pts = append(pts, InflightPoint{Variant: v.Name, Engine: name, Clients: n, Stats: out.Stats,
					Score: ExactRequests(out, a), Links: LinkAttribution(out, a)})
			}
		}
	}
	return pts, nil
}

// LinkAttribution counts, per link (the true call's caller→callee, the
// backends b1, b2, b3 as one), the calls of requests (not background)
// that a gives their true parent call, and all of them.
func LinkAttribution(out *gen.Output, a Assignment) map[string][2]int {
	tr := out.Truth
	ms := tr.Trace.Messages
	parents := score.TruthCallParents(tr)
	bg := make([]bool, len(tr.Meta.Tracelets))
	for i, name := range tr.Meta.Tracelets {
		bg[i] = slices.Contains(tr.Meta.Background, name)
	}
	links := map[string][2]int{}
	for i := range ms {
		m := &ms[i]
		if m.Kind == trace.KindReturn || parents[i] < 0 || bg[tr.Tracelet[i]] {
			continue
		}
		k := tierName(tr.Trace.Str(m.SrcNode)) + "→" + tierName(tr.Trace.Str(m.DstNode))
		c := links[k]
		c[1]++
		if o := tr.Observed[i]; o >= 0 && int(o) < len(a) && a[o] == tr.Observed[parents[i]] {
			c[0]++
		}
		links[k] = c
	}
	return links
}

// tierName names the backends b1, b2, b3 as one tier.
func tierName(s string) string {
	if len(s) == 2 && strings.HasPrefix(s, "b") {
		return "backend"
	}
	return s
}
