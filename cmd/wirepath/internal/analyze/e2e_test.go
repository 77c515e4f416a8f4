package analyze

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/trace"
)

// The end-to-end tests run the whole command, captures to results, and
// check the results against ground truth: the demo system's request log
// (testdata/demo) and the truth of generated captures.

// repo is the repository's root, from this package's directory.
const repo = "../../../.."

// runAnalyze runs the analyze command in process, as main does.
func runAnalyze(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &cmdutil.IOStreams{Out: &out, ErrOut: &errOut}
	cmd := NewCmd(ios)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmdutil.Execute(cmd)
	if err != nil {
		cmdutil.PrintError(&errOut, err)
	}
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

// analyzeJSON runs analyze with --format json and --save-trace and returns
// the results (one per engine) and the reconciled trace.
func analyzeJSON(t *testing.T, args ...string) ([]*causal.Result, *trace.Trace) {
	t.Helper()
	dir := t.TempDir()
	res, tr := filepath.Join(dir, "results.json"), filepath.Join(dir, "trace.tsv")
	_, stderr, code := runAnalyze(t, append(args, "--format", "json", "-o", res, "--save-trace", tr)...)
	if code != 0 {
		t.Fatalf("analyze exited %d:\n%s", code, stderr)
	}
	rs, err := resultjson.ReadResultsFile(res)
	if err != nil {
		t.Fatal(err)
	}
	trc, err := trace.ReadFile(tr, trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs, trc
}

// byEngine returns the result of the named engine.
func byEngine(t *testing.T, rs []*causal.Result, name string) *causal.Result {
	t.Helper()
	for _, r := range rs {
		if r.Engine == name {
			return r
		}
	}
	t.Fatalf("no %s result among %d", name, len(rs))
	return nil
}

// clockOf returns the capture clock of the named sniffer.
func clockOf(t *testing.T, r *causal.Result, name string) trace.Clock {
	t.Helper()
	for _, c := range r.Trace.Clocks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no clock %s among %+v", name, r.Trace.Clocks)
	return trace.Clock{}
}

// demoRequest is one line of testdata/demo/ground-truth.tsv.
type demoRequest struct {
	start, end int64 // ns, the client's clock (which the outside sniffer shares)
	kind       string
}

// requestKind is the kind of request a path is: cart requests call the
// auth service, item requests reach the application, static files are
// served by nginx alone.
func requestKind(path string) string {
	switch {
	case strings.HasPrefix(path, "/cart"):
		return "cart"
	case strings.HasPrefix(path, "/item/"):
		return "item"
	}
	return "static"
}

func readDemoTruth(t *testing.T) []demoRequest {
	t.Helper()
	f, err := os.Open(filepath.Join(repo, "testdata/demo/ground-truth.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []demoRequest
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			continue // header
		}
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 5 || fs[3] != "200" {
			t.Fatalf("ground-truth.tsv line %d: %q", n, sc.Text())
		}
		start, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		d, err := time.ParseDuration(fs[4])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, demoRequest{start, start + int64(d), requestKind(fs[2])})
	}
	return out
}

// TestDemoEndToEnd runs analyze on the recorded demo system
// (testdata/demo/make.sh: client → NAT load balancer → 2 nginx → Go app →
// Redis and a 20 ms auth service; three sniffers, two with shifted clocks)
// and checks what it finds against what was done: the clock shifts, the
// NAT table, each client request's path, the auth service's delay.
func TestDemoEndToEnd(t *testing.T) {
	d := filepath.Join(repo, "testdata/demo")
	rs, tr := analyzeJSON(t, filepath.Join(d, "outside.pcapng"), filepath.Join(d, "inside.pcapng.gz"), filepath.Join(d, "lb-any.pcap.gz"),
		"--roles", filepath.Join(d, "roles.txt"), "--no-aggregate-clients", "--engine", "all", "--instances", "-1")
	if got := len(rs); got != 4 {
		t.Fatalf("%d results", got)
	}
	nest := byEngine(t, rs, nesting.Name)

	// Clocks: editcap shifted the inside capture by +83.25 s and the load
	// balancer's by -12.5 s. The capture points themselves are some 15 µs
	// apart (the mirror ports' latency), so the truth is the shift within
	// 100 µs.
	for _, c := range []struct {
		name  string
		shift time.Duration
	}{{"outside.pcapng", 0}, {"inside.pcapng.gz", 83250 * time.Millisecond}, {"lb-any.pcap.gz", -12500 * time.Millisecond}} {
		got := clockOf(t, nest, c.name)
		if err := time.Duration(got.OffsetNS) - c.shift; !got.Known || err.Abs() > 100*time.Microsecond {
			t.Errorf("clock %s: offset %v, known %v; the shift was %v", c.name, time.Duration(got.OffsetNS), got.Known, c.shift)
		}
	}

	// NAT: round-robin DNAT of the virtual address onto the two nginx,
	// SNAT of the client to the balancer's inside address. Exactly these.
	type alias struct{ outside, inside, kind string }
	var nat []alias
	for _, a := range nest.Trace.Aliases {
		nat = append(nat, alias{a.Outside, a.Inside, a.Kind})
	}
	want := []alias{
		{"10.10.0.100:80", "10.20.0.11:80", "dnat"},
		{"10.10.0.100:80", "10.20.0.12:80", "dnat"},
		{"10.20.0.1:*", "10.10.0.2:*", "snat"},
	}
	slices.SortFunc(nat, func(a, b alias) int { return strings.Compare(a.outside+a.inside, b.outside+b.inside) })
	if !slices.Equal(nat, want) {
		t.Errorf("NAT table %v, want %v", nat, want)
	}

	// Each client request's path (demoPaths): nesting's, one per request,
	// and linking's most probable one per request.
	truth := readDemoTruth(t)
	counts := map[string]float64{}
	for _, r := range truth {
		counts[r.kind]++
	}
	if counts["item"] != 82 || counts["cart"] != 51 || counts["static"] != 17 {
		t.Fatalf("ground truth %v", counts)
	}
	for _, c := range []struct {
		engine string
		right  int     // requests whose path is of the right kind, at least
		count  float64 // largest difference between paths and requests of a kind
	}{
		// Measured: 146 of 150 right, 84/48/18 paths for 82/51/17
		// requests. Requests overlap at the app, so a call to Redis or
		// auth can be nested in the wrong one (docs/analyze.md): allow
		// 10% of the requests wrong and each count off by 8% of them.
		{nesting.Name, 135, 12},
		// Measured: 121 of 150 right (the most probable path of each
		// request), expected counts 102/29/19: linking more often leaves
		// a /cart request's later calls to a neighbour.
		{linking.Name, 105, -1},
		// Measured: 150 of 150 right (148 before the size relations'
		// smoothing and the chain matching); expected counts 46/77/17,
		// each request weighed by its confidence.
		{assembly.Name, 148, -1},
	} {
		matched, right, found := demoPaths(t, byEngine(t, rs, c.engine), tr, truth)
		t.Logf("%s: paths per kind %v (truth %v); %d of %d requests matched, %d of the right kind", c.engine, found, counts, matched, len(truth), right)
		if matched < len(truth)-2 {
			t.Errorf("%s: %d of %d requests matched a path", c.engine, matched, len(truth))
		}
		if right < c.right {
			t.Errorf("%s: %d of %d requests have a path of the right kind, want %d", c.engine, right, len(truth), c.right)
		}
		for k, n := range counts {
			if c.count >= 0 && math.Abs(found[k]-n) > c.count {
				t.Errorf("%s: %.1f %s paths, %.0f %s requests", c.engine, found[k], k, n, k)
			}
		}
	}

	// The auth service sleeps 20 ms before it answers: its node delay
	// (the CALL's arrival to the RETURN's send, both on the inside
	// sniffer's clock) is never shorter, and its mean is that of the
	// calls themselves (paired in the trace by their call ids: 26.9 ms,
	// p50 22.6 ms on this recording).
	callAt := map[trace.Sym]int64{}
	var truthSum, truthN float64
	for i := range tr.Messages {
		m := &tr.Messages[i]
		switch {
		case m.Kind == trace.KindCall && strings.HasSuffix(tr.Str(m.Dst), ":9000"):
			callAt[m.CallID] = int64(m.RecvTS)
		case m.Kind == trace.KindReturn && strings.HasSuffix(tr.Str(m.Src), ":9000"):
			truthSum += float64(int64(m.SendTS)-callAt[m.CallID]) / 1e3
			truthN++
		}
	}
	if truthN != 51 {
		t.Fatalf("%v calls to auth in the trace, want 51", truthN)
	}
	var w, sum float64
	minDelay := math.Inf(1)
	for _, p := range nest.Patterns {
		for _, h := range p.Hops {
			if h.From == "auth" && h.NodeDelay != nil {
				w += h.NodeDelay.Weight
				sum += h.NodeDelay.Weight * h.NodeDelay.Mean
				minDelay = min(minDelay, h.NodeDelay.Min)
			}
		}
	}
	if w == 0 || minDelay < 20e3 || math.Abs(sum/w-truthSum/truthN) > 0.05*truthSum/truthN {
		t.Errorf("auth's node delay: mean %.0f µs, min %.0f µs over %.0f instances; the calls took %.0f µs on average, at least 20 ms", sum/w, minDelay, w, truthSum/truthN)
	}
	// Convolution sees it too, as the delay between the call into auth
	// and its return (quantum 10 ms).
	conv := byEngine(t, rs, convolution.Name)
	seen := false
	for _, p := range conv.Patterns {
		for _, h := range p.Hops {
			if h.From == "auth" && len(h.Delays) > 0 && math.Abs(h.Delays[0].DelayUS-20e3) <= 10e3 {
				seen = true
			}
		}
	}
	if !seen {
		t.Error("convolution found no 20 ms delay at auth")
	}
}

// demoPaths matches an engine's paths of client requests one to one with
// the logged requests, by start and end time (the client's clock is the
// outside sniffer's, the reference), keeping for each request its most
// probable path: every message of the trace is in one nesting instance,
// and linking's instances of one root are alternatives. A path with the
// auth service is a cart request, one reaching the app an item request,
// one ending at nginx a static file. It returns how many requests matched
// a path, how many of those have one of the right kind, and the expected
// number of paths of each kind.
func demoPaths(t *testing.T, res *causal.Result, tr *trace.Trace, truth []demoRequest) (matched, right int, found map[string]float64) {
	t.Helper()
	type inst struct {
		start, end int64
		kind       string
		p          float64
	}
	best := map[int]inst{} // by root message
	found = map[string]float64{}
	for _, p := range res.Patterns {
		if p.Hops[0].From != "client" {
			continue
		}
		kind := "static"
		for _, h := range p.Hops {
			if h.To == "auth" {
				kind = "cart"
				break
			}
			if h.To == "app" {
				kind = "item"
			}
		}
		found[kind] += p.Expected
		if len(p.Instances) != p.Count {
			t.Fatalf("%s: pattern %d lists %d of its %d instances", res.Engine, p.Rank, len(p.Instances), p.Count)
		}
		for _, in := range p.Instances {
			first := &tr.Messages[in.Messages[0]]
			end := int64(first.RecvTS)
			for _, m := range in.Messages {
				end = max(end, int64(tr.Messages[m].RecvTS))
			}
			if b, ok := best[in.Messages[0]]; !ok || in.Probability > b.p {
				best[in.Messages[0]] = inst{int64(first.SendTS), end, kind, in.Probability}
			}
		}
	}
	var insts []inst
	for _, in := range best {
		insts = append(insts, in)
	}
	slices.SortFunc(insts, func(a, b inst) int { return int(cmp.Or(a.start-b.start, a.end-b.end)) })
	type pair struct {
		cost int64
		i, j int
	}
	var pairs []pair
	for i, in := range insts {
		for j, r := range truth {
			if c := abs(in.start-r.start) + abs(in.end-r.end); c < int64(20*time.Millisecond) {
				pairs = append(pairs, pair{c, i, j})
			}
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.cost != b.cost {
			return int(a.cost - b.cost)
		}
		if a.i != b.i {
			return a.i - b.i
		}
		return a.j - b.j
	})
	usedI, usedJ := map[int]bool{}, map[int]bool{}
	for _, p := range pairs {
		if usedI[p.i] || usedJ[p.j] {
			continue
		}
		usedI[p.i], usedJ[p.j] = true, true
		matched++
		if insts[p.i].kind == truth[p.j].kind {
			right++
		}
	}
	return matched, right, found
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// genCaptures generates the configuration's trace and writes its sniffers'
// captures (as wirepath gen --pcap does) to a temporary directory.
func genCaptures(t *testing.T, cfg *gen.Config) (dir string, out *gen.Output) {
	t.Helper()
	cfg.Names = "addr" // as the capture pipeline names nodes
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if _, err := gen.WritePcaps(dir, out, cfg); err != nil {
		t.Fatal(err)
	}
	return dir, out
}

// scoreAll scores each result against a fresh copy of the truth that takes
// the rebuilt trace's names; tol is the matching tolerance (the rebuilt
// trace's times are on the reference sniffer's clock).
func scoreAll(t *testing.T, rs []*causal.Result, tr *trace.Trace, truth func() *gen.Truth, tol time.Duration) map[string]*score.Report {
	t.Helper()
	out := map[string]*score.Report{}
	for _, r := range rs {
		tt := truth()
		m, st := gen.MatchTrace(tr, tt, int64(tol))
		if st.Unmatched > 0 {
			t.Errorf("%d of %d rebuilt messages match no true message", st.Unmatched, st.Messages)
		}
		tt.AdoptNames(tr, m)
		opt := score.DefaultOptions()
		opt.TraceToTruth = m
		rep, err := score.Score(r, tt, opt)
		if err != nil {
			t.Fatal(err)
		}
		out[r.Engine] = rep
	}
	return out
}

// truthCopy returns a function that gives a fresh copy of truth (scoring
// renames its nodes) by writing and reading it back.
func truthCopy(t *testing.T, truth *gen.Truth) func() *gen.Truth {
	t.Helper()
	var buf bytes.Buffer
	if err := gen.WriteTruth(&buf, truth); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	return func() *gen.Truth {
		tt, err := gen.ReadTruth(bytes.NewReader(data), "truth")
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
}

// TestGeneratedEndToEnd runs analyze on generated captures of the
// multi-tier system (three sniffers, two clocks off by seconds) and scores
// each engine against the generator's truth (Project 5 section 7.5.1).
func TestGeneratedEndToEnd(t *testing.T) {
	cfg, err := gen.LoadConfig("testdata/multitier-sniffers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, out := genCaptures(t, cfg)
	rs, tr := analyzeJSON(t, filepath.Join(dir, "front.pcapng"), filepath.Join(dir, "mid.pcapng"), filepath.Join(dir, "db.pcapng"),
		"--engine", "all", "--instances", "-1")
	nest := byEngine(t, rs, nesting.Name)

	// The sniffers' offsets, exactly as generated, within the estimate's
	// uncertainty.
	for _, sn := range cfg.Sniffers {
		c := clockOf(t, nest, sn.Name+".pcapng")
		if err := c.OffsetNS - int64(sn.Offset); !c.Known || abs(err) > c.UncertaintyNS {
			t.Errorf("clock %s: %v ± %v, generated %v", c.Name, time.Duration(c.OffsetNS), time.Duration(c.UncertaintyNS), time.Duration(sn.Offset))
		}
	}
	if len(tr.Messages) != out.Stats.Observed {
		t.Errorf("rebuilt %d messages of %d", len(tr.Messages), out.Stats.Observed)
	}

	reps := scoreAll(t, rs, tr, truthCopy(t, out.Truth), time.Second)
	for _, e := range engines.Names {
		r := reps[e]
		t.Logf("%s: patterns %d true, %d inferred, %d false negatives; instances %s; node delay error %.1f%%",
			e, r.Patterns.Truth, r.Patterns.Inferred, r.Patterns.FalseNegatives, instText(r.Instances), 100*r.Delays.NodeRelError)
	}

	// Nesting: every true pattern found; the N most frequent true
	// patterns are among its top N but for about one (Project 5 Figure
	// 17: omitted ≈ 1/N; measured at most 1, allowed 2); few instances
	// wrong (measured 12%) and node delays close (measured under 2%).
	n := reps[nesting.Name]
	if n.Patterns.FalseNegatives != 0 {
		t.Errorf("nesting missed %d true patterns", n.Patterns.FalseNegatives)
	}
	for _, p := range n.TopN {
		if p.Omitted > 2 {
			t.Errorf("nesting: %d of the %d most frequent true patterns are not in its top %d", p.Omitted, p.N, p.N)
		}
	}
	if n.Instances == nil || n.Instances.FalsePositiveRate > 0.20 || n.Messages.FalseNegativeRate > 0.25 {
		t.Errorf("nesting: instances %s", instText(n.Instances))
	}
	if n.Delays.NodeRelError > 0.05 {
		t.Errorf("nesting: node delays %.1f%% off", 100*n.Delays.NodeRelError)
	}

	// Linking (call-aware, docs/causal.md) finds every true pattern too,
	// keeps the N most frequent in its top N but for about one (measured
	// at most 1), and puts most of its probability on correct instances
	// (measured: 15% of the probability mass wrong, against nesting's 12%).
	l := reps[linking.Name]
	if l.Patterns.FalseNegatives != 0 {
		t.Errorf("linking missed %d true patterns", l.Patterns.FalseNegatives)
	}
	for _, p := range l.TopN {
		if p.Omitted > 2 {
			t.Errorf("linking: %d of the %d most frequent true patterns are not in its top %d", p.Omitted, p.N, p.N)
		}
	}
	if l.Instances == nil || l.Instances.WeightedFalseNegativeRate > 0.25 || l.Instances.WeightedFalsePositiveRate > 0.25 {
		t.Errorf("linking: instances %s", instText(l.Instances))
	}

	// Convolution merges the alternatives, so its patterns are no true
	// ones; its delays are the configured ones: a call 50 ms after the
	// caller was called (or answered), a return 10 ms after the callee's
	// last answer, within one 10 ms quantum.
	conv := byEngine(t, rs, convolution.Name)
	checked := 0
	for _, p := range conv.Patterns {
		for _, h := range p.Hops {
			if len(h.Delays) == 0 || h.From == causal.ClientName || h.To == causal.ClientName {
				continue
			}
			top := slices.MaxFunc(h.Delays, func(a, b causal.DelayPeak) int { return a.Count - b.Count })
			want := map[string]float64{"CALL": 50e3, "RETURN": 10e3}[h.Kind]
			if math.Abs(top.DelayUS-want) > 10e3 {
				t.Errorf("convolution: %s → %s %s delay %.0f µs (%d messages), want %.0f µs", h.From, h.To, h.Kind, top.DelayUS, top.Count, want)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("convolution: only %d hops with delays", checked)
	}
}

func instText(c *score.CountScore) string {
	if c == nil {
		return "not scored"
	}
	return fmt.Sprintf("%d of %d correct, %.1f%% false positives, %.1f%% false negatives (weighted by probability: %.1f%%, %.1f%%)",
		c.Correct, c.Inferred, 100*c.FalsePositiveRate, 100*c.FalseNegativeRate, 100*c.WeightedFalsePositiveRate, 100*c.WeightedFalseNegativeRate)
}

// TestLinkingNeedsNoClockSync generates the multi-tier system with two
// sniffers that share no packet, so nothing can relate their clocks: the
// web tier's and the database's. With the database sniffer's clock right,
// then 3 s off, linking's results are the same pattern for pattern (every
// delay it uses is on one node's clock, WAP5 section 5.2), while nesting,
// which compares times across nodes, loses most of its correct paths.
func TestLinkingNeedsNoClockSync(t *testing.T) {
	type run struct {
		rs   []*causal.Result
		reps map[string]*score.Report
	}
	var runs []run
	for _, off := range []time.Duration{0, 3 * time.Second} {
		cfg, err := gen.LoadConfig("testdata/multitier-sniffers.yaml")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sniffers = []gen.Sniffer{{Name: "web", Nodes: []string{"CLIENT", "WS1", "WS2"}}, {Name: "db", Nodes: []string{"DB"}, Offset: gen.Duration(off)}}
		dir, out := genCaptures(t, cfg)
		rs, tr := analyzeJSON(t, filepath.Join(dir, "web.pcapng"), filepath.Join(dir, "db.pcapng"), "--engine", "all", "--instances", "-1")
		if c := clockOf(t, rs[0], "db.pcapng"); c.Known {
			t.Fatalf("offset %v: the db sniffer's clock was related to the web sniffer's (%+v); the test needs it unknown", off, c)
		}
		runs = append(runs, run{rs, scoreAll(t, rs, tr, truthCopy(t, out.Truth), off+time.Second)})
	}
	type pat struct {
		count    int
		expected float64
		nodes    []float64
	}
	summary := func(r *causal.Result) map[string]pat {
		m := map[string]pat{}
		for _, p := range r.Patterns {
			s := pat{count: p.Count, expected: p.Expected}
			for _, h := range p.Hops {
				if h.NodeDelay != nil {
					s.nodes = append(s.nodes, h.NodeDelay.Mean)
				}
			}
			m[p.Signature] = s
		}
		return m
	}
	a, b := summary(byEngine(t, runs[0].rs, linking.Name)), summary(byEngine(t, runs[1].rs, linking.Name))
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("linking: %d patterns in sync, %d with the clock 3 s off", len(a), len(b))
	}
	for sig, x := range a {
		y, ok := b[sig]
		if !ok || x.count != y.count || math.Abs(x.expected-y.expected) > 1e-9 || !slices.Equal(x.nodes, y.nodes) {
			t.Errorf("linking pattern %s: %+v in sync, %+v with the clock off", sig, x, y)
		}
	}
	l0, l1 := runs[0].reps[linking.Name].Instances, runs[1].reps[linking.Name].Instances
	if l0.Correct != l1.Correct || l0.Inferred != l1.Inferred {
		t.Errorf("linking: %s in sync, %s with the clock off", instText(l0), instText(l1))
	}
	n0, n1 := runs[0].reps[nesting.Name].Instances, runs[1].reps[nesting.Name].Instances
	t.Logf("nesting: %s in sync, %s with the clock off; linking: %s either way", instText(n0), instText(n1), instText(l0))
	if n1.Correct*2 > n0.Correct {
		t.Errorf("nesting kept %d of its %d correct paths with a clock 3 s off; the test expects it to lose most", n1.Correct, n0.Correct)
	}
}

// TestGeneratedDrift runs analyze on 60 s of the generated multi-tier
// system whose mid sniffer gains 40 ppm (and the db one loses 25), against
// the same system with clocks that only are offset (issue 10): each
// sniffer's offset within 10 µs and its drift within 0.5 ppm of the
// truth, and the engines exactly as accurate with the drift as without.
func TestGeneratedDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("60 s of generated captures, twice")
	}
	drifts := map[string]float64{"mid": 40, "db": -25}
	run := func(drift bool) (map[string]*score.Report, *causal.Result, int64) {
		cfg, err := gen.LoadConfig("testdata/multitier-sniffers.yaml")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Duration = gen.Duration(60 * time.Second)
		cfg.Names = "addr"
		if drift {
			for i := range cfg.Sniffers {
				cfg.Sniffers[i].DriftPPM = drifts[cfg.Sniffers[i].Name]
			}
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		out, err := gen.Generate(cfg, gen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		st, err := gen.WritePcaps(dir, out, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rs, tr := analyzeJSON(t, filepath.Join(dir, "front.pcapng"), filepath.Join(dir, "mid.pcapng"), filepath.Join(dir, "db.pcapng"),
			"--engine", "all", "--instances", "-1")
		return scoreAll(t, rs, tr, truthCopy(t, out.Truth), time.Second), byEngine(t, rs, nesting.Name), st[0].StartNS
	}
	plain, _, _ := run(false)
	drifting, nest, start := run(true)
	cfg, err := gen.LoadConfig("testdata/multitier-sniffers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range cfg.Sniffers {
		c := clockOf(t, nest, sn.Name+".pcapng")
		ppm := drifts[sn.Name]
		if ppm == 0 {
			continue
		}
		// The clock reads true + offset + ppm·(true - start); at the
		// reference (front, true) time of the epoch:
		truth := int64(sn.Offset) + int64(math.Round(ppm*1e-6*float64(c.EpochNS-start)))
		t.Logf("%s: offset %d (truth %d, error %d ± %d ns), drift %.3f ± %.3f ppm (truth %.0f)",
			c.Name, c.OffsetNS, truth, c.OffsetNS-truth, c.UncertaintyNS, c.DriftPPM, c.DriftUncertaintyPPM, ppm)
		if !c.DriftKnown || abs(c.OffsetNS-truth) > 10e3 || math.Abs(c.DriftPPM-ppm) > 0.5 {
			t.Errorf("%s: offset %d (truth %d), drift %.3f ppm (truth %.0f)", c.Name, c.OffsetNS, truth, c.DriftPPM, ppm)
		}
	}
	for _, e := range []string{nesting.Name, linking.Name} {
		p, d := plain[e].Instances, drifting[e].Instances
		t.Logf("%s: without drift %s; with %s", e, instText(p), instText(d))
		if d.FalsePositiveRate > p.FalsePositiveRate+0.005 || d.WeightedFalseNegativeRate > p.WeightedFalseNegativeRate+0.005 {
			t.Errorf("%s: %.1f%% of instances wrong with drift, %.1f%% without", e, 100*d.FalsePositiveRate, 100*p.FalsePositiveRate)
		}
	}
}

// TestGeneratedLossStaysLocal runs analyze on 60 s of the generated
// multi-tier system with every tier an HTTP/1.1 server behind a pool of
// persistent connections, captured by one sniffer that misses 0.5 % of
// the packets, against the same capture without loss (issue 10): the
// wrong requests rise by at most the share that lost a message. Before
// the fix, one lost response shifted every later pair of its pooled
// connection and the rise was forty points.
func TestGeneratedLossStaysLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("60 s of generated captures, twice")
	}
	run := func(loss float64) map[string]*score.Report {
		cfg, err := gen.LoadConfig("multitier")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Duration = gen.Duration(60 * time.Second)
		for name, n := range cfg.Nodes {
			n.Protocol, n.Pool = "http", 4
			cfg.Nodes[name] = n
		}
		cfg.Sniffers = []gen.Sniffer{{Name: "mirror", Loss: loss}}
		dir, out := genCaptures(t, cfg)
		rs, tr := analyzeJSON(t, filepath.Join(dir, "mirror.pcapng"), "--engine", "all", "--instances", "-1")
		return scoreAll(t, rs, tr, truthCopy(t, out.Truth), time.Second)
	}
	plain, lossy := run(0), run(0.005)
	for _, name := range []string{nesting.Name, linking.Name} {
		p, l := plain[name].Instances, lossy[name].Instances
		lost := float64(l.Lost) / float64(l.Truth)
		rise := l.FalseNegativeRate - p.FalseNegativeRate
		t.Logf("%s: %.1f%% of the requests lost a message; right %.1f%% → %.1f%%", name, 100*lost, 100*(1-p.FalseNegativeRate), 100*(1-l.FalseNegativeRate))
		if rise > lost {
			t.Errorf("%s: the wrong requests rose %.1f points, %.1f%% lost a message", name, 100*rise, 100*lost)
		}
	}
}
