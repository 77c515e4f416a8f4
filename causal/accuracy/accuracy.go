// Package accuracy holds the accuracy experiments of Project 5 section 7.5
// run on the wirepath engines: each generates traces with causal/gen, runs
// an engine and scores it against the ground truth with causal/score.
//
// Stage and contract: accuracy sits above the engines and the scorer and is
// used by two callers only: its tests, which run short versions and assert
// the accuracy the papers report (bounds and curve shapes, never printed
// text), and scripts/accuracy.sh (the sweep command in tools/sweep), which runs
// the full-size versions and writes the tables of docs/accuracy.md. Both
// call the same functions, so the documented figures come from the tested
// experiments. Every experiment is deterministic (fixed seeds).
package accuracy

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/causal/score"
)

// Engine builds a fresh engine that lists the messages of every instance
// (Aggregate.KeepInstances), as the scorer needs.
type Engine func() causal.Engine

// Nesting returns the nesting engine with the paper's defaults and the
// given skew window and smoothing (in bins).
func Nesting(window time.Duration, smooth float64) Engine {
	o := nesting.DefaultOptions()
	o.Aggregate.KeepInstances = true
	o.SkewWindow = int64(window)
	o.Smooth = smooth
	return fresh(func() (causal.Engine, error) { return nesting.New(o) })
}

// Linking returns the message-linking engine with wirepath's default
// options (call-aware, learnt delays; docs/causal.md).
func Linking() Engine { return LinkingWith(linking.DefaultOptions()) }

// LinkingWAP5 returns the message-linking engine with WAP5's own options
// (linking.PureWAP5Options, `wirepath link --pure-wap5`).
func LinkingWAP5() Engine { return LinkingWith(linking.PureWAP5Options()) }

// LinkingWith returns the message-linking engine with the given options.
func LinkingWith(o linking.Options) Engine {
	o.Aggregate.KeepInstances = true
	return fresh(func() (causal.Engine, error) { return linking.New(o) })
}

// Assembly returns the per-request assembly engine with its defaults.
func Assembly() Engine {
	o := assembly.DefaultOptions()
	o.Aggregate.KeepInstances = true
	return fresh(func() (causal.Engine, error) { return assembly.New(o) })
}

// Convolution returns the convolution engine with the paper's defaults
// (μ = 10 ms). It infers edges and delays, not instances, so only its
// delays are scored (RunAddedDelay); On refuses it.
func Convolution() Engine {
	return fresh(func() (causal.Engine, error) { return convolution.New(convolution.DefaultOptions()) })
}

// fresh returns an Engine that builds a new engine with newEngine each
// time. The callers fix the options, so newEngine's error is a
// programming error: it panics at once.
func fresh(newEngine func() (causal.Engine, error)) Engine {
	if _, err := newEngine(); err != nil {
		panic(err)
	}
	return func() causal.Engine {
		e, _ := newEngine()
		return e
	}
}

// Case is a generated trace: a shipped configuration, shortened or
// lengthened to Duration, then edited.
type Case struct {
	Config   string
	Duration time.Duration
	Edit     func(*gen.Config)
}

// Generate builds the case's trace and truth.
func (c Case) Generate() (*gen.Output, error) {
	cfg, err := gen.LoadConfig(c.Config)
	if err != nil {
		return nil, err
	}
	if c.Duration > 0 {
		cfg.Duration = gen.Duration(c.Duration)
		cfg.Instances = 0
	}
	if c.Edit != nil {
		c.Edit(cfg)
	}
	return gen.Generate(cfg, gen.Options{})
}

// Run is one engine run on one generated trace, scored as trees of
// messages (Score) and as call trees (Calls).
type Run struct {
	Out    *gen.Output
	Result *causal.Result
	Score  *score.Report
	Calls  *score.Report
}

// Do generates the case, runs the engine on it and scores the result.
func Do(ctx context.Context, c Case, eng Engine) (*Run, error) {
	out, err := c.Generate()
	if err != nil {
		return nil, err
	}
	return On(ctx, out, eng)
}

// On runs the engine on a generated trace and scores the result.
func On(ctx context.Context, out *gen.Output, eng Engine) (*Run, error) {
	res, err := eng().Infer(ctx, out.Trace)
	if err != nil {
		return nil, err
	}
	rep, err := score.Score(res, out.Truth, score.DefaultOptions())
	if err != nil {
		return nil, err
	}
	if rep.Instances == nil {
		return nil, fmt.Errorf("%s: instances not scored: %v", res.Engine, rep.Warnings)
	}
	opt := score.DefaultOptions()
	opt.View = score.ViewCalls
	calls, err := score.Score(res, out.Truth, opt)
	if err != nil {
		return nil, err
	}
	return &Run{Out: out, Result: res, Score: rep, Calls: calls}, nil
}

