// Package score is the `wirepath score` command: an engine's result against
// the ground truth of a generated trace (Project 5 section 7.5.1).
package score

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/trace"
)

// Options are the flags of `wirepath score`.
type Options struct {
	Result      string
	Truth       string
	JSON        bool
	Output      string
	Tolerance   float64
	MaxN        int
	Hops        int
	Patterns    int
	NoClientAgg bool
	NoEphemeral bool
	MinPeers    int
	View        string
	Trace       string
	Tolerance2  time.Duration
}

const long = `Score an engine's result against the ground truth of a generated trace,
with the metrics of Project 5 section 7.5.1.

RESULT is the JSON an engine wrote (wirepath link|nest|convolve --format json);
TRUTH is the truth file 'wirepath gen' wrote with the trace the engine read.
Patterns are compared by their canonical signatures: false positives are
inferred patterns that are not true, false negatives true patterns not found.
Instances and messages are scored when the engine listed the messages of
every instance (run it with --instances -1): an instance is correct when it
has exactly the messages of a true instance with the right parent for each.
In that default view (--view messages) the row "as calls" gives the
instances compared as call trees too (a call's parent is the call its
caller was serving; --view calls): the accuracy harness's requests exactly
right (docs/accuracy.md), which does not judge the order a request's
messages are said to follow each other in.
The top-N curve counts how many of the N most frequent true patterns are not
among the N top-ranked inferred ones; near-ties within --tolerance are
excused. Node and network delay errors are given per hop and per node for
the patterns found.

The naming flags must match those the engine ran with.

With the ground truth of a testbed run (testbed/testbed.sh writes truth.jsonl),
RESULT may hold several engines' results (analyze --engine all) and --trace
is required: each trace message is matched to the true message it stands for
by its connection (either side's names across a NAT) and its ordinal there,
and every request is scored: the share whose whole call tree is exactly
right, per link type the share of child calls attributed to the right parent,
background calls kept out of requests, message parents, node delay error by
tier, and the messages either side lacks (docs/testbed.md).`

const example = `  wirepath gen multitier -o mt.tsv
  wirepath nest mt.tsv --format json --instances -1 -o nest.json
  wirepath score nest.json mt.truth.tsv
  wirepath score nest.json mt.truth.tsv --format json -o score.json
  wirepath analyze OUT/*.pcap* --engine all --format json --instances -1 --save-trace t.tsv -o all.json
  wirepath score all.json OUT/truth.jsonl --trace t.tsv`

// NewCmd returns the score command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "score RESULT TRUTH [flags]",
		Short:   "Score an engine's result against a generated trace's ground truth",
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Result, opts.Truth = args[0], args[1]
			if err := cmdutil.OutputFormat(cmd.Flags(), opts.Output, []string{"text", "json"}); err != nil {
				return err
			}
			if err := opts.validate(); err != nil {
				return err
			}
			return run(ios, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.JSON, "json", false, "print the score as JSON")
	cmdutil.FormatFlag(f, &opts.JSON)
	f.StringVarP(&opts.Output, "output", "o", "", "write the score to `FILE` instead of stdout")
	f.Float64Var(&opts.Tolerance, "tolerance", score.DefaultTolerance, "top-N near-tie tolerance (fraction of the N-th inferred count)")
	f.IntVar(&opts.MaxN, "max-n", 0, "largest N of the top-N curve (0 = the number of true patterns)")
	f.IntVar(&opts.Hops, "hops", 3, "show the per-hop delays of this many patterns found")
	f.IntVar(&opts.Patterns, "patterns", 10, "list this many false-positive and false-negative patterns")
	f.StringVar(&opts.View, "view", string(score.ViewMessages), "compare trees of `messages` (the result contract) or call trees (calls: CALL+RETURN as one call, as Project 5 scored nesting)")
	f.StringVar(&opts.Trace, "trace", "", "the trace the engine read, when it is not the generated one (e.g. rebuilt from 'gen --pcap' captures): its messages are matched to the truth by endpoints and time, and the truth takes its node names")
	f.DurationVar(&opts.Tolerance2, "match-tolerance", time.Second, "with --trace, the largest time difference of a matched message")
	f.BoolVar(&opts.NoClientAgg, "no-aggregate-clients", false, "as the engine's flag: keep client node names")
	f.BoolVar(&opts.NoEphemeral, "keep-ephemeral-ports", false, "as the engine's flag: keep ephemeral port numbers")
	f.IntVar(&opts.MinPeers, "min-peers", trace.DefaultRoleOptions().MinPeers, "as the engine's flag: distinct peers that make a port fixed")
	return cmd
}

func (o *Options) validate() error {
	if !(o.Tolerance >= 0 && o.Tolerance < 1) {
		return cmdutil.UsageErrorf("--tolerance must be in [0, 1)")
	}
	if o.MaxN < 0 || o.Hops < 0 || o.Patterns < 0 {
		return cmdutil.UsageErrorf("--max-n, --hops and --patterns must not be negative")
	}
	if o.View != string(score.ViewMessages) && o.View != string(score.ViewCalls) {
		return cmdutil.UsageErrorf("--view must be messages or calls")
	}
	if o.Tolerance2 < 0 {
		return cmdutil.UsageErrorf("--match-tolerance must not be negative")
	}
	if o.MinPeers < 1 {
		return cmdutil.UsageErrorf("--min-peers must be at least 1")
	}
	return nil
}

func run(ios *cmdutil.IOStreams, o *Options) error {
	if tb, err := isTestbedTruth(o.Truth); err != nil {
		return err
	} else if tb {
		return runRequests(ios, o)
	}
	res, err := cmdutil.ReadResult(ios, o.Result)
	if err != nil {
		return err
	}
	truth, err := gen.ReadTruthFile(o.Truth)
	if err != nil {
		return err
	}
	opt := score.DefaultOptions()
	opt.Naming.AggregateClients = !o.NoClientAgg
	opt.Naming.EphemeralPorts = !o.NoEphemeral
	opt.Naming.Roles.MinPeers = o.MinPeers
	opt.Tolerance = o.Tolerance
	opt.MaxN = o.MaxN
	opt.View = score.View(o.View)
	if o.Trace != "" {
		tr, err := trace.ReadFile(o.Trace, trace.ReadOptions{})
		if err != nil {
			return err
		}
		if res.Trace.Messages != len(tr.Messages) {
			ios.Warnf("the result was inferred from %d messages, %s has %d", res.Trace.Messages, o.Trace, len(tr.Messages))
		}
		m, st := gen.MatchTrace(tr, truth, int64(o.Tolerance2))
		if st.Unmatched > 0 {
			ios.Warnf("%d of %d messages of %s match no true message", st.Unmatched, st.Messages, o.Trace)
		}
		truth.AdoptNames(tr, m)
		opt.TraceToTruth = m
	}
	rep, err := score.Score(res, truth, opt)
	if err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		ios.Warnf("%s", w)
	}
	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	if o.JSON {
		err = cmdutil.WriteJSON(out, rep)
	} else {
		err = score.WriteText(out, rep, score.TextOptions{Patterns: o.Patterns, Hops: o.Hops})
	}
	err = out.Finish(err)
	return err
}
