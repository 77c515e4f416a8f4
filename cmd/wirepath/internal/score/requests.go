package score

import (
	"bufio"
	"fmt"
	"os"

	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/trace"
)

// isTestbedTruth reports whether path starts with a testbed truth header.
func isTestbedTruth(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	prefix, _ := bufio.NewReaderSize(f, 4096).Peek(4096)
	return truth.IsTruth(prefix), nil
}

// runRequests scores every engine result in o.Result against a testbed
// truth, request by request.
func runRequests(ios *cmdutil.IOStreams, o *Options) error {
	if o.Trace == "" {
		return cmdutil.UsageErrorf("a testbed truth needs --trace: the trace the engine read (analyze --save-trace)")
	}
	results, err := cmdutil.ReadResults(ios, o.Result)
	if err != nil {
		return err
	}
	f, err := truth.ReadFile(o.Truth)
	if err != nil {
		return err
	}
	tr, err := trace.ReadFile(o.Trace, trace.ReadOptions{})
	if err != nil {
		return err
	}
	for _, res := range results {
		if res.Trace.Messages != len(tr.Messages) {
			ios.Warnf("the %s result was inferred from %d messages, %s has %d", res.Engine, res.Trace.Messages, o.Trace, len(tr.Messages))
		}
	}
	opt := score.DefaultMapOptions()
	if o.Tolerance2 > 0 {
		opt.MatchScale = int64(o.Tolerance2) / 1000
		if opt.MatchScale < 1 {
			opt.MatchScale = 1
		}
	}
	s := score.NewRequestScores(results, tr, f, opt)
	for _, e := range s.Engines {
		if !e.Instances {
			ios.Warnf("the %s result lists no instances (run it with --instances -1): not scored", e.Engine)
		}
	}
	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	if o.JSON {
		err = cmdutil.WriteJSON(out, s)
	} else {
		err = score.WriteRequestText(out, s)
	}
	err = out.Finish(err)
	if err != nil {
		return fmt.Errorf("writing the score: %w", err)
	}
	return nil
}