// HopDelay returns the mean node delay (µs) of the hops from→to* (To with
// prefix to) over the patterns of res, weighted by pattern count, and the
// number of instances it averages.
func HopDelay(ps []causal.Pattern, from, toPrefix string) (mean float64, n int) {
	var sum, w float64
	for i := range ps {
		for _, h := range ps[i].Hops {
			if h.From != from || len(h.To) < len(toPrefix) || h.To[:len(toPrefix)] != toPrefix || h.NodeDelay == nil {
				continue
			}
			sum += h.NodeDelay.Mean * h.NodeDelay.Weight
			w += h.NodeDelay.Weight
			n += h.NodeDelay.N
		}
	}
	if w == 0 {
		return math.NaN(), 0
	}
	return sum / w, n
}

// AddedDelay is the result of the added-delay experiment of section 7.2.
type AddedDelay struct {
	// Normal and Added are the engine's mean node delay at WS2 before its
	// call to AP1|AP2 (µs) over all its patterns, in the normal and the
	// added-delay trace; NormalFound and AddedFound the same over the
	// inferred patterns that are true ones (NaN when there are none, as for
	// convolution, whose patterns merge alternatives); True* are the
	// truth's.
	Normal, Added           float64
	NormalFound, AddedFound float64
	TrueNormal, TrueAdded   float64
	NormalRun, AddedRun     *Run
}

// Measured is the added delay the engine measured over all patterns (µs).
func (a *AddedDelay) Measured() float64 { return a.Added - a.Normal }

// MeasuredFound is the added delay measured on the true patterns found.
func (a *AddedDelay) MeasuredFound() float64 { return a.AddedFound - a.NormalFound }

// Truth is the added delay in the generated traces (µs).
func (a *AddedDelay) Truth() float64 { return a.TrueAdded - a.TrueNormal }

// foundDelay is the mean inferred node delay of the hops from -> to* of the
// true patterns a report found, weighted by their true counts.
func foundDelay(r *score.Report, from, toPrefix string) float64 {
	var sum, w float64
	for _, h := range r.Hops {
		if h.From == from && strings.HasPrefix(h.To, toPrefix) && h.NodeUS != nil {
			sum += *h.NodeUS * float64(h.Weight)
			w += float64(h.Weight)
		}
	}
	if w == 0 {
		return math.NaN()
	}
	return sum / w
}

// RunAddedDelay runs the engine on the multitier and multitier-delay traces
// of the given duration and measures the delay at WS2. The runs are scored
// as trees of messages (instances only when the engine lists them).
func RunAddedDelay(ctx context.Context, eng Engine, dur time.Duration) (*AddedDelay, error) {
	var a AddedDelay
	for i, cfg := range []string{"multitier", "multitier-delay"} {
		out, err := Case{Config: cfg, Duration: dur}.Generate()
		if err != nil {
			return nil, err
		}
		res, err := eng().Infer(ctx, out.Trace)
		if err != nil {
			return nil, err
		}
		rep, err := score.Score(res, out.Truth, score.DefaultOptions())
		if err != nil {
			return nil, err
		}
		r := &Run{Out: out, Result: res, Score: rep}
		got, _ := HopDelay(res.Patterns, "WS2", "AP")
		want, _ := HopDelay(rep.TruthPatterns(), "WS2", "AP")
		found := foundDelay(rep, "WS2", "AP")
		if i == 0 {
			a.Normal, a.NormalFound, a.TrueNormal, a.NormalRun = got, found, want, r
		} else {
			a.Added, a.AddedFound, a.TrueAdded, a.AddedRun = got, found, want, r
		}
	}
	return &a, nil
}

// Pathological lists the four pathological cases of Project 5 Figure 18.
var Pathological = []string{"children-parallel", "children-0-2", "children-d-cc", "penalty-breaker"}

// Point is one point of a sweep.
type Point struct {
	// X is the swept value (skew in ms, loss rate, parallelism, ...).
	X float64
	// Loss is the fraction of messages the sniffer lost, at a peak capture
	// Rate (messages/s) for the drop sweep.
	Loss, Rate float64
	// Parallelism is Project 5's mean per-node call parallelism.
	Parallelism float64
	// Instance false-negative and false-positive rates, as trees of
	// messages and as call trees.
	FN, FP           float64
	CallsFN, CallsFP float64
	// TopOmitted is the largest number of omitted true patterns (within
	// 2% tolerance) over all N of the top-N curve.
	TopOmitted int
}

// WorstTopN returns the most true patterns missing from any top N of the
// report's curve (beyond near-ties), and for how many N that is more than
// 1/N of them (Project 5 Figure 17's bound).
func WorstTopN(r *score.Report) (worst, over int) {
	for _, p := range r.TopN {
		worst = max(worst, p.Omitted-p.Excused)
		if p.RateTolerant > 1/float64(p.N)+1e-9 {
			over++
		}
	}
	return worst, over
}

func point(x float64, r *Run) Point {
	p := Point{
		X:           x,
		Loss:        r.Out.Stats.LossRate(),
		Parallelism: r.Out.Stats.CallParallelism,
		FN:          r.Score.Instances.FalseNegativeRate,
		FP:          r.Score.Instances.FalsePositiveRate,
		CallsFN:     r.Calls.Instances.FalseNegativeRate,
		CallsFP:     r.Calls.Instances.FalsePositiveRate,
	}
	for _, t := range r.Score.TopN {
		p.TopOmitted = max(p.TopOmitted, t.Omitted-t.Excused)
	}
	return p
}

