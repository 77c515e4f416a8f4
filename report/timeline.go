package report

import (
	"math"
	"slices"

	"github.com/wirepath/wirepath/causal"
)

// hopTimes are the times of one hop of one instance (or of a pattern's mean
// instance), in microseconds relative to the root's send.
type hopTimes struct {
	// send is the send time, or the receive time when the send was not
	// seen (the aggregator's start_us has the same fallback).
	send float64
	// net is the network delay; netKnown says whether both ends were seen.
	net      float64
	netKnown bool
	// node is the node delay at the sender; nodeKnown says whether it was
	// measured (the sender saw both the parent's arrival and this send).
	node      float64
	nodeKnown bool
	bytes     float64
}

// arrive is the arrival time of the hop at its receiver: the send plus the
// network delay, or the fallback time when the network delay is unknown.
func (h hopTimes) arrive() float64 {
	if h.netKnown {
		return h.send + h.net
	}
	return h.send
}

// visit is one stay of a path at a node (a box in a WAP5 timeline): it
// starts when a hop arrives and ends with the last hop that arrival caused.
// The root sender's visit has In == -1.
type visit struct {
	Node string
	// In is the hop that caused the visit, -1 for the root sender.
	In int
	// Start and End bound the visit in µs from the root's send. For an
	// untraced visit (a diamond) they run from the incoming hop's send to
	// the last outgoing hop's send, so they include the network.
	Start, End float64
	// Untraced is set when the node's own timestamps are missing, so its
	// delay cannot be told apart from the network's (WAP5 §6.1 diamonds).
	Untraced bool
	// Unseen is set for an untraced leaf: a message went there and nothing
	// more was seen of it.
	Unseen bool
	// Sends are the hops sent during the visit, by mean start.
	Sends []int
	// Lane is the row of the visit in a timeline drawing.
	Lane int
	// Delay is the node delay to show: the largest measured node delay of
	// the sends (one clock), or End-Start when none was measured.
	Delay float64
}

// timeline is the WAP5-style event view of one pattern instance.
type timeline struct {
	Visits []visit
	// Recv[h] is the visit hop h arrives at; Sender[h] the visit that sent it.
	Recv, Sender []int
	Hops         []hopTimes
	// Total is the end of the last event (µs from the root's send).
	Total float64
	Lanes int
}

// meanTimes returns the mean hop times of pattern p.
func meanTimes(p *causal.Pattern) []hopTimes {
	ht := make([]hopTimes, len(p.Hops))
	for i := range p.Hops {
		h := &p.Hops[i]
		if h.Start != nil {
			ht[i].send = h.Start.Mean
		}
		if h.NetDelay != nil {
			ht[i].net, ht[i].netKnown = h.NetDelay.Mean, true
		}
		if h.NodeDelay != nil {
			ht[i].node, ht[i].nodeKnown = h.NodeDelay.Mean, true
		}
		if h.Bytes != nil {
			ht[i].bytes = h.Bytes.Mean
		}
	}
	return ht
}

// buildTimeline lays out the visits of a pattern instance with hop times ht.
// p must be WellFormed.
func buildTimeline(p *causal.Pattern, ht []hopTimes) *timeline {
	n := len(p.Hops)
	kids := p.Children()
	for _, ks := range kids {
		slices.SortStableFunc(ks, func(a, b int) int { return cmpF(ht[a].send, ht[b].send) })
	}
	tl := &timeline{Recv: make([]int, n), Sender: make([]int, n), Hops: ht}
	root := &p.Hops[0]
	// The root sender's visit.
	rootUntraced := !ht[0].netKnown && len(kids[0]) > 0 && ht[kids[0][0]].nodeKnown
	tl.Visits = append(tl.Visits, visit{Node: root.From, In: -1, Start: ht[0].send, End: ht[0].send, Sends: []int{0}, Untraced: rootUntraced})
	tl.Sender[0] = 0
	for i := range p.Hops {
		h := &p.Hops[i]
		v := visit{Node: h.To, In: i, Sends: kids[i]}
		ks := kids[i]
		untraced := len(ks) > 0
		for _, c := range ks {
			if ht[c].nodeKnown {
				untraced = false
			}
		}
		senderTraced := i == 0 && !rootUntraced || i > 0 && ht[i].nodeKnown
		switch {
		case untraced:
			v.Untraced = true
			v.Start = ht[i].send
			v.End = v.Start
			for _, c := range ks {
				v.End = math.Max(v.End, ht[c].send)
			}
			v.Delay = v.End - v.Start
		case len(ks) == 0 && !ht[i].netKnown && senderTraced:
			// Sent, never seen arriving, nothing after it.
			v.Untraced, v.Unseen = true, true
			v.Start, v.End = ht[i].send, ht[i].send
		default:
			v.Start = ht[i].arrive()
			v.End = v.Start
			for _, c := range ks {
				v.End = math.Max(v.End, ht[c].send)
				if ht[c].nodeKnown {
					v.Delay = math.Max(v.Delay, ht[c].node)
				}
			}
		}
		tl.Visits = append(tl.Visits, v)
		tl.Recv[i] = len(tl.Visits) - 1
		for _, c := range ks {
			tl.Sender[c] = len(tl.Visits) - 1
		}
	}
	for i := range tl.Visits {
		tl.Total = math.Max(tl.Total, tl.Visits[i].End)
	}
	for i := range ht {
		tl.Total = math.Max(tl.Total, ht[i].arrive())
	}
	tl.assignLanes()
	return tl
}

// assignLanes puts a visit's first child visit on its own lane and every
// further child on a new lane below, so that a sequential path stays on
// one row and only logically parallel branches spread vertically (WAP5
// §6.1).
func (tl *timeline) assignLanes() {
	next := 1
	var walk func(vi, lane int)
	walk = func(vi, lane int) {
		tl.Visits[vi].Lane = lane
		for k, h := range tl.Visits[vi].Sends {
			l := lane
			if k > 0 {
				l = next
				next++
			}
			walk(tl.Recv[h], l)
		}
	}
	walk(0, 0)
	tl.Lanes = next
}

// combined returns the total delay through the untraced visit that sent
// hop h: from the send of the hop into the visit to the send of h (which
// falls back to h's arrival when its send was not seen).
func (tl *timeline) combined(h int) float64 {
	v := &tl.Visits[tl.Sender[h]]
	return tl.Hops[h].send - v.Start
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
