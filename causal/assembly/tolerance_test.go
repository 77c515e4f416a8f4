package assembly

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

// TestStatedTolerance checks the tolerance taken from a trace's stated
// clock offsets: the largest uncertainty when every node's offset is
// known, within MinTolerance and Tolerance; the fixed Tolerance when the
// trace states none, one node's is unknown, or the option is off.
func TestStatedTolerance(t *testing.T) {
	off := func(known bool, u int64) trace.Offset {
		return trace.Offset{Known: known, UncertaintyNS: u}
	}
	for _, c := range []struct {
		name    string
		offsets []trace.Offset
		stated  bool
		want    time.Duration
	}{
		{"no offsets (a generated trace)", nil, true, 100 * time.Microsecond},
		{"all known: the largest", []trace.Offset{off(true, 0), off(true, 431), off(true, 22341)}, true, 22341},
		{"all known, below the floor", []trace.Offset{off(true, 0), off(true, 200)}, true, MinTolerance},
		{"all known, above the cap", []trace.Offset{off(true, 0), off(true, int64(time.Millisecond))}, true, 100 * time.Microsecond},
		{"one unknown", []trace.Offset{off(true, 431), off(false, 0)}, true, 100 * time.Microsecond},
		{"option off", []trace.Offset{off(true, 431)}, false, 100 * time.Microsecond},
	} {
		opt := DefaultOptions()
		opt.StatedClockError = c.stated
		tr := &trace.Trace{Meta: trace.Meta{Offsets: c.offsets}}
		if got := statedTolerance(opt, tr); got != int64(c.want) {
			t.Errorf("%s: %v, want %v", c.name, time.Duration(got), c.want)
		}
	}
}

// TestClockViolation checks the tolerance read from certain links'
// violations: none, too few or spread evenly up to the widest tolerance
// (background calls taken for certain) give the floor; violations packed
// below a bound give the bound, widened; a quarter of the links or more
// violating give the cap.
func TestClockViolation(t *testing.T) {
	const floor, cap = 1000, 100000
	links := func(n int, vs ...int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = -int64(20000 + 100*i) // fitted with room to spare
		}
		return append(out, vs...)
	}
	even := func(k int) []int64 { // k violations spread over (0, cap]
		var vs []int64
		for i := range k {
			vs = append(vs, int64(i+1)*cap/int64(k+1))
		}
		return vs
	}
	packed := func(k int, bound int64) []int64 { // k violations within (0, bound]
		var vs []int64
		for i := range k {
			vs = append(vs, int64(i+1)*bound/int64(k))
		}
		return vs
	}
	for _, c := range []struct {
		name   string
		vs     []int64
		lo, hi int64
	}{
		{"no violation", links(400), floor, floor},
		{"two violations", links(400, 40000, 50000), floor, floor},
		{"14 spread evenly (background)", links(400, even(14)...), floor, floor},
		{"60 within 20 µs (clock error)", links(400, packed(60, 20000)...), 25000, 35000},
		{"60 within 20 µs and 10 spread evenly", links(400, append(packed(60, 20000), even(10)...)...), 25000, 35000},
		{"20 within 4 µs", links(200, packed(20, 4000)...), 5000, 7000},
		{"half spread evenly", links(100, even(100)...), cap, cap},
		{"11 % spread evenly (clock error beyond the cap)", links(270, even(34)...), 50000, cap},
	} {
		if got := clockViolation(c.vs, floor, cap); got < c.lo || got > c.hi {
			t.Errorf("%s: %d ns, want %d to %d", c.name, got, c.lo, c.hi)
		}
	}
}

// tolConfig is a proxy calling a server that calls a database and a
// cache, with the clocks and timestamps of each case.
const tolConfig = `
name: tol
seed: 5
instances: 400
clients: 4
think: 1ms..3ms
defaults: {delay: 200us±50us+exp(100us), reply: 300us±100us+exp(100us), net: 100us±10us}
evidence: {conns: true, labels: true}
%s
nodes:
  proxy:  {addr: 10.0.1.1, port: 80, pool: 32}
  server: {addr: 10.0.2.1, port: 8000, pool: 32}
  db:     {addr: 10.0.3.1, port: 5432, pool: 16}
  cache:  {addr: 10.0.4.1, port: 6379, pool: 16}
tracelets:
  - name: page
    rpc:
      to: proxy
      calls:
        - to: server
          calls:
            - {to: db, reply: 500us±150us+exp(300us)}
            - {to: cache, reply: 100us±30us}
`

