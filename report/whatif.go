package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/causal"
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
	// RTTUS is γ, the measured mean round-trip time of the link's round
	// trips in µs (the network delays of both messages); RTTKnown is false
	// when no round trip had both network delays measured.
	RTTUS    float64 `json:"rtt_us"`
	RTTKnown bool    `json:"rtt_known"`
	// Hops are the pattern's hops on the link.
	Hops []int `json:"hops"`
}

// roundTrip is one blocking round trip: hop Out one way, hop Back the first
// causally following hop the other way.
type roundTrip struct{ Out, Back int }

// LinkProfiles returns the link profile of pattern p, links in order of
// their first hop. It returns nil for a malformed pattern.
func LinkProfiles(p *causal.Pattern) []LinkProfile {
	if !validPattern(p) {
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
		if n > 0 {
			l.RTTUS, l.RTTKnown = sum/float64(n), true
		}
	}
	return links
}

// roundTrips finds, for every hop x (not a RETURN, and not itself the
// answer of an earlier round trip), the earliest hop y below it that goes
// back from x's receiver to x's sender (not a CALL) before any other hop
// reaches x's sender on that branch.
func roundTrips(p *causal.Pattern) []roundTrip {
	kids := children(p)
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
func mergedCount(rts []roundTrip, ht []hopTimes) int {
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

// WhatIf describes a change to one link.
type WhatIf struct {
	// Link names the link as "A->B"; either direction matches.
	Link string
	// RTTUS is the new round-trip time in µs; NaN leaves it unchanged.
	RTTUS float64
	// CurrentRTTUS overrides the measured round-trip time; NaN uses the
	// measurement.
	CurrentRTTUS float64
	// Bandwidth is the new bandwidth in bits per second; NaN leaves it
	// unchanged.
	Bandwidth float64
	// CurrentBandwidth is the link's bandwidth now, in bits per second,
	// needed when Bandwidth is set.
	CurrentBandwidth float64
}

// NoChange returns a WhatIf on link that changes nothing yet.
func NoChange(link string) WhatIf {
	return WhatIf{Link: link, RTTUS: math.NaN(), CurrentRTTUS: math.NaN(), Bandwidth: math.NaN(), CurrentBandwidth: DefaultBandwidth}
}

// DefaultBandwidth is the current bandwidth assumed when none is given:
// 1 Gbit/s, a common LAN link.
const DefaultBandwidth = 1e9

// Prediction is the predicted latency of one pattern after a WhatIf.
type Prediction struct {
	Rank    int         `json:"rank"`
	Pattern string      `json:"signature"`
	Profile LinkProfile `json:"link_profile"`
	// RTTUS and NewRTTUS are γ before and after, µs.
	RTTUS    float64 `json:"rtt_us"`
	NewRTTUS float64 `json:"new_rtt_us"`
	// Bandwidth and NewBandwidth are ω before and after, bits per second.
	Bandwidth    float64 `json:"bandwidth_bps"`
	NewBandwidth float64 `json:"new_bandwidth_bps"`
	// LinkDelayUS and NewLinkDelayUS are the link's term of Γ, κ·γ + ν/ω,
	// before and after, µs.
	LinkDelayUS    float64 `json:"link_delay_us"`
	NewLinkDelayUS float64 `json:"new_link_delay_us"`
	// LatencyUS is the pattern's measured mean latency. ModelUS adds the
	// change of the link's term of Γ to it (the paper's model, which sums
	// round trips as if they were sequential).
	LatencyUS float64 `json:"latency_us"`
	ModelUS   float64 `json:"predicted_latency_us"`
	// CriticalPathUS instead replays the pattern's mean timeline with every
	// message on the link slowed by half the RTT change plus its own
	// transmission-time change, so parallel branches off the critical path
	// do not add up.
	CriticalPathUS float64 `json:"critical_path_latency_us"`
}

// ErrNoLink is returned by Predict when the pattern does not use the link.
var ErrNoLink = errors.New("pattern does not use the link")

// ErrRTTUnknown is returned by Predict for an RTT change on a link whose
// round-trip time was not measured and not given.
var ErrRTTUnknown = errors.New("round-trip time not measured (an end was not seen); give the current RTT")

// Predict predicts the mean latency of pattern p after the change w.
func Predict(p *causal.Pattern, w WhatIf) (Prediction, error) {
	a, b, err := ParseLink(w.Link)
	if err != nil {
		return Prediction{}, err
	}
	var prof *LinkProfile
	profiles := LinkProfiles(p)
	for i := range profiles {
		l := &profiles[i]
		if l.A == a && l.B == b || l.A == b && l.B == a {
			prof = l
		}
	}
	if prof == nil {
		return Prediction{}, fmt.Errorf("%s: %w", w.Link, ErrNoLink)
	}
	pr := Prediction{Rank: p.Rank, Pattern: p.Signature, Profile: *prof}
	pr.RTTUS = prof.RTTUS
	if !math.IsNaN(w.CurrentRTTUS) {
		pr.RTTUS = w.CurrentRTTUS
	} else if !prof.RTTKnown && !math.IsNaN(w.RTTUS) {
		return Prediction{}, fmt.Errorf("%s in pattern #%d: %w", w.Link, p.Rank, ErrRTTUnknown)
	}
	pr.NewRTTUS = pr.RTTUS
	if !math.IsNaN(w.RTTUS) {
		pr.NewRTTUS = w.RTTUS
	}
	pr.Bandwidth = w.CurrentBandwidth
	if !(pr.Bandwidth > 0) {
		pr.Bandwidth = DefaultBandwidth
	}
	pr.NewBandwidth = pr.Bandwidth
	if !math.IsNaN(w.Bandwidth) {
		if !(w.Bandwidth > 0) {
			return Prediction{}, fmt.Errorf("bandwidth must be positive")
		}
		pr.NewBandwidth = w.Bandwidth
	}
	// Γ_l = κ·γ + ν/ω, with ν in bytes and ω in bits per second.
	term := func(rtt, bw float64) float64 {
		return float64(prof.RoundTrips)*rtt + prof.Bytes*8/bw*1e6
	}
	pr.LinkDelayUS = term(pr.RTTUS, pr.Bandwidth)
	pr.NewLinkDelayUS = term(pr.NewRTTUS, pr.NewBandwidth)
	ht := meanTimes(p)
	pr.LatencyUS = replay(p, ht, nil)
	if p.Latency != nil {
		pr.LatencyUS = p.Latency.Mean
	}
	pr.ModelUS = pr.LatencyUS + pr.NewLinkDelayUS - pr.LinkDelayUS
	// Per-message change of the one-way delay.
	delta := make([]float64, len(p.Hops))
	for _, h := range prof.Hops {
		delta[h] = (pr.NewRTTUS-pr.RTTUS)/2 + ht[h].bytes*8*(1/pr.NewBandwidth-1/pr.Bandwidth)*1e6
	}
	pr.CriticalPathUS = pr.LatencyUS + replay(p, ht, delta) - replay(p, ht, nil)
	return pr, nil
}

// replay recomputes the end of the pattern's mean timeline with the
// network delay of every hop h increased by delta[h] (nil: unchanged): each
// hop is sent as long after its parent's arrival as it was measured to be.
func replay(p *causal.Pattern, ht []hopTimes, delta []float64) float64 {
	arrive := make([]float64, len(p.Hops))
	end := 0.0
	for i := range p.Hops {
		send := ht[i].send
		if par := p.Hops[i].Parent; par != nil {
			send = arrive[*par] + (ht[i].send - ht[*par].arrive())
		}
		arrive[i] = ht[i].arrive() - ht[i].send + send
		if delta != nil {
			arrive[i] += delta[i]
		}
		end = math.Max(end, math.Max(send, arrive[i]))
	}
	return end
}

// ParseLink splits "A->B" (names in the signature grammar) into A and B.
func ParseLink(s string) (a, b string, err error) {
	n, err := causal.ParseSignature(s)
	if err != nil || len(n.Children) > 0 {
		return "", "", fmt.Errorf("bad link %q: want FROM->TO", s)
	}
	return n.From, n.To, nil
}

// ParseBandwidth parses a bandwidth such as "100Mbit/s", "1Gbps", "12.5MB/s"
// or "1e9" (bits per second) and returns bits per second. Prefixes are
// decimal (k = 1000); "B" means bytes, "bit" or "b" bits.
func ParseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == 'e' && i > 0 && i+1 < len(t) && (t[i+1] >= '0' && t[i+1] <= '9' || t[i+1] == '-' || t[i+1] == '+') || (t[i] == '-' || t[i] == '+') && i > 0 && t[i-1] == 'e') {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad bandwidth %q: want a positive number and a unit such as 100Mbit/s or 10MB/s", s)
	}
	unit := strings.TrimSpace(t[i:])
	unit = strings.TrimSuffix(unit, "/s")
	unit = strings.TrimSuffix(unit, "ps")
	mult := 1.0
	if len(unit) > 0 {
		switch unit[0] {
		case 'k', 'K':
			mult, unit = 1e3, unit[1:]
		case 'M':
			mult, unit = 1e6, unit[1:]
		case 'G':
			mult, unit = 1e9, unit[1:]
		case 'T':
			mult, unit = 1e12, unit[1:]
		}
	}
	switch unit {
	case "", "b", "bit", "bits":
	case "B", "byte", "bytes":
		mult *= 8
	default:
		return 0, fmt.Errorf("bad bandwidth %q: unknown unit (use bit/s, kbit/s, Mbit/s, Gbit/s, B/s, kB/s, MB/s, GB/s or bps, Mbps, Gbps)", s)
	}
	return v * mult, nil
}

// FormatBandwidth formats bits per second with a readable unit.
func FormatBandwidth(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'g', 4, 64) + " Gbit/s"
	case bps >= 1e6:
		return strconv.FormatFloat(bps/1e6, 'g', 4, 64) + " Mbit/s"
	case bps >= 1e3:
		return strconv.FormatFloat(bps/1e3, 'g', 4, 64) + " kbit/s"
	}
	return strconv.FormatFloat(bps, 'g', 4, 64) + " bit/s"
}
