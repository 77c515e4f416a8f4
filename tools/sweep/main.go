// Command sweep runs the full-size accuracy experiments of package
// causal/accuracy and prints them as the Markdown of docs/accuracy.md's
// measured sections. scripts/accuracy.sh runs it; tests run short versions
// of the same experiments. It is a tool, not part of the product.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wirepath/wirepath/causal/accuracy"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/score"
)

func main() {
	dur := flag.Duration("duration", 1300*time.Second, "length of the multi-tier traces")
	short := flag.Duration("short", 300*time.Second, "length of the sweep traces")
	only := flag.String("only", "", "run only the experiments whose names contain this (topn, delay, clock, linking, linkdiag, patho, assembly, par, var, drop, skew, traceweaver, loss, inflight, unseen, calibration)")
	flag.Parse()
	if err := run(os.Stdout, *dur, *short, *only); err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(1)
	}
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// config is what every experiment reads: the length of the full-size
// and of the sweep traces, and the nesting engine.
type config struct {
	dur, short time.Duration
	nest       accuracy.Engine
}

// experiments are the sections of the output, in order; -only runs those
// with a name that contains its argument.
var experiments = []struct {
	names []string
	run   func(ctx context.Context, w io.Writer, c config) error
}{
	{[]string{"topn"}, topN},
	{[]string{"delay"}, addedDelay},
	{[]string{"clock", "link"}, clocks},
	{[]string{"linking"}, linkingTables},
	{[]string{"linkdiag"}, linkingDiagnosis},
	{[]string{"patho"}, pathological},
	{[]string{"assembly", "patho"}, assemblyCases},
	{[]string{"par"}, parallelism},
	{[]string{"var"}, variation},
	{[]string{"drop"}, drop},
	{[]string{"skew"}, skew},
	{[]string{"traceweaver", "requests"}, traceWeaver},
	{[]string{"loss"}, loss},
	{[]string{"inflight", "requests"}, inflight},
	{[]string{"unseen", "requests"}, unseen},
	{[]string{"calibration"}, calibration},
}

// curveCases are the configurations the sweeps of nesting cover.
var curveCases = append([]string{"multitier"}, accuracy.Pathological...)

func run(w io.Writer, dur, short time.Duration, only string) error {
	ctx := context.Background()
	cfg := config{dur: dur, short: short, nest: accuracy.Nesting(0, 0)}
	started := time.Now()
	for _, e := range experiments {
		if !slices.ContainsFunc(e.names, func(name string) bool { return only == "" || strings.Contains(name, only) }) {
			continue
		}
		if err := e.run(ctx, w, cfg); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "sweep: %v\n", time.Since(started).Round(time.Second))
	return nil
}

