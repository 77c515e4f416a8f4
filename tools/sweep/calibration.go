package main

import (
	"context"
	"fmt"
	"io"

	"github.com/wirepath/wirepath/causal/accuracy"
	"github.com/wirepath/wirepath/causal/gen"
)

// calibration writes how well the assembly engine's confidences mean
// what they say on the systems it was not tuned on
// (causal/accuracy/testdata/unseen): per system and number in flight,
// its joint links' and its requests' mean stated confidence, share right
// and expected calibration error (accuracy.Calibrate); then the same on
// TraceWeaver's traces (calibrationTW).
func calibration(ctx context.Context, w io.Writer, _ config) error {
	fmt.Fprintf(w, "### Calibration on the systems the engine was not tuned on\n\n")
	fmt.Fprintf(w, "1,000 instances per trace, as in \"Systems the engine was not tuned on\"; the assembly engine's joint links and requests: stated (mean confidence), right (share), ECE.\n\n")
	fmt.Fprintf(w, "| system | in flight | joint links | stated | right | ECE | requests | stated | right | ECE |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range accuracy.UnseenConfigs {
		for _, n := range []int{4, 16, 64} {
			cfg, err := accuracy.UnseenConfig(name)
			if err != nil {
				return err
			}
			cfg.Clients = n
			out, err := gen.Generate(cfg, gen.Options{})
			if err != nil {
				return fmt.Errorf("%s, %d in flight: %w", name, n, err)
			}
			res, err := accuracy.Assembly()().Infer(ctx, out.Trace)
			if err != nil {
				return fmt.Errorf("%s, %d in flight: %w", name, n, err)
			}
			c, ok := accuracy.Calibrate(out, res)
			if !ok {
				return fmt.Errorf("%s, %d in flight: the assembly engine listed no requests", name, n)
			}
			j, q := c.JointLinks, c.Requests
			fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.3f | %.3f | %d | %.3f | %.3f | %.3f |\n",
				name, n, j.N, j.MeanConfidence, j.Share, j.ECE, q.N, q.MeanConfidence, q.Share, q.ECE)
		}
	}
	fmt.Fprintln(w)
	return calibrationTW(ctx, w)
}

// calibrationTW writes the same on the published comparison's traces at
// their 1 ms timestamps (accuracy.TWCases, the µs rows left out): the
// assembly engine's joint links and requests, stated, right and ECE.
func calibrationTW(ctx context.Context, w io.Writer) error {
	fmt.Fprintf(w, "### Calibration on TraceWeaver's traces (1 ms timestamps)\n\n")
	fmt.Fprintf(w, "| trace | joint links | stated | right | ECE | requests | stated | right | ECE |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, tc := range accuracy.TWCases {
		if tc.Microseconds {
			continue
		}
		out, err := tc.Generate()
		if err != nil {
			return fmt.Errorf("%s: %w", tc.Label(), err)
		}
		res, err := accuracy.Assembly()().Infer(ctx, out.Trace)
		if err != nil {
			return fmt.Errorf("%s: %w", tc.Label(), err)
		}
		c, ok := accuracy.Calibrate(out, res)
		if !ok {
			return fmt.Errorf("%s: the assembly engine listed no requests", tc.Label())
		}
		j, q := c.JointLinks, c.Requests
		fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %.3f | %d | %.3f | %.3f | %.3f |\n",
			tc.Label(), j.N, j.MeanConfidence, j.Share, j.ECE, q.N, q.MeanConfidence, q.Share, q.ECE)
	}
	fmt.Fprintln(w)
	return nil
}
