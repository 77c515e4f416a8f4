package score

import (
	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

// View selects what Score compares.
type View string

// The views.
const (
	// ViewMessages compares trees of messages, the result contract's
	// patterns: a message's parent is the message whose arrival caused it.
	ViewMessages View = "messages"
	// ViewCalls compares call trees, as Project 5 did for the nesting
	// algorithm: each CALL with its RETURN is one call, and a call's parent
	// is the call its caller was serving. Serial and parallel children, and
	// which child RETURN a RETURN waited for, no longer matter.
	ViewCalls View = "calls"
)

// Views lists the valid views.
var Views = []View{ViewMessages, ViewCalls}

// callTree is the call structure of a tree of messages.
type callTree struct {
	of     []int32 // message position -> call node
	opener []int32 // call node -> position of the message that opened it
	parent []int32 // call node -> parent call node, -1 for a root
	from   []string
	to     []string
}

// msgTree describes a tree of messages to buildCallTree: n messages in
// parent-first order.
type msgTree struct {
	n      int
	parent func(i int) int
	kind   func(i int) trace.Kind
	from   func(i int) string
	to     func(i int) string
}

// buildCallTree walks every causal chain of the tree from the root with a
// stack of open calls: a CALL opens a call whose parent is the innermost
// open call; a RETURN closes the innermost open call from its receiver to
// its sender (or, with none, becomes a call of its own, labelled so that it
// matches no true call); a message of unknown kind is a call without return.
// A call opened when no call is open on its chain (after the root call's
// RETURN) hangs under the call of its parent message.
func buildCallTree(t msgTree) *callTree {
	ct := &callTree{of: make([]int32, t.n)}
	kids := make([][]int32, t.n)
	root := -1
	for i := 0; i < t.n; i++ {
		p := t.parent(i)
		if p < 0 || p >= t.n || p == i {
			if root < 0 {
				root = i
			}
			continue
		}
		kids[p] = append(kids[p], int32(i))
	}
	if root < 0 {
		return ct
	}
	newNode := func(i int, parent int32, from, to string) int32 {
		ct.opener = append(ct.opener, int32(i))
		ct.parent = append(ct.parent, parent)
		ct.from = append(ct.from, from)
		ct.to = append(ct.to, to)
		return int32(len(ct.opener) - 1)
	}
	var open []int32
	// top is the innermost open call, or, with none open on the chain, the
	// call of message i's parent, so that the calls stay one tree.
	top := func(i int) int32 {
		if len(open) > 0 {
			return open[len(open)-1]
		}
		if p := t.parent(i); i != root && p >= 0 && p < t.n {
			return ct.of[p]
		}
		return -1
	}
	var walk func(i int)
	walk = func(i int) {
		from, to := t.from(i), t.to(i)
		switch t.kind(i) {
		case trace.KindReturn:
			j := len(open) - 1
			for ; j >= 0; j-- {
				if c := open[j]; ct.from[c] == to && ct.to[c] == from {
					break
				}
			}
			if j >= 0 {
				ct.of[i] = open[j]
				saved := append([]int32(nil), open[j:]...)
				open = open[:j]
				for _, k := range kids[i] {
					walk(int(k))
				}
				open = append(open, saved...)
				return
			}
			ct.of[i] = newNode(i, top(i), from, "RETURN->"+to)
			for _, k := range kids[i] {
				walk(int(k))
			}
		default: // CALL, or a one-way message
			c := newNode(i, top(i), from, to)
			ct.of[i] = c
			open = append(open, c)
			for _, k := range kids[i] {
				walk(int(k))
			}
			open = open[:len(open)-1]
		}
	}
	walk(root)
	return ct
}

// signature returns the canonical signature of the call tree.
func (ct *callTree) signature() string {
	if len(ct.opener) == 0 {
		return ""
	}
	nodes := make([]*causal.SigNode, len(ct.opener))
	for c := range nodes {
		nodes[c] = &causal.SigNode{From: ct.from[c], To: ct.to[c]}
	}
	var root *causal.SigNode
	for c, p := range ct.parent {
		if p < 0 {
			if root == nil {
				root = nodes[c]
			}
			continue
		}
		nodes[p].Children = append(nodes[p].Children, nodes[c])
	}
	return root.Canonicalize()
}

// patternCallTree returns the call tree of a pattern's hops.
func patternCallTree(p *causal.Pattern) *callTree {
	kinds := make([]trace.Kind, len(p.Hops))
	for i, h := range p.Hops {
		kinds[i], _ = trace.ParseKind(h.Kind)
	}
	return buildCallTree(msgTree{
		n: len(p.Hops),
		parent: func(i int) int {
			if p.Hops[i].Parent == nil {
				return -1
			}
			return *p.Hops[i].Parent
		},
		kind: func(i int) trace.Kind { return kinds[i] },
		from: func(i int) string { return p.Hops[i].From },
		to:   func(i int) string { return p.Hops[i].To },
	})
}

// truthCalls holds the call structure of every true message: the CALL that
// opened its call, and the CALL that opened the parent call (-1: none).
type truthCalls struct {
	truth              *gen.Truth
	opener, parentOpen []int32 // by truth index
}

func newTruthCalls(truth *gen.Truth) *truthCalls {
	n := len(truth.Trace.Messages)
	tc := &truthCalls{truth: truth, opener: make([]int32, n), parentOpen: make([]int32, n)}
	msgs := truth.Trace.Messages
	for _, in := range truth.Instances() {
		nodes := in.Nodes
		if len(nodes) == 0 {
			continue
		}
		ct := buildCallTree(msgTree{
			n:      len(nodes),
			parent: func(i int) int { return int(nodes[i].Parent) },
			kind:   func(i int) trace.Kind { return msgs[nodes[i].Msg].Kind },
			from:   func(i int) string { return truth.Trace.Str(msgs[nodes[i].Msg].SrcNode) },
			to:     func(i int) string { return truth.Trace.Str(msgs[nodes[i].Msg].DstNode) },
		})
		for i, nd := range nodes {
			c := ct.of[i]
			tc.opener[nd.Msg] = nodes[ct.opener[c]].Msg
			tc.parentOpen[nd.Msg] = -1
			if pc := ct.parent[c]; pc >= 0 {
				tc.parentOpen[nd.Msg] = nodes[ct.opener[pc]].Msg
			}
		}
	}
	return tc
}

// sameCalls reports whether an inferred instance of p, whose messages are
// the truth messages ids (one true instance's, in hop order), has the true
// call structure.
func (tc *truthCalls) sameCalls(p *causal.Pattern, ids []int32) bool {
	msgs := tc.truth.Trace.Messages
	ct := buildCallTree(msgTree{
		n: len(ids),
		parent: func(i int) int {
			if p.Hops[i].Parent == nil {
				return -1
			}
			return *p.Hops[i].Parent
		},
		kind: func(i int) trace.Kind { return msgs[ids[i]].Kind },
		from: func(i int) string { return p.Hops[i].From },
		to:   func(i int) string { return p.Hops[i].To },
	})
	for k, id := range ids {
		c := ct.of[k]
		if ids[ct.opener[c]] != tc.opener[id] {
			return false
		}
		want := int32(-1)
		if pc := ct.parent[c]; pc >= 0 {
			want = ids[ct.opener[pc]]
		}
		if want != tc.parentOpen[id] {
			return false
		}
	}
	return true
}
