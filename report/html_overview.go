package report

import (
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// htmlType is one request type at the top of an engine's section: its
// figures, where its time goes as bars, and the waterfalls of a typical
// and a slow request.
type htmlType struct {
	Label                    string
	ID                       string
	Count                    int
	Share                    string
	P50, P90, P99, Mean, Max string
	Ranks                    string
	Time                     []htmlShare
	Waterfalls               []htmlWaterfall
}

// htmlShare is one bar of "where the time goes".
type htmlShare struct {
	What    string
	Network bool
	US      string
	Pct     string  // share, as text
	Width   float64 // bar width, % of the widest bar
}

// htmlWaterfall is a Jaeger-style view of one pattern's mean request: a
// row per call (span), nested by causality, on a common time axis.
type htmlWaterfall struct {
	Title string
	Rank  int
	Total string
	Rows  []wfRow
}

// wfRow is one span of a waterfall: the node serving a call, the call's
// label, when it was entered and how long it lasted (per cent of the
// request), and how deep it is nested.
type wfRow struct {
	Node, Label string
	Indent      int
	Left, Width float64
	Start, Dur  string
	Untraced    bool
}

// maxShares is the most bars shown per request type, minShare the
// smallest share shown (the rest are in the type's total).
const (
	maxShares = 8
	minShare  = 0.005
)

// htmlTypesOf returns the request types of res for the page: figures,
// time shares and waterfalls (byRank finds a pattern by rank; pre
// prefixes element ids).
func htmlTypesOf(res *causal.Result, pre string) []htmlType {
	byRank := make(map[int]*causal.Pattern, len(res.Patterns))
	for i := range res.Patterns {
		byRank[res.Patterns[i].Rank] = &res.Patterns[i]
	}
	var out []htmlType
	for i, t := range requestTypes(res) {
		ht := htmlType{Label: t.Label, ID: fmt.Sprintf("%stype-%d", pre, i+1), Count: t.Count, Share: fmt.Sprintf("%.0f%%", 100*t.Share),
			P50: "–", P90: "–", P99: "–", Mean: "–", Max: "–", Ranks: rankList(t.Ranks, 12)}
		if d := t.Latency; d != nil {
			ht.Mean, ht.Max = FormatUS(d.Mean), FormatUS(d.Max)
			if t.Exact {
				ht.P50, ht.P90, ht.P99 = FormatUS(d.P50), FormatUS(d.P90), FormatUS(d.P99)
			}
		}
		widest := 0.0
		for _, s := range t.Time {
			widest = max(widest, s.US)
		}
		for k, s := range t.Time {
			if k == maxShares || s.Share < minShare {
				break
			}
			ht.Time = append(ht.Time, htmlShare{What: s.What, Network: s.Network, US: FormatUS(s.US),
				Pct: fmt.Sprintf("%.0f%%", 100*s.Share), Width: 100 * s.US / widest})
		}
		if p := byRank[t.Main]; p != nil {
			ht.Waterfalls = append(ht.Waterfalls, waterfallOf(p, fmt.Sprintf("typical: pattern #%d, the most frequent of this type (%d requests), mean times", p.Rank, p.Count)))
		}
		if p := byRank[t.Slow]; p != nil && t.Slow != t.Main {
			ht.Waterfalls = append(ht.Waterfalls, waterfallOf(p, fmt.Sprintf("slow: pattern #%d, the slowest of this type (%d requests), mean times", p.Rank, p.Count)))
		}
		out = append(out, ht)
	}
	return out
}

// waterfallOf draws pattern p's mean request as spans: its call tree
// (calls paired with their returns, each nested in the call its sender
// was serving; every message when calls cannot be paired), each span from
// the node's entry to its leaving, on the time axis of the whole request.
func waterfallOf(p *causal.Pattern, title string) htmlWaterfall {
	wf := htmlWaterfall{Title: title, Rank: p.Rank}
	if !p.WellFormed() {
		return wf
	}
	tl := buildTimeline(p, meanTimes(p))
	ct := buildCallTree(p, tl)
	total := ct.Nodes[0].Latency
	for _, n := range ct.Nodes {
		total = max(total, n.Entry+n.Latency)
	}
	if total <= 0 {
		total = 1
	}
	wf.Total = FormatUS(total)
	var walk func(id, depth int)
	walk = func(id, depth int) {
		n := &ct.Nodes[id]
		label := p.Label
		if n.In >= 0 {
			h := &p.Hops[n.In]
			label = h.Label
			if label == "" {
				label = h.Kind + " from " + h.From
			}
		}
		wf.Rows = append(wf.Rows, wfRow{Node: n.Node, Label: label, Indent: min(depth, 12) * 14,
			Left: 100 * n.Entry / total, Width: max(0.3, 100*n.Latency/total),
			Start: fmtSigned(n.Entry), Dur: FormatUS(n.Latency), Untraced: n.Untraced})
		for _, k := range n.Kids {
			walk(k, depth+1)
		}
	}
	walk(0, 0)
	return wf
}

// accGroup is one stage's counters in the folded accounting: the
// non-zero ones, and how many zero ones are hidden.
type accGroup struct {
	Stage  string
	Counts []trace.Count
	Zero   int
}

// accountingGroups groups counters by stage, in order of first
// appearance, leaving the zero ones out (counted).
func accountingGroups(cs []trace.Count) (groups []accGroup, zeros int) {
	idx := map[string]int{}
	for _, c := range cs {
		k, ok := idx[c.Stage]
		if !ok {
			k = len(groups)
			idx[c.Stage] = k
			groups = append(groups, accGroup{Stage: c.Stage})
		}
		if c.Value == 0 {
			groups[k].Zero++
			zeros++
			continue
		}
		groups[k].Counts = append(groups[k].Counts, c)
	}
	return groups, zeros
}

// searchText is what the pattern list's search box matches a row by.
func searchText(p *causal.Pattern) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(p.Label))
	b.WriteByte(' ')
	b.WriteString(strings.ToLower(p.Signature))
	for i := range p.Hops {
		if l := p.Hops[i].Label; l != "" {
			b.WriteByte(' ')
			b.WriteString(strings.ToLower(l))
		}
	}
	return b.String()
}
