package causal

import (
	"context"
	"fmt"

	"github.com/wirepath/wirepath/trace"
)

// InferAll runs the engines one after another on the trace ms and returns
// their results in the same order. start, if not nil, is called before
// each engine with its position. Engines do not modify ms, and each uses
// its own workers, so they run in turn. An engine's error stops the run
// and is returned with the engine's name.
func InferAll(ctx context.Context, ms trace.Messages, engines []Engine, start func(i int, e Engine)) ([]*Result, error) {
	out := make([]*Result, 0, len(engines))
	for i, e := range engines {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if start != nil {
			start(i, e)
		}
		res, err := e.Infer(ctx, ms)
		if err != nil {
			return out, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, res)
	}
	return out, nil
}
