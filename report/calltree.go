package report

import (
	"math"

	"github.com/wirepath/wirepath/causal"
)

// callNode is one node of a call tree as Project 5 (section 5.4, Figure 8)
// draws it: a node entered by a call, with the mean latency of all activity
// in it and its children, reached by an edge labelled with the delay from
// the entry into the parent node to the entry into this one.
type callNode struct {
	Node string
	// In is the hop that entered the node (a CALL, or any hop in message
	// mode), -1 for the root (the path's initiator).
	In int
	// Return is the RETURN hop paired with In, -1 if none.
	Return int
	// Entry is when the node was entered, µs from the root's send.
	Entry float64
	// Latency is the time from entry to leaving the node (the paired
	// RETURN's send, or the end of the last activity below it).
	Latency float64
	// EdgeDelay is Entry minus the parent's Entry.
	EdgeDelay float64
	Parent    int
	Kids      []int
	Untraced  bool
}

// callTree is the call hierarchy of one pattern.
type callTree struct {
	// Calls is true when the tree pairs CALL hops with their RETURN hops
	// (every hop has a kind and every RETURN found its CALL); otherwise
	// every hop is a call-tree edge of its own (message mode).
	Calls bool
	Nodes []callNode
	ends  []float64 // subtreeEnds
}

// pairReturns pairs every RETURN hop with the nearest unpaired CALL hop
// among its ancestors that went the opposite way (the call it answers).
// It returns, by hop, the paired hop or -1.
func pairReturns(p *causal.Pattern) []int {
	pair := make([]int, len(p.Hops))
	for i := range pair {
		pair[i] = -1
	}
	for i := range p.Hops {
		r := &p.Hops[i]
		if r.Kind != "RETURN" {
			continue
		}
		for a := r.Parent; a != nil; a = p.Hops[*a].Parent {
			c := &p.Hops[*a]
			if c.Kind == "CALL" && c.From == r.To && c.To == r.From && pair[c.ID] < 0 {
				pair[c.ID], pair[i] = i, c.ID
				break
			}
		}
	}
	return pair
}

// buildCallTree reconstructs the call tree of p from its timeline tl.
func buildCallTree(p *causal.Pattern, tl *timeline) *callTree {
	pair := pairReturns(p)
	calls := true
	for i := range p.Hops {
		k := p.Hops[i].Kind
		if k != "CALL" && k != "RETURN" || k == "RETURN" && pair[i] < 0 {
			calls = false
			break
		}
	}
	total := tl.Total
	if p.Latency != nil {
		total = p.Latency.Mean
	}
	ct := &callTree{Calls: calls, ends: subtreeEnds(p, tl)}
	root := callNode{Node: p.Hops[0].From, In: -1, Return: -1, Parent: -1, Latency: total, Untraced: tl.Visits[0].Untraced}
	ct.Nodes = append(ct.Nodes, root)
	if calls {
		ct.buildCalls(p, tl, pair)
	} else {
		ct.buildMessages(p, tl)
	}
	return ct
}

func (ct *callTree) add(n callNode) int {
	ct.Nodes = append(ct.Nodes, n)
	id := len(ct.Nodes) - 1
	if n.Parent >= 0 {
		par := &ct.Nodes[n.Parent]
		par.Kids = append(par.Kids, id)
		ct.Nodes[id].EdgeDelay = n.Entry - par.Entry
	}
	return id
}

// buildCalls makes one call-tree node per CALL hop; its parent is the call
// its sender was serving when it made the call.
func (ct *callTree) buildCalls(p *causal.Pattern, tl *timeline, pair []int) {
	node := make([]int, len(p.Hops)) // call-tree node of each CALL hop
	var owner func(h int) int
	owner = func(h int) int {
		// The call-tree node the sender of hop h is serving.
		from := p.Hops[h].From
		for a := p.Hops[h].Parent; a != nil; {
			g := &p.Hops[*a]
			if g.Kind == "CALL" && g.To == from {
				return node[g.ID]
			}
			if g.Kind == "RETURN" && g.To == from && pair[g.ID] >= 0 {
				// Back from a callee: the sender serves whatever it served
				// when it made that call.
				return owner(pair[g.ID])
			}
			a = g.Parent
		}
		return 0
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		if h.Kind != "CALL" {
			continue
		}
		v := &tl.Visits[tl.Recv[i]]
		entry := tl.Hops[i].arrive()
		n := callNode{Node: h.To, In: i, Return: pair[i], Parent: owner(i), Entry: entry, Untraced: v.Untraced}
		if r := pair[i]; r >= 0 {
			n.Latency = tl.Hops[r].send - entry
		} else {
			n.Latency = ct.ends[i] - entry
		}
		node[i] = ct.add(n)
	}
}

// buildMessages makes one call-tree node per hop (per visit).
func (ct *callTree) buildMessages(p *causal.Pattern, tl *timeline) {
	node := make([]int, len(p.Hops))
	for i := range p.Hops {
		h := &p.Hops[i]
		par := 0
		if h.Parent != nil {
			par = node[*h.Parent]
		}
		v := &tl.Visits[tl.Recv[i]]
		n := callNode{Node: h.To, In: i, Return: -1, Parent: par, Entry: v.Start, Untraced: v.Untraced}
		n.Latency = ct.ends[i] - v.Start
		node[i] = ct.add(n)
	}
}

// subtreeEnds returns, for every hop, the last event (send or arrival) at
// or below it. Hops are in parent-first order, so one backward pass does.
func subtreeEnds(p *causal.Pattern, tl *timeline) []float64 {
	end := make([]float64, len(p.Hops))
	for i := range p.Hops {
		end[i] = tl.Hops[i].arrive()
	}
	for i := len(p.Hops) - 1; i > 0; i-- {
		par := *p.Hops[i].Parent
		end[par] = math.Max(end[par], end[i])
	}
	return end
}