// Curve is one labelled sweep.
type Curve struct {
	Label  string
	Points []Point
}

// SkewVariant is one curve of Figure 22: the nesting engine's skew
// compensation and the direction of WS2's clock error.
type SkewVariant struct {
	Label  string
	Window time.Duration
	Smooth float64
	Slow   bool
}

// SkewVariants are the four curves of Project 5 Figure 22 with its 30 ms
// skew window.
var SkewVariants = []SkewVariant{
	{Label: "no comp"},
	{Label: "comp", Window: 30 * time.Millisecond},
	{Label: "comp+smooth", Window: 30 * time.Millisecond, Smooth: 2},
	{Label: "rev, comp+smooth", Window: 30 * time.Millisecond, Smooth: 2, Slow: true},
}

// SkewSweep reproduces Figure 22: WS2's clock runs fast (or slow) by each
// skew on single-timestamp multitier traces, and each variant's nesting
// engine is scored.
func SkewSweep(ctx context.Context, dur time.Duration, skews []time.Duration, variants []SkewVariant) ([]Curve, error) {
	var curves []Curve
	for _, v := range variants {
		c := Curve{Label: v.Label}
		for _, s := range skews {
			if v.Slow {
				s = -s
			}
			r, err := Do(ctx, Case{Config: "multitier", Duration: dur, Edit: func(c *gen.Config) {
				c.Skew = map[string]gen.Duration{"WS2": gen.Duration(s)}
			}}, Nesting(v.Window, v.Smooth))
			if err != nil {
				return nil, err
			}
			c.Points = append(c.Points, point(math.Abs(float64(s))/1e6, r))
		}
		curves = append(curves, c)
	}
	return curves, nil
}

// DropSweep reproduces Figure 21: a sniffer with a 64-message queue loses
// messages in bursts. Its peak capture rate is each factor times the
// trace's mean message rate; X is the resulting loss rate.
func DropSweep(ctx context.Context, cfgName string, dur time.Duration, factors []float64, eng Engine) (Curve, error) {
	c := Curve{Label: cfgName}
	base, err := Case{Config: cfgName, Duration: dur}.Generate()
	if err != nil {
		return c, err
	}
	mean := float64(base.Stats.Messages) / (float64(base.Stats.SpanNS) / 1e9)
	for _, f := range factors {
		r, err := Do(ctx, Case{Config: cfgName, Duration: dur, Edit: func(c *gen.Config) {
			c.Drop = gen.Drop{Rate: f * mean, Queue: 64}
		}}, eng)
		if err != nil {
			return c, err
		}
		p := point(r.Out.Stats.LossRate(), r)
		p.Rate = f * mean
		c.Points = append(c.Points, p)
	}
	return c, nil
}

// ParallelismSweep reproduces Figure 19: the number of clients grows; X is
// the resulting per-node call parallelism.
func ParallelismSweep(ctx context.Context, cfgName string, dur time.Duration, clients []int, eng Engine) (Curve, error) {
	c := Curve{Label: cfgName}
	for _, n := range clients {
		r, err := Do(ctx, Case{Config: cfgName, Duration: dur, Edit: func(c *gen.Config) { c.Clients = n }}, eng)
		if err != nil {
			return c, err
		}
		c.Points = append(c.Points, point(r.Out.Stats.CallParallelism, r))
	}
	return c, nil
}

// VariationSweep reproduces Figure 20: every delay's standard deviation is
// scaled; X is the scale.
func VariationSweep(ctx context.Context, cfgName string, dur time.Duration, scales []float64, eng Engine) (Curve, error) {
	c := Curve{Label: cfgName}
	for _, s := range scales {
		r, err := Do(ctx, Case{Config: cfgName, Duration: dur, Edit: func(c *gen.Config) { c.DelayScale = &s }}, eng)
		if err != nil {
			return c, err
		}
		c.Points = append(c.Points, point(s, r))
	}
	return c, nil
}

// BigSkew gives the multi-tier nodes clock offsets of seconds, as
// unsynchronised hosts have (WAP5 section 5.3: PlanetLab clocks differed by
// minutes).
var BigSkew = map[string]gen.Duration{
	"WS2":    gen.Duration(2 * time.Second),
	"AP1":    gen.Duration(-1500 * time.Millisecond),
	"DB":     gen.Duration(700 * time.Millisecond),
	"CLIENT": gen.Duration(30 * time.Second),
}

// ClockSync runs eng on the case as generated and with every node's clock
// shifted by skew (two timestamps per message).
func ClockSync(ctx context.Context, c Case, skew map[string]gen.Duration, eng Engine) (plain, skewed *Run, err error) {
	if plain, err = Do(ctx, c, eng); err != nil {
		return nil, nil, err
	}
	edit := c.Edit
	c.Edit = func(cfg *gen.Config) {
		if edit != nil {
			edit(cfg)
		}
		cfg.Skew = skew
	}
	skewed, err = Do(ctx, c, eng)
	return plain, skewed, err
}
