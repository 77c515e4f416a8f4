package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wirepath/wirepath/causal"
)

// noLabel names the request type of patterns whose root has no label.
const noLabel = "(no label)"

// reqType is one request type as the reports show it first: its label,
// how many requests, their latency, the patterns that hold them, and
// where their time goes.
type reqType struct {
	Label    string
	Count    int
	Expected float64
	// Share is Count over every request of the result.
	Share float64
	// Latency is the type's latency distribution (nil when unknown).
	Latency *causal.Dist
	// Exact is false when Latency had to be taken from the patterns
	// (results without request types): its mean is exact, its
	// percentiles are the busiest pattern's.
	Exact bool
	// Ranks are the ranks of the type's patterns, in rank order; Main
	// is the busiest of them and Slow the one with the highest mean
	// latency.
	Ranks      []int
	Main, Slow int
	// Time is where the type's time goes, largest first.
	Time []timeShare
}

// timeShare is one place a request's time goes: a node (time at the
// node between a message's arrival and the send it caused) or a network
// hop (send to arrival), as a mean per request of its type.
type timeShare struct {
	// What is the node's name, or "A → B" for a network hop.
	What string
	// Network is true for a network hop.
	Network bool
	// US is the mean time per request, in microseconds.
	US float64
	// Share is US over the sum of every share of the type.
	Share float64
}

// requestTypes returns res's request types, most requests first: the
// result's own (Result.RequestTypes) when it has them, else the patterns
// gathered by label. Each has its time shares (over its patterns, by
// their counts).
func requestTypes(res *causal.Result) []reqType {
	byRank := make(map[int]*causal.Pattern, len(res.Patterns))
	for i := range res.Patterns {
		byRank[res.Patterns[i].Rank] = &res.Patterns[i]
	}
	var out []reqType
	if len(res.RequestTypes) > 0 {
		for _, t := range res.RequestTypes {
			rt := reqType{Label: t.Label, Count: t.Count, Expected: t.Expected, Latency: t.Latency, Exact: true, Ranks: t.Patterns}
			if rt.Label == "" {
				rt.Label = noLabel
			}
			out = append(out, rt)
		}
	} else {
		out = typesFromPatterns(res)
	}
	total := 0
	for _, t := range out {
		total += t.Count
	}
	for i := range out {
		t := &out[i]
		if total > 0 {
			t.Share = float64(t.Count) / float64(total)
		}
		t.Main, t.Slow = pickPatterns(t.Ranks, byRank)
		t.Time = timeShares(t.Ranks, byRank, t.Label)
	}
	return out
}

