package whatif

import (
	"math"
	"slices"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// LinkProfile is what one request of a pattern does on one inter-node link,
// the inputs of the network delay model of Stewart and Shen, "Performance
// Modeling and System Management for Multi-component Online Services"
// (NSDI 2005), sections 2.3 and 3.2: the data volume ν and the number of
// blocking round trips κ per request. A link joins two nodes and carries
// messages both ways; it is named by the direction of its first message.
type LinkProfile struct {
	// Link is "A->B" in the signature grammar, A the node that sent first.
	Link string `json:"link"`
	A    string `json:"a"`
	B    string `json:"b"`
	// Messages is the number of messages per request, both ways.
	Messages int `json:"messages"`
	// Bytes is ν, the mean bytes per request, both ways.
	Bytes float64 `json:"bytes"`
	// RoundTrips is κ, the blocking round trips per request: a message
	// one way followed, causally, by the first message back, with round
	// trips that overlap in time counted once (the paper counts write-read
	// pairs closer than one round-trip time as one).
	RoundTrips int `json:"round_trips"`
	// RTTUS is γ in µs: from the captures' passive round trips where
	// CaptureRTTs found them (RTTSource Measured), else the mean over the
	// link's round trips of their two messages' network delays (one way
	// each, clock-corrected: Estimated), which is no round trip when one
	// capture point saw both ends (then 0 and not known). RTTKnown is
	// false when neither gave one.
	RTTUS     float64 `json:"rtt_us"`
	RTTKnown  bool    `json:"rtt_known"`
	RTTSource Source  `json:"rtt_source,omitempty"`
	// Hops are the pattern's hops on the link.
	Hops []int `json:"hops"`
}

// CaptureRTTs sets the round trips of pattern p's link profiles ps from
// the captures' (a result's Trace.Links) where one matches a link and was
// measured: the passive round trips of flows and reconcile, not the
// messages' network delays.
func CaptureRTTs(p *causal.Pattern, ps []LinkProfile, links []trace.Link) {
	nodes := map[string]bool{}
	for _, h := range p.Hops {
		nodes[h.From], nodes[h.To] = true, true
	}
	for i := range ps {
		l := &Link{A: ps[i].A, B: ps[i].B}
		var match []*trace.Link
		for j := range links {
			a, b := patternName(links[j].A, nil, nodes), patternName(links[j].B, nil, nodes)
			if linkKey(a, b) == linkKey(l.A, l.B) {
				match = append(match, &links[j])
			}
		}
		if len(match) == 0 {
			continue
		}
		l.fill(match)
		if l.RTTSource == Measured || l.RTTSource == ViaHosts || l.RTTSource == SameHost {
			ps[i].RTTUS, ps[i].RTTKnown, ps[i].RTTSource = l.RTTUS, true, l.RTTSource
		}
	}
}

// roundTrip is one blocking round trip: hop Out one way, hop Back the first
// causally following hop the other way.
type roundTrip struct{ Out, Back int }

// LinkProfiles returns the link profile of pattern p, links in order of
// their first hop. It returns nil for a malformed pattern.
func LinkProfiles(p *causal.Pattern) []LinkProfile {
	if !p.WellFormed() {
		return nil
	}
	ht := meanTimes(p)
	var links []LinkProfile
	index := map[[2]string]int{}
	key := func(a, b string) [2]string {
		if a > b {
			a, b = b, a
		}
		return [2]string{a, b}
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		k := key(h.From, h.To)
		li, ok := index[k]
		if !ok {
			li = len(links)
			index[k] = li
			links = append(links, LinkProfile{Link: causal.QuoteName(h.From) + "->" + causal.QuoteName(h.To), A: h.From, B: h.To})
		}
		l := &links[li]
		l.Messages++
		l.Bytes += ht[i].bytes
		l.Hops = append(l.Hops, i)
	}
	rts := roundTrips(p)
	for li := range links {
		l := &links[li]
		var mine []roundTrip
		for _, rt := range rts {
			if key(p.Hops[rt.Out].From, p.Hops[rt.Out].To) == key(l.A, l.B) {
				mine = append(mine, rt)
			}
		}
		l.RoundTrips = mergedCount(mine, ht)
		sum, n := 0.0, 0
		for _, rt := range mine {
			if ht[rt.Out].netKnown && ht[rt.Back].netKnown {
				sum += ht[rt.Out].net + ht[rt.Back].net
				n++
			}
		}
		if n > 0 && sum > 0 {
			l.RTTUS, l.RTTKnown, l.RTTSource = sum/float64(n), true, Estimated
		}
	}
	return links
}

// roundTrips finds, for every hop x (not a RETURN, and not itself the
// answer of an earlier round trip), the earliest hop y below it that goes
// back from x's receiver to x's sender (not a CALL) before any other hop
// reaches x's sender on that branch.
func roundTrips(p *causal.Pattern) []roundTrip {
	kids := p.Children()
	ht := meanTimes(p)
	// Pre-order intervals: y is below x when tin[x] < tin[y] <= tout[x].
	tin, tout := make([]int, len(p.Hops)), make([]int, len(p.Hops))
	clock := 0
	var dfs func(h int)
	dfs = func(h int) {
		tin[h] = clock
		clock++
		for _, c := range kids[h] {
			dfs(c)
		}
		tout[h] = clock - 1
	}
	dfs(0)
	// Candidate answers by direction.
	byDir := map[[2]string][]int{}
	for i := range p.Hops {
		h := &p.Hops[i]
		k := [2]string{h.From, h.To}
		byDir[k] = append(byDir[k], i)
	}
	used := make([]bool, len(p.Hops))
	var out []roundTrip
	for x := range p.Hops {
		hx := &p.Hops[x]
		if hx.Kind == "RETURN" || used[x] {
			continue
		}
		best := -1
		for _, y := range byDir[[2]string{hx.To, hx.From}] {
			if used[y] || tin[y] <= tin[x] || tin[y] > tout[x] || p.Hops[y].Kind == "CALL" {
				continue
			}
			if best >= 0 && ht[y].send >= ht[best].send {
				continue
			}
			// No hop between x and y may reach x's sender first.
			ok := true
			for a := p.Hops[y].Parent; a != nil && *a != x; a = p.Hops[*a].Parent {
				if p.Hops[*a].To == hx.From {
					ok = false
					break
				}
			}
			if ok {
				best = y
			}
		}
		if best >= 0 {
			used[best] = true
			out = append(out, roundTrip{x, best})
		}
	}
	return out
}

// mergedCount counts round trips, merging those whose intervals (send of
// the outgoing message to arrival of the answer) overlap.
func mergedCount(rts []roundTrip, ht []hopMeans) int {
	type iv struct{ a, b float64 }
	ivs := make([]iv, len(rts))
	for i, rt := range rts {
		ivs[i] = iv{ht[rt.Out].send, ht[rt.Back].arrive()}
	}
	slices.SortFunc(ivs, func(x, y iv) int { return cmpF(x.a, y.a) })
	n := 0
	end := math.Inf(-1)
	for _, v := range ivs {
		if v.a >= end {
			n++
			end = v.b
		} else {
			end = math.Max(end, v.b)
		}
	}
	return n
}

// hopMeans are the mean times of one hop of a pattern, in microseconds
// relative to the root's send.
type hopMeans struct {
	// send is the send time, or the receive time when the send was not
	// seen (the aggregator's start_us has the same fallback).
	send float64
	// net is the network delay; netKnown says whether both ends were seen.
	net      float64
	netKnown bool
	bytes    float64
}

// arrive is the arrival time of the hop at its receiver: the send plus the
// network delay, or the send when the network delay is unknown.
func (h hopMeans) arrive() float64 {
	if h.netKnown {
		return h.send + h.net
	}
	return h.send
}

// meanTimes returns the mean times of p's hops.
func meanTimes(p *causal.Pattern) []hopMeans {
	ht := make([]hopMeans, len(p.Hops))
	for i := range p.Hops {
		h := &p.Hops[i]
		if h.Start != nil {
			ht[i].send = h.Start.Mean
		}
		if h.NetDelay != nil {
			ht[i].net, ht[i].netKnown = h.NetDelay.Mean, true
		}
		if h.Bytes != nil {
			ht[i].bytes = h.Bytes.Mean
		}
	}
	return ht
}

// cmpF orders float64s, NaN equal to everything.
func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