// topN writes the top-N false negatives of nesting on the full-size
// multi-tier trace (Figure 17).
func topN(ctx context.Context, w io.Writer, cfg config) error {
	r, err := accuracy.Do(ctx, accuracy.Case{Config: "multitier", Duration: cfg.dur}, cfg.nest)
	if err != nil {
		return err
	}
	s := r.Score
	fmt.Fprintf(w, "### Top-N false negatives, nesting, multitier (Figure 17)\n\n")
	c := r.Calls
	fmt.Fprintf(w, "%d messages, %d instances, per-node call parallelism %.2f. Patterns: %d true, %d inferred, %d false negatives. Instances: %s false negatives, %s false positives (as call trees: %d patterns inferred, instances %s false negatives). Node delay error of the patterns found: %s.\n\n",
		s.Truth.Messages, s.Truth.Instances, r.Out.Stats.CallParallelism, s.Patterns.Truth, s.Patterns.Inferred, s.Patterns.FalseNegatives,
		pct(s.Instances.FalseNegativeRate), pct(s.Instances.FalsePositiveRate), c.Patterns.Inferred, pct(c.Instances.FalseNegativeRate), pct(s.Delays.NodeRelError))
	opt := score.DefaultOptions()
	opt.Tolerance = 0.06
	s6, err := score.Score(r.Result, r.Out.Truth, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| N | omitted | rate | rate, 2%% tolerance | rate, 6%% tolerance | 1/N |\n|---|---|---|---|---|---|\n")
	for i, p := range s.TopN {
		fmt.Fprintf(w, "| %d | %d | %.3f | %.3f | %.3f | %.3f |\n", p.N, p.Omitted, p.Rate, p.RateTolerant, s6.TopN[i].RateTolerant, 1/float64(p.N))
	}
	fmt.Fprintln(w)
	return nil
}

// addedDelay writes the delay added at WS2 as each engine measures it
// (section 7.2).
func addedDelay(ctx context.Context, w io.Writer, cfg config) error {
	a, err := accuracy.RunAddedDelay(ctx, cfg.nest, cfg.dur)
	if err != nil {
		return err
	}
	l, err := accuracy.RunAddedDelay(ctx, accuracy.Linking(), cfg.short)
	if err != nil {
		return err
	}
	lw, err := accuracy.RunAddedDelay(ctx, accuracy.LinkingWAP5(), cfg.short)
	if err != nil {
		return err
	}
	c, err := accuracy.RunAddedDelay(ctx, accuracy.Convolution(), cfg.short)
	if err != nil {
		return err
	}
	ms := func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf("%.1f ms", v/1e3)
	}
	fmt.Fprintf(w, "### Added delay at WS2 (section 7.2)\n\n")
	fmt.Fprintf(w, "Mean node delay at WS2 before its call to AP1|AP2, over all inferred patterns and over the inferred patterns that are true ones: nesting on the %v traces, linking (default options, and WAP5's with `--pure-wap5`) and convolution (μ = 10 ms) on %v ones. Convolution's patterns merge alternatives, so none is a true pattern.\n\n", cfg.dur, cfg.short)
	fmt.Fprintf(w, "| trace | nesting | nesting, true patterns | linking | linking, true patterns | linking WAP5 | linking WAP5, true patterns | convolution | truth |\n|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, n, nf, lv, lf, wv, wf, cv, tv float64) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, ms(n), ms(nf), ms(lv), ms(lf), ms(wv), ms(wf), ms(cv), ms(tv))
	}
	row("multitier", a.Normal, a.NormalFound, l.Normal, l.NormalFound, lw.Normal, lw.NormalFound, c.Normal, a.TrueNormal)
	row("multitier-delay", a.Added, a.AddedFound, l.Added, l.AddedFound, lw.Added, lw.AddedFound, c.Added, a.TrueAdded)
	row("**added**", a.Measured(), a.MeasuredFound(), l.Measured(), l.MeasuredFound(), lw.Measured(), lw.MeasuredFound(), c.Measured(), a.Truth())
	fmt.Fprintln(w)
	return nil
}

// clocks writes linking and nesting with synchronised and skewed clocks
// (WAP5 section 5.2).
func clocks(ctx context.Context, w io.Writer, cfg config) error {
	fmt.Fprintf(w, "### Linking and clock offsets (WAP5 section 5.2)\n\n")
	fmt.Fprintf(w, "Multitier traces of %v with two timestamps per message; skewed: WS2 +2 s, AP1 −1.5 s, DB +0.7 s, every client +30 s. Instance rates (weighted by linking's instance probabilities in brackets).\n\n", cfg.short)
	fmt.Fprintf(w, "| clients | engine | clocks | call parallelism | instance false neg. | instance false pos. | most omitted in top N | node delay error |\n|---|---|---|---|---|---|---|---|\n")
	for _, clients := range []int{4, 16} {
		c := accuracy.Case{Config: "multitier", Duration: cfg.short, Edit: func(c *gen.Config) { c.Clients = clients }}
		for _, e := range []struct {
			name string
			eng  accuracy.Engine
		}{{"linking", accuracy.Linking()}, {"linking WAP5", accuracy.LinkingWAP5()}, {"nesting", cfg.nest}} {
			p, sk, err := accuracy.ClockSync(ctx, c, accuracy.BigSkew, e.eng)
			if err != nil {
				return err
			}
			for _, r := range []*accuracy.Run{p, sk} {
				clocks := "synchronised"
				if r == sk {
					clocks = "skewed"
				}
				i := r.Score.Instances
				most := 0
				for _, t := range r.Score.TopN {
					most = max(most, t.Omitted-t.Excused)
				}
				fmt.Fprintf(w, "| %d | %s | %s | %.2f | %s (%s) | %s (%s) | %d of %d | %s |\n", clients, e.name, clocks, r.Out.Stats.CallParallelism,
					pct(i.FalseNegativeRate), pct(i.WeightedFalseNegativeRate), pct(i.FalsePositiveRate), pct(i.WeightedFalsePositiveRate),
					most, len(r.Score.TopN), pct(r.Score.Delays.NodeRelError))
			}
		}
	}
	fmt.Fprintln(w)
	return nil
}