// typesFromPatterns gathers the patterns by label for a result without
// request types (convolution's, or one written before them).
func typesFromPatterns(res *causal.Result) []reqType {
	idx := map[string]int{}
	var out []reqType
	for i := range res.Patterns {
		p := &res.Patterns[i]
		l := patternType(p)
		k, ok := idx[l]
		if !ok {
			k = len(out)
			idx[l] = k
			out = append(out, reqType{Label: l})
		}
		t := &out[k]
		t.Count += p.Count
		t.Expected += p.Expected
		t.Ranks = append(t.Ranks, p.Rank)
		if p.Latency != nil {
			if t.Latency == nil {
				d := *p.Latency
				t.Latency = &d
			} else {
				mergeMean(t.Latency, p.Latency)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b reqType) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// mergeMean folds d's samples into acc's mean, weight and extremes, and
// keeps the percentiles of the heavier of the two.
func mergeMean(acc, d *causal.Dist) {
	w := acc.Weight + d.Weight
	if w > 0 {
		acc.Mean = (acc.Mean*acc.Weight + d.Mean*d.Weight) / w
	}
	if d.Weight > acc.Weight {
		acc.P50, acc.P90, acc.P99 = d.P50, d.P90, d.P99
	}
	acc.Weight, acc.N = w, acc.N+d.N
	acc.Min, acc.Max = min(acc.Min, d.Min), max(acc.Max, d.Max)
}

// patternType is the request type a pattern is listed under.
func patternType(p *causal.Pattern) string {
	if p.Label == "" {
		return noLabel
	}
	return p.Label
}

// pickPatterns returns the busiest of the patterns ranks (the typical
// request) and the one with the highest mean latency (the slow one).
func pickPatterns(ranks []int, byRank map[int]*causal.Pattern) (main, slow int) {
	bestN, bestLat := -1, -1.0
	for _, r := range ranks {
		p := byRank[r]
		if p == nil {
			continue
		}
		if p.Count > bestN {
			main, bestN = r, p.Count
		}
		if p.Latency != nil && p.Latency.Mean > bestLat {
			slow, bestLat = r, p.Latency.Mean
		}
	}
	if slow == 0 {
		slow = main
	}
	return main, slow
}

// timeShares sums, over the patterns ranks of one type, the time spent
// at each node and on each network hop, weighted by the instances of the
// pattern that carry the type's label (all of them for a pattern of
// another label), as a mean per request, largest first.
func timeShares(ranks []int, byRank map[int]*causal.Pattern, label string) []timeShare {
	sums := map[string]*timeShare{}
	var order []string
	add := func(what string, network bool, v float64) {
		s := sums[what]
		if s == nil {
			s = &timeShare{What: what, Network: network}
			sums[what] = s
			order = append(order, what)
		}
		s.US += v
	}
	n := 0.0
	for _, r := range ranks {
		p := byRank[r]
		if p == nil || !p.WellFormed() {
			continue
		}
		w := float64(p.Count)
		if patternType(p) == label && p.LabelCount > 0 {
			w = float64(p.LabelCount)
		}
		n += w
		tl := buildTimeline(p, meanTimes(p))
		for i := range p.Hops {
			h := &p.Hops[i]
			switch {
			case i > 0 && tl.Visits[tl.Sender[i]].Untraced:
				add(h.From+" ◇ (with network)", false, w*tl.combined(i))
			case h.NodeDelay != nil:
				add(h.From, false, w*h.NodeDelay.Mean)
			}
			if h.NetDelay != nil {
				add(h.From+" → "+h.To, true, w*h.NetDelay.Mean)
			}
		}
	}
	out := make([]timeShare, 0, len(order))
	total := 0.0
	for _, k := range order {
		s := *sums[k]
		if n > 0 {
			s.US /= n
		}
		if s.US > 0 {
			total += s.US
			out = append(out, s)
		}
	}
	for i := range out {
		out[i].Share = out[i].US / total
	}
	slices.SortStableFunc(out, func(a, b timeShare) int { return cmp.Compare(b.US, a.US) })
	return out
}

// trust says how far to trust a pattern's instances, from what the engine
// gives: the assembly engine's confidence (its instances' probabilities
// are its requests' confidences), linking's mean instance probability
// (its own measure, not calibrated), and nothing for engines whose every
// instance has probability 1 (nesting, convolution: they do not estimate
// one).
func trust(engine string, p *causal.Pattern) (text string, v float64, ok bool) {
	if p.Count == 0 {
		return "–", -1, false
	}
	mean := p.Expected / float64(p.Count)
	switch {
	case engine == "assembly":
		return fmt.Sprintf("confidence %.2f", mean), mean, true
	case p.MaxProbability == 1 && mean == 1 && engine != "linking":
		return "confidence not estimated", -1, false
	}
	return fmt.Sprintf("mean p %.2f (max %.2f)", mean, p.MaxProbability), mean, true
}

// trustCaption explains the trust column of an engine's patterns.
func trustCaption(engine string) string {
	switch engine {
	case "assembly":
		return "confidence: the mean confidence of the pattern's requests (the product of their links' probabilities as the assembly engine estimates them, and of the chances that no call given elsewhere was theirs; exact links by request id or thread are near 1; how far timing-only ones hold is measured against the truth in docs/accuracy.md, Calibration)."
	case "linking":
		return "mean p: the mean probability linking gives the pattern's instances (WAP5 §5; the engine's own score, not a calibrated confidence)."
	}
	return "confidence: " + engine + " does not estimate one (every path counts with probability 1); compare engines with --engine all."
}
