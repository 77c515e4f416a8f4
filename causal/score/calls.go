package score

import (
	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

// CallLink is what a result says about one message of the trace it was
// inferred from, read as call trees (ViewCalls), from the most probable
// instance that holds the message.
type CallLink struct {
	// Opener is the trace index of the message that opened the message's
	// call (the message itself for a CALL).
	Opener int32
	// Parent is the trace index of the message that opened the parent
	// call, -1 for the root's call.
	Parent int32
	// Placed is false for a message in no instance of the result (Opener
	// and Parent are then -1).
	Placed bool
}

// ResultCallLinks reads every instance of res, inferred from t, as call
// trees and returns each message's call link, indexed like t.Messages.
// listed is false when res lists no instance messages (the engine was run
// without Aggregate.KeepInstances, or gives none, as convolution).
func ResultCallLinks(res *causal.Result, t *trace.Trace) (links []CallLink, listed bool) {
	pl, listed := placements(res, t)
	links = make([]CallLink, len(pl))
	for i, q := range pl {
		links[i] = CallLink{Opener: -1, Parent: -1}
		if q.placed {
			links[i] = CallLink{Opener: q.callOpener, Parent: q.callParent, Placed: true}
		}
	}
	return links, listed
}

// TruthCallParents returns, for every message of the truth (indexed like
// truth.Trace.Messages), the truth index of the message that opened its
// parent call: for a CALL, the CALL its caller was serving when it made
// it; -1 for the root's call.
func TruthCallParents(truth *gen.Truth) []int32 {
	return newTruthCalls(truth).parentOpen
}
