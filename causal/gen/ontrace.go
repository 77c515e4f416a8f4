package gen

import "github.com/wirepath/wirepath/causal"

// TraceTruth is a truth indexed like the generated trace (Output.Trace)
// instead of like the truth's own messages: what a test that runs an
// engine on the trace compares with.
type TraceTruth struct {
	// Parent is, for each message of the trace, the trace index of its
	// true parent, or -1 for an instance's root. When the parent was lost
	// it is the nearest ancestor the trace holds (-1 if none).
	Parent []int32
	// Instance is each message's path instance.
	Instance []int32
	// Tracelet indexes Truth.Meta.Tracelets: each message's template.
	Tracelet []int32
	// NumInstances is the number of instances generated (those with no
	// message in the trace included).
	NumInstances int
}

// OnTrace returns the truth indexed by the generated trace.
func (t *Truth) OnTrace() *TraceTruth {
	n := t.Meta.Observed
	tt := &TraceTruth{
		Parent:       make([]int32, n),
		Instance:     make([]int32, n),
		Tracelet:     make([]int32, n),
		NumInstances: t.NumInstances(),
	}
	for i, o := range t.Observed {
		if o < 0 || int(o) >= n {
			continue
		}
		tt.Instance[o], tt.Tracelet[o] = t.Instance[i], t.Tracelet[i]
		tt.Parent[o] = -1
		for p := t.Parent[i]; p >= 0; p = t.Parent[p] {
			if t.Observed[p] >= 0 {
				tt.Parent[o] = t.Observed[p]
				break
			}
		}
	}
	return tt
}

// Instances returns the true instances over the trace (Msg is a trace
// index), parents first, indexed by instance number, with probability 1;
// an instance none of whose messages the trace holds, or whose messages
// form more than one tree there (its root was lost), has no nodes or only
// the tree of its first observed message.
func (tt *TraceTruth) Instances() []causal.Instance {
	kids := make([][]int32, len(tt.Parent))
	roots := make([]int32, tt.NumInstances)
	for i := range roots {
		roots[i] = -1
	}
	for i, p := range tt.Parent {
		if p < 0 {
			if k := tt.Instance[i]; roots[k] < 0 {
				roots[k] = int32(i)
			}
			continue
		}
		kids[p] = append(kids[p], int32(i))
	}
	out := make([]causal.Instance, tt.NumInstances)
	for k, r := range roots {
		if r < 0 {
			continue
		}
		nodes := []causal.InstanceNode{{Msg: r, Parent: -1}}
		for q := 0; q < len(nodes); q++ {
			for _, c := range kids[nodes[q].Msg] {
				nodes = append(nodes, causal.InstanceNode{Msg: c, Parent: int32(q)})
			}
		}
		out[k] = causal.Instance{Nodes: nodes, Prob: 1}
	}
	return out
}