// TestLearntTolerance generates traces that state no clock and checks the
// tolerance learnt at the server: a microsecond where each node's times
// are its own clock's (exact timestamps, and 1 ms timestamps on clocks
// 2 ms apart, whose ticks are spread in order), tens of microseconds
// where the server compares its own clock with its callers' (one
// timestamp per message, the server's clock 300 µs slow: its requests'
// replies are stamped before their calls' replies came back); and that
// the accounting says so, while the first model's deconvolution keeps
// --clock-error for the triggers it reads around a message. Without learning every case is
// 100 µs.
func TestLearntTolerance(t *testing.T) {
	for _, c := range []struct {
		name   string
		clocks string
		lo, hi time.Duration
		from   uint8
	}{
		{"exact timestamps", "", time.Microsecond, time.Microsecond, tolLearnt},
		{"1 ms timestamps, clocks 2 ms apart", "resolution: 1ms\nclock_spread: 2ms", time.Microsecond, time.Microsecond, tolLearnt},
		{"one timestamp, server 300 µs slow", "timestamps: single\nskew: {server: -300us}", 30 * time.Microsecond, 100 * time.Microsecond, tolLearnt},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := gen.ParseConfig(strings.NewReader(fmt.Sprintf(tolConfig, c.clocks)), "tol.yaml")
			if err != nil {
				t.Fatal(err)
			}
			out, res, r := inferGenerated(t, cfg)
			server := r.nodeNamed(t, out.Trace.Intern("server"))
			got := time.Duration(r.tolAt(server))
			if got < c.lo || got > c.hi || r.tols.from[server] != c.from {
				t.Errorf("server's tolerance %v (how: %d), want %v to %v (how: %d)", got, r.tols.from[server], c.lo, c.hi, c.from)
			}
			if r.tols.model != int64(DefaultOptions().Tolerance) {
				t.Errorf("the first model's deconvolution reads triggers %d ns around a message, want --clock-error's", r.tols.model)
			}
			if v := enginetest.Count(res, "clock_error_ns"); v != int64(got) {
				t.Errorf("clock_error_ns %d, want the server's %d", v, int64(got))
			}
			if enginetest.Count(res, "clock_error_nodes_learnt") == 0 || enginetest.Count(res, "clock_error_certain_links") < tolMinLinks {
				t.Errorf("accounting says no node learnt its tolerance")
			}
		})
	}
}

// TestLearntToleranceOff checks that --learn-clock-error=false and a
// trace stating every node's clock keep the fixed and the stated
// tolerance.
func TestLearntToleranceOff(t *testing.T) {
	cfg, err := gen.ParseConfig(strings.NewReader(fmt.Sprintf(tolConfig, "")), "tol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	off := DefaultOptions()
	off.LearnClockError = false
	for _, c := range []struct {
		name    string
		opt     Options
		offsets []trace.Offset
		want    int64
		stated  int64
	}{
		{"learning off", off, nil, int64(100 * time.Microsecond), 0},
		{"every clock stated", DefaultOptions(), []trace.Offset{{Known: true, UncertaintyNS: 5000}}, 5000, 1},
	} {
		tr := *out.Trace
		tr.Meta.Offsets = c.offsets
		e, err := New(c.opt)
		if err != nil {
			t.Fatal(err)
		}
		res, r, err := e.infer(bgCtx, &tr)
		if err != nil {
			t.Fatal(err)
		}
		if r.tols.at != nil || r.tol != c.want || enginetest.Count(res, "clock_error_ns") != c.want {
			t.Errorf("%s: tolerance %d (per node: %v), want %d everywhere", c.name, r.tol, r.tols.at, c.want)
		}
		if got := enginetest.Count(res, "clock_error_nodes_stated"); (got > 0) != (c.stated > 0) {
			t.Errorf("%s: clock_error_nodes_stated %d", c.name, got)
		}
	}
}