// pathological writes nesting on the pathological cases (Figure 18).
func pathological(ctx context.Context, w io.Writer, cfg config) error {
	fmt.Fprintf(w, "### Pathological cases (Figure 18), nesting, %v traces\n\n", cfg.short)
	fmt.Fprintf(w, "| case | call parallelism | patterns true / inferred / false neg. | instance false neg. | instance false pos. | message false neg. | calls: patterns inferred | calls: instance false neg. |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range accuracy.Pathological {
		r, err := accuracy.Do(ctx, accuracy.Case{Config: name, Duration: cfg.short}, cfg.nest)
		if err != nil {
			return err
		}
		s := r.Score
		fmt.Fprintf(w, "| %s | %.2f | %d / %d / %d | %s | %s | %s | %d | %s |\n", name, r.Out.Stats.CallParallelism,
			s.Patterns.Truth, s.Patterns.Inferred, s.Patterns.FalseNegatives,
			pct(s.Instances.FalseNegativeRate), pct(s.Instances.FalsePositiveRate), pct(s.Messages.FalseNegativeRate),
			r.Calls.Patterns.Inferred, pct(r.Calls.Instances.FalseNegativeRate))
	}
	fmt.Fprintln(w)
	return nil
}

// assemblyCases writes the call trees the assembly engine, nesting and
// linking get wrong on the multi-tier system and the pathological cases,
// each engine on the same trace.
func assemblyCases(ctx context.Context, w io.Writer, cfg config) error {
	fmt.Fprintf(w, "### The assembly engine on Project 5's traces, %v: call trees wrong\n\n", cfg.short)
	fmt.Fprintf(w, "| case | call parallelism | assembly | nesting | linking |\n|---|---|---|---|---|\n")
	for _, name := range append([]string{"multitier"}, accuracy.Pathological...) {
		out, err := accuracy.Case{Config: name, Duration: cfg.short}.Generate()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %.2f |", name, out.Stats.CallParallelism)
		for _, eng := range []accuracy.Engine{accuracy.Assembly(), cfg.nest, accuracy.Linking()} {
			r, err := accuracy.On(ctx, out, eng)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, " %s |", pct(r.Calls.Instances.FalseNegativeRate))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return nil
}

// parallelism writes nesting's false positives by parallelism (Figure 19).
func parallelism(ctx context.Context, w io.Writer, cfg config) error {
	fmt.Fprintf(w, "### Parallelism (Figure 19), nesting: instance false-positive rate\n\n| clients |")
	var cs []accuracy.Curve
	clients := []int{4, 8, 16, 32, 64}
	for _, name := range curveCases {
		c, err := accuracy.ParallelismSweep(ctx, name, cfg.short, clients, cfg.nest)
		if err != nil {
			return err
		}
		cs = append(cs, c)
		fmt.Fprintf(w, " %s |", name)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(cs)))
	for i, n := range clients {
		fmt.Fprintf(w, "| %d |", n)
		for _, c := range cs {
			fmt.Fprintf(w, " %s (p %.1f) |", pct(c.Points[i].FP), c.Points[i].Parallelism)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n(p: Project 5's mean per-node call parallelism of the trace.)\n\n")
	return nil
}

// variation writes nesting's false positives by delay variation (Figure 20).
func variation(ctx context.Context, w io.Writer, cfg config) error {
	var cs []accuracy.Curve
	for _, name := range curveCases {
		c, err := accuracy.VariationSweep(ctx, name, cfg.short, []float64{0.5, 1, 2, 3, 4}, cfg.nest)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	writeCurves(w, "Delay variation (Figure 20), nesting: instance false-positive rate by standard-deviation scale (1 = the configs' 10-20%)", "scale", cs, true)
	return nil
}

// drop writes nesting's false negatives by message loss (Figure 21).
func drop(ctx context.Context, w io.Writer, cfg config) error {
	fmt.Fprintf(w, "### Message loss (Figure 21), nesting: sniffer queue of 64 messages\n\n")
	fmt.Fprintf(w, "| case | capture rate (msg/s) | loss rate | instance false neg. |\n|---|---|---|---|\n")
	for _, name := range []string{"multitier", "children-d-cc"} {
		c, err := accuracy.DropSweep(ctx, name, cfg.short, DropFactors, cfg.nest)
		if err != nil {
			return err
		}
		for _, p := range c.Points {
			fmt.Fprintf(w, "| %s | %.0f | %s | %s |\n", name, p.Rate, pct(p.Loss), pct(p.FN))
		}
	}
	fmt.Fprintln(w)
	return nil
}

// skew writes nesting's false negatives by clock skew (Figure 22).
func skew(ctx context.Context, w io.Writer, cfg config) error {
	var skews []time.Duration
	for ms := 0; ms <= 100; ms += 10 {
		skews = append(skews, time.Duration(ms)*time.Millisecond)
	}
	cs, err := accuracy.SkewSweep(ctx, cfg.short, skews, accuracy.SkewVariants)
	if err != nil {
		return err
	}
	writeCurves(w, "Clock skew at WS2 (Figure 22), nesting, multitier: instance false-negative rate by skew (ms); skew window 30 ms, smoothing σ = 2 bins", "skew ms", cs, false)
	return nil
}

// LossRates are the sniffer loss rates of the loss experiment.
var LossRates = []float64{0.002, 0.005, 0.01}

// loss writes, per engine and loss rate, how many requests lost a message
// and how much more wrong the requests came out (issue 10, loss that
// stays local).
func loss(ctx context.Context, w io.Writer, cfg config) error {
	fmt.Fprintf(w, "### Loss that stays local, multitier, %v traces\n\n", cfg.short)
	fmt.Fprintf(w, "The sniffer loses each message with the given probability (gen's random loss, its own random stream: the paths are the same at every rate). A loss stays local when the wrong requests rise by at most the share that lost a message; spoiled requests were right without loss, lost nothing and are wrong with it.\n\n")
	fmt.Fprintf(w, "| engine | loss | requests | lost a message | right | right without loss | wrong rose (points) | spoiled | healed |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range []struct {
		name string
		eng  accuracy.Engine
	}{{"nesting", cfg.nest}, {"linking", accuracy.Linking()}} {
		pts, err := accuracy.LossSweep(ctx, "multitier", cfg.short, LossRates, e.eng)
		if err != nil {
			return err
		}
		for _, p := range pts {
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %.2f | %d | %d |\n", e.name, pct(p.Rate), p.Requests, pct(p.LostShare()),
				pct(float64(p.Right)/float64(p.Requests)), pct(float64(p.RightNoLoss)/float64(p.Requests)), 100*p.WrongRise(), p.Spoiled, p.Healed)
		}
	}
	fmt.Fprintln(w)
	return nil
}

// writeCurves writes the curves cs as a table whose first column is x:
// false-positive rates with fp, false-negative rates otherwise.
func writeCurves(w io.Writer, title, x string, cs []accuracy.Curve, fp bool) {
	fmt.Fprintf(w, "### %s\n\n| %s |", title, x)
	for _, c := range cs {
		fmt.Fprintf(w, " %s |", c.Label)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(cs)))
	for i := range cs[0].Points {
		fmt.Fprintf(w, "| %.3g |", cs[0].Points[i].X)
		for _, c := range cs {
			p := c.Points[i]
			if fp {
				fmt.Fprintf(w, " %s |", pct(p.FP))
			} else {
				fmt.Fprintf(w, " %s |", pct(p.FN))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// linkingTables writes the linking section: WAP5's options against the
// defaults on every shipped configuration, and the top-N curve of the
// defaults on the full-size multi-tier trace.
func linkingTables(ctx context.Context, w io.Writer, cfg config) error {
	dur, short := cfg.dur, cfg.short
	fmt.Fprintf(w, "### Linking: WAP5's options and the defaults, %v traces\n\n", short)
	fmt.Fprintf(w, "Instance rates as trees of messages, weighted by linking's instance probabilities in brackets; top N: the most true patterns missing from any top N (beyond 2%% near-ties) and for how many N that is more than 1/N; node delay error of the true patterns found.\n\n")
	fmt.Fprintf(w, "| trace | call parallelism | options | patterns inferred / true missed | instance false neg. | instance false pos. | top N: most missing, N over 1/N | node delay error |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range append([]string{"multitier", "multitier-delay"}, append(accuracy.Pathological, "relay")...) {
		out, err := accuracy.Case{Config: name, Duration: short}.Generate()
		if err != nil {
			return err
		}
		for _, e := range []struct {
			name string
			eng  accuracy.Engine
		}{{"WAP5", accuracy.LinkingWAP5()}, {"default", accuracy.Linking()}} {
			r, err := accuracy.On(ctx, out, e.eng)
			if err != nil {
				return err
			}
			s := r.Score
			worst, over := accuracy.WorstTopN(s)
			i := s.Instances
			fmt.Fprintf(w, "| %s | %.2f | %s | %d / %d of %d | %s (%s) | %s (%s) | %d, %d of %d | %s |\n", name, r.Out.Stats.CallParallelism, e.name,
				s.Patterns.Inferred, s.Patterns.FalseNegatives, s.Patterns.Truth, pct(i.FalseNegativeRate), pct(i.WeightedFalseNegativeRate),
				pct(i.FalsePositiveRate), pct(i.WeightedFalsePositiveRate), worst, over, len(s.TopN), pct(s.Delays.NodeRelError))
		}
	}
	fmt.Fprintln(w)

	r, err := accuracy.Do(ctx, accuracy.Case{Config: "multitier", Duration: dur}, accuracy.Linking())
	if err != nil {
		return err
	}
	s := r.Score
	fmt.Fprintf(w, "### Top-N false negatives, linking (defaults), multitier (Figure 17)\n\n")
	fmt.Fprintf(w, "%d messages, %d instances, per-node call parallelism %.2f. Patterns: %d true, %d inferred, %d false negatives. Instances: %s false negatives (weighted %s), %s false positives (weighted %s). Node delay error of the patterns found: %s.\n\n",
		s.Truth.Messages, s.Truth.Instances, r.Out.Stats.CallParallelism, s.Patterns.Truth, s.Patterns.Inferred, s.Patterns.FalseNegatives,
		pct(s.Instances.FalseNegativeRate), pct(s.Instances.WeightedFalseNegativeRate), pct(s.Instances.FalsePositiveRate), pct(s.Instances.WeightedFalsePositiveRate), pct(s.Delays.NodeRelError))
	fmt.Fprintf(w, "| N | omitted | rate | rate, 2%% tolerance | 1/N |\n|---|---|---|---|---|\n")
	for _, p := range s.TopN {
		fmt.Fprintf(w, "| %d | %d | %.3f | %.3f | %.3f |\n", p.N, p.Omitted, p.Rate, p.RateTolerant, 1/float64(p.N))
	}
	fmt.Fprintln(w)
	return nil
}

// linkingDiagnosis writes where linking's decisions go wrong on the
// multitier-delay trace, with WAP5's options and the defaults.
func linkingDiagnosis(ctx context.Context, w io.Writer, cfg config) error {
	short := cfg.short
	out, err := accuracy.Case{Config: "multitier-delay", Duration: short}.Generate()
	if err != nil {
		return err
	}
	for _, o := range []struct {
		name string
		opt  linking.Options
	}{{"WAP5's options", linking.PureWAP5Options()}, {"the defaults", linking.DefaultOptions()}} {
		d, err := accuracy.DiagnoseLinking(ctx, out, o.opt)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "### Linking's decisions against the truth, %s, multitier-delay, %v\n\n", o.name, short)
		d.Write(w, false)
		fmt.Fprintln(w)
	}

	// What each option does: added to WAP5's, or taken from the defaults.
	fmt.Fprintf(w, "### Linking's options one by one, %v traces\n\n", short)
	fmt.Fprintf(w, "Instance false negatives (weighted in brackets), top N (most true patterns missing from any top N, and for how many N more than 1/N), node delay error, and on multitier-delay the delay WS2 adds before calling AP1|AP2 (truth 200 ms).\n\n")
	wap5 := linking.PureWAP5Options()
	def := linking.DefaultOptions()
	variants := []struct {
		name string
		base linking.Options
		mod  func(*linking.Options)
	}{
		{"WAP5 (`--pure-wap5`)", wap5, func(o *linking.Options) {}},
		{"WAP5 + calls", wap5, func(o *linking.Options) { o.Calls = true }},
		{"WAP5 + calls + normalize-roots", wap5, func(o *linking.Options) { o.Calls, o.NormalizeRoots = true, true }},
		{"WAP5 + calls + normalize-roots + reparent", wap5, func(o *linking.Options) { o.Calls, o.NormalizeRoots, o.Reparent = true, true, true }},
		{"WAP5 + empirical delays", wap5, func(o *linking.Options) { o.DelayModel, o.Iterations = linking.DelayEmpirical, def.Iterations }},
		{"defaults", def, func(o *linking.Options) {}},
		{"defaults − calls", def, func(o *linking.Options) { o.Calls = false }},
		{"defaults − empirical delays (exponential, iterations 0)", def, func(o *linking.Options) { o.DelayModel, o.Iterations = linking.DelayExponential, 0 }},
		{"defaults − normalize-roots", def, func(o *linking.Options) { o.NormalizeRoots = false }},
		{"defaults − reparent", def, func(o *linking.Options) { o.Reparent = false }},
		{"defaults, iterations 0 (moments only)", def, func(o *linking.Options) { o.Iterations = 0 }},
		{"defaults, iterations 4", def, func(o *linking.Options) { o.Iterations = 4 }},
	}
	traces := []string{"multitier-delay", "children-d-cc", "relay"}
	fmt.Fprintf(w, "| options |")
	for _, name := range traces {
		fmt.Fprintf(w, " %s |", name)
	}
	fmt.Fprintf(w, " WS2 adds |\n|---|%s---|\n", strings.Repeat("---|", len(traces)))
	outs := map[string]*gen.Output{}
	for _, name := range append(traces, "multitier") {
		out, err := accuracy.Case{Config: name, Duration: short}.Generate()
		if err != nil {
			return err
		}
		outs[name] = out
	}
	for _, v := range variants {
		o := v.base
		v.mod(&o)
		fmt.Fprintf(w, "| %s |", v.name)
		var added float64
		for _, name := range traces {
			r, err := accuracy.On(ctx, outs[name], accuracy.LinkingWith(o))
			if err != nil {
				return err
			}
			s := r.Score
			worst, over := accuracy.WorstTopN(s)
			fmt.Fprintf(w, " %s (%s); %d, %d; %s |", pct(s.Instances.FalseNegativeRate), pct(s.Instances.WeightedFalseNegativeRate), worst, over, pct(s.Delays.NodeRelError))
			if name == "multitier-delay" {
				base, err := accuracy.On(ctx, outs["multitier"], accuracy.LinkingWith(o))
				if err != nil {
					return err
				}
				d1, _ := accuracy.HopDelay(r.Result.Patterns, "WS2", "AP")
				d0, _ := accuracy.HopDelay(base.Result.Patterns, "WS2", "AP")
				added = d1 - d0
			}
		}
		fmt.Fprintf(w, " %.0f ms |\n", added/1e3)
	}
	fmt.Fprintln(w)
	return nil
}

// DropFactors are the sniffer capture rates swept, as multiples of the
// trace's mean message rate.
var DropFactors = []float64{0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1, 1.05, 1.1, 1.5}

// traceWeaver writes the published comparison: requests exactly right
// (TraceWeaver's metric) for both FCFS baselines and every engine of the
// registry, on the hotel, media and node traces at TraceWeaver's loads and
// with hotel's arrivals compressed.
func traceWeaver(ctx context.Context, w io.Writer, _ config) error {
	var rows []*accuracy.TWResult
	for _, c := range accuracy.TWCases {
		r, err := accuracy.RunTraceWeaver(ctx, c, nil)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(w, "### Requests exactly right (TraceWeaver's metric), generated traces\n\n")
	fmt.Fprintf(w, "%d requests per trace; per-host clocks up to 2 ms apart, 1 ms timestamps unless the trace says µs. FCFS: the earliest-arrived enclosing request still waiting for a call to that service; FCFS-rank: TraceWeaver's artifact (the i-th call to a service to the i-th request). Every engine of `causal/engines` is run with its defaults.\n\n", accuracy.TWCases[0].Instances)
	fmt.Fprintf(w, "| trace | messages | requests in progress (mean) |")
	sep := "|---|---|---|"
	for _, m := range rows[0].Methods {
		fmt.Fprintf(w, " %s |", m.Method)
		sep += "---|"
	}
	fmt.Fprintf(w, "\n%s\n", sep)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %.2f |", r.Case.Label(), r.Stats.Messages, r.Stats.Parallelism)
		for _, m := range r.Methods {
			if m.Err != "" {
				fmt.Fprintf(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %s |", pct(m.Score.Share()))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Calls given their true parent call (the links the requests are made of):\n\n")
	fmt.Fprintf(w, "| trace |")
	for _, m := range rows[0].Methods {
		fmt.Fprintf(w, " %s |", m.Method)
	}
	fmt.Fprintf(w, "\n%s\n", sep[:len(sep)-8])
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |", r.Case.Label())
		for _, m := range r.Methods {
			if m.Err != "" {
				fmt.Fprintf(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %s |", pct(float64(m.Score.CallsRight)/float64(max(1, m.Score.Calls))))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return nil
}

// inflightLinks are the links of the in-flight tables, in order.
var inflightLinks = []string{"web→app", "app→store", "app→cache", "app→tier2", "tier2→backend", "backend→db"}

// inflight writes the requests exactly right and the calls attributed per
// link on the testbed-shaped generated traces, for each evidence variant,
// number of requests in flight and engine.
func inflight(ctx context.Context, w io.Writer, cfg config) error {
	engs := map[string]accuracy.Engine{"linking": accuracy.Linking(), "nesting": cfg.nest, "assembly": accuracy.Assembly()}
	order := []string{"linking", "nesting", "assembly"}
	pts, err := accuracy.InflightSweep(ctx, accuracy.InflightVariants, []int{1, 4, 16, 64}, 0, engs, order)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "### Requests in flight, testbed-shaped generated traces (causal/accuracy/testdata/inflight.yaml)\n\n")
	fmt.Fprintf(w, "1,000 requests per trace (closed loop: the clients are the requests in flight, 1-3 ms think time). Requests exactly right by TraceWeaver's metric; child calls (not the requests' roots) given their true parent call, in all and per link.\n\n")
	fmt.Fprintf(w, "| variant | in flight | requests in progress (mean) | engine | requests right | calls right |")
	sep := "|---|---|---|---|---|---|"
	for _, l := range inflightLinks {
		fmt.Fprintf(w, " %s |", l)
		sep += "---|"
	}
	fmt.Fprintf(w, "\n%s\n", sep)
	for _, p := range pts {
		right, all := 0, 0
		for _, c := range p.Links {
			right, all = right+c[0], all+c[1]
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %s | %s |", p.Variant, p.Clients, p.Stats.Parallelism, p.Engine,
			pct(p.Score.Share()), pct(float64(right)/float64(max(1, all))))
		for _, l := range inflightLinks {
			c := p.Links[l]
			if c[1] == 0 {
				fmt.Fprintf(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %s |", pct(float64(c[0])/float64(c[1])))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return nil
}

// unseen writes the requests exactly right, per method, on the systems
// the engines were not tuned on (causal/accuracy/testdata/unseen), with
// each engine's mean request confidence and any accounting that does not
// balance or error.
func unseen(ctx context.Context, w io.Writer, cfg config) error {
	engs := map[string]accuracy.Engine{"linking": accuracy.Linking(), "nesting": cfg.nest, "assembly": accuracy.Assembly()}
	order := []string{"assembly", "linking", "nesting"}
	pts, err := accuracy.UnseenSweep(ctx, accuracy.UnseenConfigs, []int{1, 4, 16, 64}, 0, engs, order)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "### Systems the engine was not tuned on (causal/accuracy/testdata/unseen)\n\n")
	fmt.Fprintf(w, "1,000 instances per trace, background work included (closed loop: the clients are the requests in flight, 1-3 ms think time). Requests exactly right by TraceWeaver's metric; in brackets the assembly engine's mean request confidence.\n\n")
	fmt.Fprintf(w, "| system | in flight | requests in progress (mean) | FCFS | assembly (confidence) | linking | nesting |\n|---|---|---|---|---|---|---|\n")
	var notes []string
	for i := 0; i < len(pts); i += 1 + len(order) {
		p := pts[i]
		fmt.Fprintf(w, "| %s | %d | %.1f |", p.Config, p.Clients, p.Stats.Parallelism)
		for _, q := range pts[i : i+1+len(order)] {
			switch {
			case q.Err != "":
				fmt.Fprintf(w, " error |")
				notes = append(notes, fmt.Sprintf("%s, %s at %d: %s", q.Method, q.Config, q.Clients, q.Err))
				continue
			case !math.IsNaN(q.Confidence) && q.Method == "assembly":
				fmt.Fprintf(w, " %s (%.2f) |", pct(q.Score.Share()), q.Confidence)
			default:
				fmt.Fprintf(w, " %s |", pct(q.Score.Share()))
			}
			for _, u := range q.Unbalanced {
				notes = append(notes, fmt.Sprintf("%s, %s at %d: accounting %s", q.Method, q.Config, q.Clients, u))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Calls given their true parent call (the requests' calls, roots included), and background trees exactly right:\n\n")
	fmt.Fprintf(w, "| system | in flight | FCFS | assembly | linking | nesting | background trees | background right: FCFS / assembly / linking / nesting |\n|---|---|---|---|---|---|---|---|\n")
	for i := 0; i < len(pts); i += 1 + len(order) {
		row := pts[i : i+1+len(order)]
		fmt.Fprintf(w, "| %s | %d |", row[0].Config, row[0].Clients)
		var bg []string
		for _, q := range row {
			if q.Err != "" {
				fmt.Fprintf(w, " error |")
				bg = append(bg, "–")
				continue
			}
			fmt.Fprintf(w, " %s |", pct(float64(q.Score.CallsRight)/float64(max(1, q.Score.Calls))))
			bg = append(bg, fmt.Sprint(q.Score.BackgroundRgt))
		}
		fmt.Fprintf(w, " %d | %s |\n", row[0].Score.Background, strings.Join(bg, " / "))
	}
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	return nil
}
