// Command tbwait tests, on a toggled testbed run (scripts/whatif-validate.sh's
// NAME-toggle runs: the change made in alternate windows of the wall clock),
// where the latency a change adds goes beyond the round trips it adds, and
// whether the run's windows without the change foretell it
// (docs/whatif.md, **Where the changed windows' extra time goes**).
//
//	tbwait [-engine assembly] [-toggle 1s] [-warmup 2s] [-min 30] [-callers N,...] [-hz 100] RUN...
//
// Each RUN holds the testbed's truth.jsonl and logs/client.jsonl and
// ENGINE/result.json with ENGINE/trace.tsv (the engine's trees and the
// trace they were made from). Every client request sent and answered
// within one window (after the warm-up) is decomposed from its tree: the
// transit of its messages per link, each node's own time (the time it
// held a call less the time it waited on its own calls) and, per
// sequential call, the caller's post-wait (from the answer's arrival to
// the caller's next send). It prints two Markdown tables:
//
//   - per request kind, the change (with less without, ms) of the client's
//     latency, of the capture's, of the transit over all links, of each
//     node's own time and of the client's own (client less capture);
//   - per kind, the change of the post-wait time per request and how much
//     of it the windows without the change foretell: per caller, callee and
//     kind, a line of the post-wait in log10 of the wait fitted in those
//     windows alone (its slope per decade ± σ), applied to the waits of
//     the windows with the change.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/wirepath/wirepath/testbed/internal/clientlog"
	"log"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

// sample is one client request's breakdown, its kind and window.
type sample struct {
	kind   string
	on     bool
	client float64 // the client's latency (ms)
	b      breakdown
}

func main() {
	engine := flag.String("engine", "assembly", "the engine whose files the runs hold (RUN/ENGINE/)")
	toggle := flag.Duration("toggle", 1e9, "the windows' length (SHIM_TOGGLE)")
	warmup := flag.Duration("warmup", 2e9, "leave out the requests sent within this time of a run's first")
	minN := flag.Int("min", 30, "the fewest post-wait samples per window for a caller, callee and kind to be fitted")
	callers := flag.String("callers", "", "list the post-wait fits of these callers alone, comma-separated (the per-kind sums keep every caller)")
	hz := flag.Float64("hz", 100, "the clock ticks per second of the runs' NAME.stat files (getconf CLK_TCK)")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: tbwait [-engine E] [-toggle 1s] [-warmup 2s] RUN...")
	}
	var all []sample
	var segs []segment
	for _, d := range flag.Args() {
		s, g := readRun(d, *engine, int64(*toggle), int64(*warmup))
		all, segs = append(all, s...), append(segs, g...)
	}
	fmt.Printf("**%s** (engine %s; the change in the odd %v windows)\n\n", strings.Join(baseNames(flag.Args()), ", "), *engine, *toggle)
	writeDecomposition(os.Stdout, all)
	fmt.Println()
	writePostWait(os.Stdout, all, *minN, strings.Split(*callers, ","))
	fmt.Println()
	writeIdle(os.Stdout, segs, *minN)
	fmt.Println()
	for _, d := range flag.Args() {
		first, last := clientlog.Span(clientTimes(d))
		writeMachine(os.Stdout, d, float64(first+int64(*warmup))/1e9, float64(last)/1e9, toggle.Seconds(), *hz)
	}
}

func baseNames(ds []string) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = filepath.Base(d)
	}
	return out
}

// readRun decomposes run d's client requests made within one window, and
// lists its trace's work segments.
func readRun(d, engine string, toggle, warmup int64) ([]sample, []segment) {
	tr, err := trace.ReadFile(filepath.Join(d, engine, "trace.tsv"), trace.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	f, err := truth.ReadFile(filepath.Join(d, "truth.jsonl"))
	if err != nil {
		log.Fatal(err)
	}
	var res struct {
		Requests []struct {
			Root       int      `json:"root"`
			Background bool     `json:"background"`
			Messages   []msgRef `json:"messages"`
		} `json:"requests"`
	}
	b, err := os.ReadFile(filepath.Join(d, engine, "result.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		log.Fatal(err)
	}
	mp := score.MapTrace(tr, f, score.DefaultMapOptions())
	roots := map[int]truth.Request{}
	for _, r := range f.Requests {
		if !r.Background {
			roots[r.Root] = r
		}
	}
	answered := clientTimes(d)
	first, _ := clientlog.Span(answered)
	client := map[int]clientlog.Request{}
	for _, c := range answered {
		client[c.ID] = c
	}
	ev := func(i int) event {
		m := &tr.Messages[i]
		return event{int64(m.SendTS), int64(m.RecvTS), tr.Str(m.SrcNode), tr.Str(m.DstNode)}
	}
	var out []sample
	for _, r := range res.Requests {
		if r.Background || r.Root < 0 || r.Root >= len(mp.TraceToTruth) || mp.TraceToTruth[r.Root] < 0 {
			continue
		}
		req, ok := roots[f.Messages[mp.TraceToTruth[r.Root]].ID]
		c, seen := client[req.ID]
		if !ok || !seen || c.SendNS-first < warmup || c.SendNS/toggle != c.RecvNS/toggle {
			continue
		}
		out = append(out, sample{kind: req.Kind, on: (c.SendNS/toggle)%2 == 1, client: ms1(c.Latency()), b: decompose(r.Messages, ev)})
	}
	return out, segments(tr, toggle, first+warmup-firstSend(tr))
}

// firstSend is the earliest send time in tr (ns).
func firstSend(tr *trace.Trace) int64 {
	first := int64(math.MaxInt64)
	for i := range tr.Messages {
		if t := tr.Messages[i].SendTS; t.Known() && int64(t) < first {
			first = int64(t)
		}
	}
	return first
}

// clientTimes is run dir's answered client requests.
func clientTimes(dir string) []clientlog.Request {
	l, err := clientlog.Read(dir)
	if err != nil {
		log.Fatal(err)
	}
	return l.Answered()
}
