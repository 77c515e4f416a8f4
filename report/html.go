package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
	"github.com/wirepath/wirepath/whatif"
)

// HTMLOptions controls WriteHTML.
type HTMLOptions struct {
	// Top limits the patterns drawn in detail (0 = all); the pattern list
	// always has every pattern.
	Top int
	// Title is the page title ("wirepath report" when empty).
	Title string
	// Trace, the trace the result was inferred from, times and labels
	// the requests of the request list.
	Trace *trace.Trace
	// Frames, the merged capture's frames of the trace's messages, gives
	// each listed request the Wireshark display filter of its frames.
	Frames FrameIndex
	// RequestTotals, for results that hold only the requests the page
	// lists (a windowed run's, kept by SlowestRequests), says how many
	// requests each engine assembled in all, by engine name.
	RequestTotals map[string]int
	// agreement, for several results, is shown at the top.
	agreement *Agreement
}

// WriteHTML writes res as one self-contained HTML page: inline CSS, a few
// lines of inline JavaScript and inline SVG, no fonts, images or scripts
// from elsewhere (its Content-Security-Policy forbids any network access).
// It has the pattern list, sortable by rank, count, expected count and
// latency; for each pattern a WAP5-style timeline, the Project 5 call tree,
// the hop table and the per-link profile; per-node delay histograms (WAP5
// Figure 11); the service map; the capture clocks, the clock offsets, the
// NAT table, the accounting and the warnings.
func WriteHTML(w io.Writer, res *causal.Result, opt HTMLOptions) error {
	return writeHTML(w, []*causal.Result{res}, opt)
}

// writeHTML writes one page for the results of one run: a section per
// engine (pattern list, patterns, service map, node delays), then what
// they share (clocks, offsets, NAT table, accounting, warnings). With one
// result the element ids are unprefixed; with several each engine's ids
// start with its name and a hyphen.
func writeHTML(w io.Writer, rs []*causal.Result, opt HTMLOptions) error {
	head := rs[0]
	d := htmlData{Res: head, Title: opt.Title, Multi: len(rs) > 1, Agreement: htmlAgreementOf(opt.agreement), Page: patternPage}
	if d.Title == "" {
		d.Title = "wirepath report"
	}
	if head.Trace.EndNS > head.Trace.StartNS {
		d.Span = FormatUS(float64(head.Trace.EndNS-head.Trace.StartNS) / 1e3)
		d.StartTime = fmtTime(head.Trace.StartNS)
	}
	for _, res := range rs {
		d.Names = append(d.Names, res.Engine)
		d.Engines = append(d.Engines, htmlEngineOf(res, d.Multi, opt))
	}
	d.shared(rs)
	return pageTmpl.Execute(w, d)
}

// htmlEngineOf is one engine's section: its parameters, its patterns (the
// top ones drawn in detail), its service map and node delays. multi
// prefixes its element ids with the engine's name.
func htmlEngineOf(res *causal.Result, multi bool, opt HTMLOptions) htmlEngine {
	top := opt.Top
	e := htmlEngine{Res: res}
	if multi {
		e.Pre = res.Engine + "-"
	}
	keys := make([]string, 0, len(res.Params))
	for k := range res.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.Params = append(e.Params, fmt.Sprintf("%s=%v", k, res.Params[k]))
	}
	n := len(res.Patterns)
	if top > 0 && top < n {
		n = top
	}
	e.Detailed = n
	e.Types = htmlTypesOf(res, e.Pre)
	e.Trust = trustCaption(res.Engine)
	typeID := map[string]string{}
	for _, t := range e.Types {
		typeID[t.Label] = t.ID
	}
	for i := range res.Patterns {
		hp := htmlPatternOf(&res.Patterns[i], i < n, res.Trace.Links)
		hp.Type = patternType(hp.P)
		hp.TypeID = typeID[hp.Type]
		hp.Search = searchText(hp.P)
		hp.TrustText, hp.TrustV, _ = trust(res.Engine, hp.P)
		hp.Pre = e.Pre
		e.Patterns = append(e.Patterns, hp)
	}
	e.Groups = groupPatterns(e.Patterns, e.Types)
	e.Requests = htmlRequestsOf(res, opt.Trace, opt.Frames, func(rank int) bool { return rank >= 1 && rank <= n }, e.Pre)
	e.Requests.Total = max(e.Requests.Total, opt.RequestTotals[res.Engine])
	e.RequestPage = requestPage
	svg, nodes, edges := serviceMapSVG(res)
	e.Map, e.MapNodes, e.MapEdges = template.HTML(svg), nodes, edges
	for _, nh := range nodeDelays(res) {
		e.Nodes = append(e.Nodes, htmlNode{H: nh, SVG: template.HTML(histSVG(nh)), Mean: FormatUS(nh.Mean), P50: FormatUS(nh.P50), P90: FormatUS(nh.P90)})
	}
	return e
}

// treeModes explains each drawing of a pattern's tree.
var treeModes = map[string]string{
	"calls":    "call tree (Project 5 Figure 8): CALLs paired with their RETURNs",
	"messages": "message tree (Project 5 Figure 8 layout): calls could not be paired, every message is an edge",
	"linear":   "linear path (Project 5 Figure 9): edges carry the delays found, by declining frequency, and their count",
}

// htmlPatternOf is one pattern's entry: its row in the list and, when
// detailed, its timeline, tree, hop table and link profiles.
func htmlPatternOf(p *causal.Pattern, detailed bool, links []trace.Link) htmlPattern {
	hp := htmlPattern{P: p, Latency: -1, LatencyText: "–", Detailed: detailed}
	if p.Latency != nil {
		hp.Latency = p.Latency.Mean
		hp.LatencyText = FormatUS(p.Latency.Mean)
		hp.LatencyP90 = FormatUS(p.Latency.P90)
	}
	switch {
	case !detailed:
	case !p.WellFormed():
		hp.Malformed = true
	default:
		tl := buildTimeline(p, meanTimes(p))
		hp.Timeline = template.HTML(timelineSVG(p, tl))
		nodes, mode := patternTree(p)
		hp.Tree = template.HTML(treeSVG(p, nodes, mode))
		hp.Mode = treeModes[mode]
		for hi := range p.Hops {
			hp.Hops = append(hp.Hops, hopRowOf(&p.Hops[hi], tl))
			hp.HasDelays = hp.HasDelays || len(p.Hops[hi].Delays) > 0
		}
		hp.Links = whatif.LinkProfiles(p)
		whatif.CaptureRTTs(p, hp.Links, links)
	}
	return hp
}

// shared fills in what the results of one run share: the accounting of
// every stage and engine, the warnings, the clocks, offsets and NAT table.
func (d *htmlData) shared(rs []*causal.Result) {
	head := rs[0]
	defer func() { d.AccGroups, d.AccZero = accountingGroups(d.Accounting) }()
	d.Accounting = append([]trace.Count(nil), head.Trace.Accounting...)
	d.Warnings = append([]string(nil), head.Trace.Warnings...)
	for _, res := range rs {
		d.Accounting = append(d.Accounting, res.Accounting...)
		for _, s := range res.Warnings {
			if d.Multi {
				s = res.Engine + ": " + s
			}
			d.Warnings = append(d.Warnings, s)
		}
	}
	for _, c := range head.Trace.Clocks {
		d.Clocks = append(d.Clocks, clockRow{C: c, Text: clockText(c)})
	}
	for _, o := range head.Trace.Offsets {
		r := offsetRow{O: o}
		if o.Known {
			r.Offset = fmtSigned(float64(o.OffsetNS+o.AppliedNS)/1e3) + appliedNote(o)
			r.Unc = FormatUS(float64(o.UncertaintyNS) / 1e3)
		}
		d.Offsets = append(d.Offsets, r)
	}
	for _, a := range head.Trace.Aliases {
		r := aliasRow{A: a}
		if a.FirstNS != 0 {
			r.First = fmtTime(a.FirstNS)
		}
		if a.LastNS != 0 {
			r.Last = fmtTime(a.LastNS)
		}
		d.Aliases = append(d.Aliases, r)
	}
}

type htmlData struct {
	// Res is the first result: its trace is every result's.
	Res        *causal.Result
	Title      string
	Multi      bool
	Names      []string
	Span       string
	StartTime  string
	Engines    []htmlEngine
	Clocks     []clockRow
	Offsets    []offsetRow
	Aliases    []aliasRow
	Accounting []trace.Count
	AccGroups  []accGroup
	AccZero    int
	Warnings   []string
	Agreement  *htmlAgreement
	// Page is how many rows of a pattern list a page shows.
	Page int
}

// htmlEngine is one engine's part of the page.
type htmlEngine struct {
	Res *causal.Result
	// Pre prefixes the element ids of this engine's part.
	Pre      string
	Params   []string
	Detailed int
	Patterns []htmlPattern
	Map      template.HTML
	MapNodes int
	MapEdges int
	Nodes    []htmlNode
	Types    []htmlType
	Trust    string
	// Groups are the detailed patterns by request type.
	Groups []htmlGroup
	// Requests are the slowest requests; RequestPage how many a page of
	// their list shows.
	Requests    htmlRequests
	RequestPage int
}

// htmlGroup is one request type's detailed patterns.
type htmlGroup struct {
	Label, ID string
	Count     int
	Items     []*htmlPattern
	// Head is false for the one group of a result without labels.
	Head bool
}

// groupPatterns gathers the detailed patterns by request type, types in
// their order (most requests first), patterns in rank order within each;
// the first openPatterns of them are drawn open.
func groupPatterns(ps []htmlPattern, types []htmlType) []htmlGroup {
	var out []htmlGroup
	idx := map[string]int{}
	for _, t := range types {
		idx[t.Label] = len(out)
		out = append(out, htmlGroup{Label: t.Label, ID: t.ID, Count: t.Count})
	}
	for i := range ps {
		p := &ps[i]
		if !p.Detailed {
			continue
		}
		k, ok := idx[p.Type]
		if !ok {
			k = len(out)
			idx[p.Type] = k
			out = append(out, htmlGroup{Label: p.Type, ID: fmt.Sprintf("%sgroup-%d", p.Pre, k+1)})
		}
		out[k].Items = append(out[k].Items, p)
	}
	var kept []htmlGroup
	n := 0
	for _, g := range out {
		if len(g.Items) == 0 {
			continue
		}
		for _, p := range g.Items {
			p.Open = n < openPatterns
			n++
		}
		g.Head = g.Label != noLabel || len(types) > 1
		kept = append(kept, g)
	}
	return kept
}

type clockRow struct {
	C    trace.Clock
	Text string
}

type htmlPattern struct {
	P           *causal.Pattern
	Pre         string
	Type        string
	TypeID      string
	Search      string
	TrustText   string
	TrustV      float64
	Open        bool
	Latency     float64
	LatencyText string
	LatencyP90  string
	Detailed    bool
	Malformed   bool
	Timeline    template.HTML
	Tree        template.HTML
	Mode        string
	Hops        []hopRow
	HasDelays   bool
	Links       []whatif.LinkProfile
}

type hopRow struct {
	ID, Parent, From, To, Kind, Label, Start, Node, Net, Bytes, Delays string
	Diamond                                                            bool
}

func hopRowOf(h *causal.Hop, tl *timeline) hopRow {
	r := hopRow{ID: fmt.Sprint(h.ID), Parent: "–", From: h.From, To: hopTarget(h), Kind: h.Kind, Label: h.Label, Node: "–", Net: "–", Bytes: "–"}
	if h.Parent != nil {
		r.Parent = fmt.Sprint(*h.Parent)
	}
	if h.Start != nil {
		r.Start = fmtSigned(h.Start.Mean)
	}
	if sv := &tl.Visits[tl.Sender[h.ID]]; sv.Untraced && h.ID > 0 {
		r.Node = "◇ " + FormatUS(tl.combined(h.ID)) + " with network"
		r.Diamond = true
	} else if h.NodeDelay != nil {
		r.Node = pctText(h.NodeDelay)
	}
	if h.NetDelay != nil {
		r.Net = pctText(h.NetDelay)
	}
	if h.Bytes != nil {
		r.Bytes = fmt.Sprintf("%.0f", h.Bytes.Mean)
	}
	r.Delays = fmtDelays(h.Delays, 6)
	return r
}

func pctText(d *causal.Dist) string {
	return fmt.Sprintf("%s (%s / %s)", FormatUS(d.Mean), FormatUS(d.P50), FormatUS(d.P90))
}

type htmlNode struct {
	H              *nodeHist
	SVG            template.HTML
	Mean, P50, P90 string
}

type offsetRow struct {
	O           trace.Offset
	Offset, Unc string
}

type aliasRow struct {
	A           trace.Alias
	First, Last string
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"us":  FormatUS,
	"num": fmtNum,
	"f2":  func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"sortv": func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-1"
		}
		return fmt.Sprintf("%g", v)
	},
	"rtt": func(l whatif.LinkProfile) string {
		if !l.RTTKnown {
			return "–"
		}
		if l.RTTSource == whatif.Estimated {
			return FormatUS(l.RTTUS) + " (est.)"
		}
		return FormatUS(l.RTTUS)
	},
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="wirepath">
<title>{{.Title}}</title>
<style>
:root { --fg:#1d232b; --muted:#5b6673; --line:#d5dbe3; --node:#cfe3fa; --node-s:#2f6db5; --dia:#ffe2b3; --dia-s:#c07800; --bg:#fff; --alt:#f5f7fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
header { padding: 16px 24px; background: #243447; color: #fff; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .meta { color: #cbd6e2; }
nav { padding: 8px 24px; background: var(--alt); border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 2; }
nav a { margin-right: 16px; color: var(--node-s); text-decoration: none; }
main { padding: 8px 24px 48px; }
h2 { margin-top: 32px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th { white-space: nowrap; background: var(--alt); font-weight: 600; }
th button { font: inherit; border: 0; background: none; cursor: pointer; padding: 0; color: var(--fg); }
th[aria-sort=ascending] button::after { content: " ▲"; }
th[aria-sort=descending] button::after { content: " ▼"; }
code, .sig { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; word-break: break-all; }
section.pattern { margin: 24px 0; padding: 12px 16px; border: 1px solid var(--line); border-radius: 6px; }
section.pattern h3 { margin: 0 0 6px; }
.stats span { margin-right: 18px; }
.figs { overflow-x: auto; }
.caption { color: var(--muted); font-size: 12px; margin: 10px 0 2px; }
svg text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: var(--fg); }
svg .nlabel { font-weight: 600; }
svg .dlabel { fill: #1b4f8a; }
svg .mlabel, svg .elabel { fill: var(--muted); font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
svg .msg line, svg .edge line, svg .edge path { stroke: #6c7a89; stroke-width: 1.3; fill: none; }
svg rect.node, svg ellipse.node { fill: var(--node); stroke: var(--node-s); stroke-width: 1.2; }
svg .root rect.node { fill: #e3e8ee; stroke: #6c7a89; }
svg polygon.diamond { fill: var(--dia); stroke: var(--dia-s); stroke-width: 1.2; }
svg .axis line { stroke: #9aa5b1; }
svg .axis text { fill: var(--muted); font-size: 10px; }
svg .host rect { fill: var(--node); stroke: var(--node-s); }
svg rect.lbg { fill: #fff; fill-opacity: 0.92; stroke: var(--line); stroke-width: 0.8; }
svg .host.untraced rect { fill: var(--dia); stroke: var(--dia-s); stroke-dasharray: 4 3; }
svg rect.bar { fill: var(--node-s); }
svg .note { fill: var(--muted); }
.hists { display: flex; flex-wrap: wrap; gap: 16px; }
.hists figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
.hists figcaption { font-weight: 600; }
.dia { color: var(--dia-s); }
.warn li { color: #8a4b00; }
.empty { color: var(--muted); }
.types td.label, .shares td.what { font-weight: 600; }
.shares { min-width: 720px; }
.shares td.bar { width: 360px; }
.bar { height: 14px; background: var(--alt); border-radius: 3px; overflow: hidden; }
.bar span { display: block; height: 100%; background: var(--node-s); }
.bar span.net { background: #8fa9c6; }
.wf { border-collapse: collapse; min-width: 900px; }
.wf td { padding: 2px 8px; border-bottom: 1px solid var(--alt); white-space: nowrap; }
.wf td.name { max-width: 380px; overflow: hidden; text-overflow: ellipsis; }
.wf td.track { width: 420px; min-width: 420px; position: relative; }
.wf .span { position: relative; height: 12px; background: var(--node-s); border-radius: 2px; min-width: 2px; }
.wf .span.untraced { background: var(--dia-s); }
.wf .lbl { color: var(--muted); }
.controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 8px 0; }
.controls input[type=search] { width: 320px; padding: 4px 6px; }
.pager button { font: inherit; margin: 0 4px; }
details.acc > summary, details.pat > summary { cursor: pointer; font-weight: 600; }
.request-list td { white-space: nowrap; }
.request-list td.flt { max-width: 420px; white-space: normal; }
.request-list code.flt { user-select: all; word-break: normal; }
.request-list td.tid code { white-space: nowrap; }
</style>
</head>
<body>
<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>
<marker id="wp-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#6c7a89"/></marker>
</defs></svg>
<header>
<h1>{{.Title}}</h1>
{{if .Multi}}<div class="meta">engines <b id="engine">{{range $i, $n := .Names}}{{if $i}}, {{end}}{{$n}}{{end}}</b> · {{.Res.Trace.Messages}} messages · {{.Res.Trace.Nodes}} nodes{{with .Span}} · trace {{.}}{{end}}{{with .StartTime}} from {{.}} UTC{{end}}{{with .Res.Trace.Source}} · source <code>{{.}}</code>{{end}}</div>
{{else}}{{with index .Engines 0}}<div class="meta">engine <b id="engine">{{.Res.Engine}}</b> · {{.Res.Trace.Messages}} messages · {{.Res.Trace.Nodes}} nodes · {{len .Res.Patterns}} patterns{{with $.Span}} · trace {{.}}{{end}}{{with $.StartTime}} from {{.}} UTC{{end}}{{with .Res.Trace.Source}} · source <code>{{.}}</code>{{end}}</div>
{{with .Params}}<div class="meta">parameters: {{range .}}<code>{{.}}</code> {{end}}</div>{{end}}{{end}}{{end}}
</header>
<nav>{{if .Multi}}{{if .Agreement}}<a href="#agreement">Agreement</a>{{end}}{{range .Engines}}<a href="#{{.Pre}}requests">{{.Res.Engine}}</a>{{end}}{{else}}<a href="#requests">Requests</a><a href="#time">Where the time goes</a><a href="#service-map">Service map</a><a href="#waterfalls">Typical and slow</a><a href="#slowest">Slowest requests</a><a href="#patterns">Patterns</a><a href="#node-delays">Node delays</a>{{end}}<a href="#offsets">Clocks</a><a href="#nat">NAT</a><a href="#accounting">Accounting</a><a href="#warnings">Warnings{{with .Warnings}} ({{len .}}){{end}}</a></nav>
<main>
{{with .Agreement}}<h2 id="agreement">Agreement between the engines</h2>
<p class="caption">Of the requests two engines both built a tree for (by the request's first message), how many they put in the same tree (the same messages). Where engines disagree, at most one is right: trust a pattern less the fewer engines find its requests.</p>
<table id="agreement-table"><thead><tr><th></th>{{range .Engines}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr><th>{{.Engine}}</th>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
<p>All {{.N}} engines: <b>{{.All}}</b> of the requests they all built in the same tree.{{with .Missing}} Not compared (no instances): {{.}}.{{end}}</p>
{{end}}
{{range .Engines}}{{template "engine" .}}{{end}}
<h2 id="offsets">Clocks</h2>
{{if .Clocks}}<table id="clock-table"><thead><tr><th>clock</th><th>kind</th><th>offset against the reference</th></tr></thead><tbody>
{{range .Clocks}}<tr><td><code>{{.C.Name}}</code></td><td>{{.C.Kind}}</td><td>{{.Text}}</td></tr>
{{end}}</tbody></table><p class="caption">The clocks the timestamps were taken on (capture points, traced hosts), against {{with index .Clocks 0}}{{.C.Reference}}{{end}}: reference time = local time − offset.</p>
{{end}}
<h3>Node clock offsets</h3>
{{if .Offsets}}<table id="offset-table"><thead><tr><th>node</th><th>reference</th><th class="num">offset</th><th class="num">uncertainty</th><th class="num">samples</th></tr></thead><tbody>
{{range .Offsets}}<tr><td>{{.O.Node}}</td><td>{{.O.Reference}}</td>{{if .O.Known}}<td class="num">{{.Offset}}</td><td class="num">± {{.Unc}}</td><td class="num">{{.O.Samples}}</td>{{else}}<td class="num" colspan="3">unknown</td>{{end}}</tr>
{{end}}</tbody></table><p class="caption">reference time = local time − offset</p>
{{else}}<p class="empty">No clock offsets in the result.</p>{{end}}

<h2 id="nat">NAT</h2>
{{if .Aliases}}<table id="nat-table"><thead><tr><th>outside</th><th>inside</th><th>kind</th><th>direction</th><th class="num">matches</th><th class="num">score</th><th>first seen (UTC)</th><th>last seen (UTC)</th></tr></thead><tbody>
{{range .Aliases}}<tr><td><code>{{.A.Outside}}</code></td><td><code>{{.A.Inside}}</code></td><td>{{.A.Kind}}</td><td>{{.A.Direction}}</td><td class="num">{{.A.Matches}}</td><td class="num">{{f2 .A.Score}}</td><td>{{.First}}</td><td>{{.Last}}</td></tr>
{{end}}</tbody></table>
{{else}}<p class="empty">No address translation found.</p>{{end}}

<h2 id="accounting">Accounting</h2>
{{if .Accounting}}<details class="acc" id="accounting-details"><summary>{{len .Accounting}} counters of {{len .AccGroups}} stages{{if .AccZero}}; the {{.AccZero}} that are zero are not shown{{end}}</summary>
<table id="accounting-table"><thead><tr><th>stage</th><th>counter</th><th class="num">value</th></tr></thead><tbody>
{{range .AccGroups}}{{$g := .}}{{range .Counts}}<tr><td>{{.Stage}}</td><td>{{.Name}}</td><td class="num">{{.Value}}</td></tr>
{{end}}{{end}}</tbody></table>
<p class="caption">Every stage's counters balance: what came in equals what went out plus what was dropped, by reason (docs/analyze.md). Zero counters by stage: {{range $i, $g := .AccGroups}}{{if $i}}, {{end}}{{$g.Stage}} {{$g.Zero}}{{end}}.</p>
</details>
{{else}}<p class="empty">No counters in the result.</p>{{end}}

<h2 id="warnings">Warnings</h2>
{{if .Warnings}}<ul class="warn" id="warning-list">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="empty">None.</p>{{end}}
</main>
<script>
(function () {
  "use strict";
  var PAGE = {{.Page}};
  function sortable(table) {
    var body = table.tBodies[0];
    var heads = table.querySelectorAll("th[data-sort]");
    function sortBy(th) {
      var key = th.getAttribute("data-sort");
      var cur = th.getAttribute("aria-sort");
      var asc = cur ? cur !== "ascending" : key === "rank";
      for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("aria-sort");
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = parseFloat(a.getAttribute("data-" + key)), y = parseFloat(b.getAttribute("data-" + key));
        var d = asc ? x - y : y - x;
        return d || parseFloat(a.getAttribute("data-rank")) - parseFloat(b.getAttribute("data-rank"));
      });
      for (var j = 0; j < rows.length; j++) body.appendChild(rows[j]);
      table.dispatchEvent(new Event("wp-sorted"));
    }
    for (var i = 0; i < heads.length; i++) {
      (function (th) {
        th.querySelector("button").addEventListener("click", function () { sortBy(th); });
      })(heads[i]);
    }
  }
  // The pattern list: search, filter by request type, pages of PAGE rows
  // (a result of several engines on a large trace has thousands).
  function pager(ctl) {
    var table = document.getElementById(ctl.getAttribute("data-list"));
    if (!table) return;
    var body = table.tBodies[0], size = +(ctl.getAttribute("data-page") || PAGE), page = 0;
    var search = ctl.querySelector(".search"), sel = ctl.querySelector(".typefilter");
    var info = ctl.querySelector(".pageinfo"), n = 0, noun = ctl.getAttribute("data-noun") || "pattern";
    function apply() {
      var q = search.value.trim().toLowerCase(), ty = sel ? sel.value : "", match = [];
      for (var i = 0; i < body.rows.length; i++) {
        var r = body.rows[i];
        r.hidden = true;
        if ((!ty || r.getAttribute("data-type") === ty) && (!q || r.getAttribute("data-text").indexOf(q) >= 0)) match.push(r);
      }
      n = match.length;
      var pages = Math.max(1, Math.ceil(n / size));
      if (page >= pages) page = pages - 1;
      var lo = page * size, hi = Math.min(n, lo + size);
      for (var j = lo; j < hi; j++) match[j].hidden = false;
      info.textContent = n ? " " + (lo + 1) + "–" + hi + " of " + n + " " : " no " + noun + " matches ";
      table.setAttribute("data-shown", String(hi - lo));
    }
    search.addEventListener("input", function () { page = 0; apply(); });
    if (sel) sel.addEventListener("change", function () { page = 0; apply(); });
    ctl.querySelector(".prev").addEventListener("click", function () { if (page > 0) { page--; apply(); } });
    ctl.querySelector(".next").addEventListener("click", function () { if ((page + 1) * size < n) { page++; apply(); } });
    table.addEventListener("wp-sorted", apply);
    apply();
  }
  var tables = document.querySelectorAll("table.pattern-list, table.request-list");
  for (var t = 0; t < tables.length; t++) sortable(tables[t]);
  var ctls = document.querySelectorAll("div.controls");
  for (var c = 0; c < ctls.length; c++) pager(ctls[c]);
  document.documentElement.setAttribute("data-ready", "1");
})();
</script>
</body>
</html>
{{define "engine"}}{{$e := .}}
<h2 id="{{.Pre}}requests">Requests{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
{{if .Types}}<table id="{{.Pre}}type-table" class="types"><thead><tr><th>request type</th><th class="num">requests</th><th class="num">share</th><th class="num">p50</th><th class="num">p90</th><th class="num">p99</th><th class="num">mean</th><th class="num">max</th><th>patterns</th></tr></thead><tbody>
{{range .Types}}<tr data-type="{{.Label}}"><td class="label"><a href="#{{.ID}}">{{.Label}}</a></td><td class="num">{{.Count}}</td><td class="num">{{.Share}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.Mean}}</td><td class="num">{{.Max}}</td><td class="sig">{{.Ranks}}</td></tr>
{{end}}</tbody></table>
<p class="caption">A request type is the label of a request's first call with the class of its reply (HTTP method and route, RESP or memcached command, DNS query, SQL verb and table), from the protocol decoders; latency is from the request's send to the last event of its path.</p>
<h2 id="{{.Pre}}time">Where the time goes{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
<p class="caption">Mean time per request of each type: at a node (from a message's arrival to the send it caused; dark bars) and on the network between two nodes (light bars). A <span class="dia">◇</span> node was not traced: its time includes the network on both sides.</p>
{{range .Types}}<h3 id="{{.ID}}">{{.Label}} <span class="caption">{{.Count}} requests, mean {{.Mean}}</span></h3>
{{if .Time}}<table class="shares" data-type="{{.Label}}"><tbody>
{{range .Time}}<tr><td class="what">{{.What}}</td><td class="bar"><div class="bar"><span class="{{if .Network}}net{{else}}node{{end}}" style="width:{{printf "%.1f" .Width}}%"></span></div></td><td class="num">{{.US}}</td><td class="num">{{.Pct}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="empty">No delays measured.</p>{{end}}
{{end}}{{else}}<p class="empty">No request labels in the trace: the patterns below are by structure only.</p>{{end}}

<h2 id="{{.Pre}}service-map">Service map{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
<p class="caption">Hosts and the messages between them over all patterns: a line per pair of hosts, labelled with the expected number of messages each way and their mean network delay. Hosts are in columns by their distance from the requests' first sender. Dashed hosts were not traced in some paths.</p>
<div class="figs">{{.Map}}</div>

<h2 id="{{.Pre}}waterfalls">Typical and slow requests{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
<p class="caption">Per request type, the mean request of its most frequent pattern and of its slowest, as spans nested by causality (a call inside the call its sender was serving), each from the node's entry to its leaving, on the request's time axis (as Jaeger draws a trace).</p>
{{range .Types}}{{$t := .}}{{range .Waterfalls}}<div class="figs"><div class="caption"><b>{{$t.Label}}</b> — {{.Title}}, {{.Total}}</div>
<table class="wf" data-rank="{{.Rank}}"><tbody>
{{range .Rows}}<tr><td class="name" style="padding-left:{{.Indent}}px" title="{{.Node}} {{.Label}}">{{if .Untraced}}<span class="dia">◇ </span>{{end}}{{.Node}} <span class="lbl">{{.Label}}</span></td><td class="track"><div class="span{{if .Untraced}} untraced{{end}}" style="left:{{printf "%.2f" .Left}}%;width:{{printf "%.2f" .Width}}%"></div></td><td class="num">{{.Start}}</td><td class="num">{{.Dur}}</td></tr>
{{end}}</tbody></table></div>
{{end}}{{end}}

<h2 id="{{.Pre}}slowest">Slowest requests{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
{{with .Requests}}{{if .Rows}}<p class="caption">{{if lt (len .Rows) .Total}}The {{len .Rows}} slowest of {{.Total}} requests{{else}}{{.Total}} requests{{end}}, slowest first ('wirepath requests' lists them all); search by label or status; click a column to sort. Confidence is the product of the confidences of the links that placed the request's messages (an instance's probability for engines that do not assemble requests). The trace id is the request's trace in the OTLP export (Jaeger: /trace/ID).{{if .Frames}} The filter selects the request's frames in the merged capture: paste it into Wireshark's filter bar, or <code>tshark -r MERGED -Y FILTER</code>.{{else}} Give the merged capture (analyze --pcap-out, or 'wirepath report --pcap') for each request's Wireshark filter.{{end}}</p>
<div class="controls" data-list="{{$e.Pre}}request-list" data-page="{{$e.RequestPage}}" data-noun="request"><input type="search" class="search" placeholder="search requests (label, status)" aria-label="search requests">
<span class="pager"><button type="button" class="prev">◀</button><span class="pageinfo"></span><button type="button" class="next">▶</button></span></div>
<table id="{{$e.Pre}}request-list" class="request-list">
<thead><tr><th class="num">request</th><th>label</th><th>status</th><th class="num" data-sort="start"><button type="button">start</button></th><th class="num" data-sort="latency" aria-sort="descending"><button type="button">latency</button></th><th class="num" data-sort="confidence"><button type="button">confidence</button></th><th class="num">calls</th><th class="num">pattern</th><th>trace id</th>{{if .Frames}}<th>Wireshark filter</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr data-rank="{{.Pos}}" data-request="{{.R.Request}}" data-start="{{.R.StartNS}}" data-latency="{{sortv .R.LatencyUS}}" data-confidence="{{sortv .R.Confidence}}" data-text="{{.Search}}">
<td class="num">{{.R.Request}}</td><td>{{.R.Label}}{{if .R.Background}} <span class="caption">(background)</span>{{end}}</td><td>{{.R.Status}}</td><td class="num">{{.Start}}</td><td class="num">{{.Latency}}</td><td class="num">{{f2 .R.Confidence}}</td><td class="num">{{.R.Calls}}</td><td class="num">{{if .PatternLink}}<a href="#{{.PatternLink}}">#{{.R.Pattern}}</a>{{else if .R.Pattern}}#{{.R.Pattern}}{{else}}–{{end}}</td><td class="tid"><code>{{.R.TraceID}}</code></td>{{if $e.Requests.Frames}}<td class="flt">{{with .R.Filter}}<code class="flt">{{.}}</code>{{else}}<span class="empty">no frames found</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{else}}<p class="empty">{{.Why}}</p>{{end}}{{end}}

<h2 id="{{.Pre}}patterns">Path patterns{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
{{if .Pre}}<p class="caption">{{len .Res.Patterns}} patterns{{with .Params}} · parameters: {{range .}}<code>{{.}}</code> {{end}}{{end}}</p>{{end}}
<p class="caption">Click a column to sort; search by label, node or signature; filter by request type. Expected count is the sum of the instances' probabilities (WAP5 §6.6). {{.Trust}} {{if lt .Detailed (len .Patterns)}}The first {{.Detailed}} patterns are drawn below.{{end}}</p>
<div class="controls" data-list="{{.Pre}}pattern-list"><input type="search" class="search" placeholder="search patterns (label, node, signature)" aria-label="search patterns">
<select class="typefilter" aria-label="request type"><option value="">every request type</option>{{range .Types}}<option value="{{.Label}}">{{.Label}}</option>{{end}}</select>
<span class="pager"><button type="button" class="prev">◀</button><span class="pageinfo"></span><button type="button" class="next">▶</button></span></div>
<table id="{{.Pre}}pattern-list" class="pattern-list">
<thead><tr>
<th class="num" data-sort="rank" aria-sort="ascending"><button type="button">rank</button></th>
<th>request type</th><th>signature</th>
<th class="num" data-sort="count"><button type="button">count</button></th>
<th class="num" data-sort="expected"><button type="button">expected</button></th>
<th class="num" data-sort="maxp"><button type="button">max p</button></th>
<th class="num" data-sort="trust"><button type="button">trust</button></th>
<th class="num" data-sort="latency"><button type="button">latency</button></th>
<th class="num">hops</th>
</tr></thead>
<tbody>
{{range .Patterns}}<tr data-rank="{{.P.Rank}}" data-count="{{.P.Count}}" data-expected="{{sortv .P.Expected}}" data-maxp="{{sortv .P.MaxProbability}}" data-trust="{{sortv .TrustV}}" data-latency="{{sortv .Latency}}" data-type="{{.Type}}" data-text="{{.Search}}">
<td class="num">{{.P.Rank}}</td><td>{{.Type}}</td><td class="sig">{{if .Detailed}}<a href="#{{$e.Pre}}p{{.P.Rank}}">{{.P.Signature}}</a>{{else}}{{.P.Signature}}{{end}}</td>
<td class="num">{{.P.Count}}</td><td class="num">{{num .P.Expected}}</td><td class="num">{{f2 .P.MaxProbability}}</td><td class="num">{{.TrustText}}</td><td class="num">{{.LatencyText}}</td><td class="num">{{len .P.Hops}}</td></tr>
{{end}}</tbody>
</table>
{{range .Groups}}{{if .Head}}<h3 class="group" id="{{.ID}}-patterns">{{.Label}} <span class="caption">{{.Count}} requests; patterns drawn: {{len .Items}}</span></h3>{{end}}
{{range .Items}}{{template "pattern" .}}{{end}}{{end}}

<h2 id="{{.Pre}}node-delays">Node delays{{if .Pre}}: {{.Res.Engine}}{{end}}</h2>
<p class="caption">The distribution of the delay at each node, from a message's arrival to the send it caused, over all patterns (WAP5 Figure 11; bars are the fraction of the node's samples, weighted by instance probability, on a log time axis).</p>
{{if .Nodes}}<table id="{{.Pre}}node-table"><thead><tr><th>node</th><th class="num">mean delay</th><th class="num">p50</th><th class="num">p90</th><th class="num">samples</th></tr></thead><tbody>
{{range .Nodes}}<tr><td>{{.H.Node}}</td><td class="num">{{.Mean}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.H.N}}</td></tr>
{{end}}</tbody></table>
<div class="caption">p50 and p90 are those of the node's busiest hop.</div>
<div class="hists">{{range .Nodes}}<figure><figcaption>{{.H.Node}}</figcaption>{{.SVG}}</figure>{{end}}</div>
{{else}}<p class="empty">No node delays were measured.</p>{{end}}

{{end}}
{{define "pattern"}}{{$p := .}}
<section class="pattern" id="{{.Pre}}p{{.P.Rank}}" data-type="{{.Type}}">
<details class="pat"{{if .Open}} open{{end}}><summary>#{{.P.Rank}} · {{.Type}} · {{.P.Count}} requests · {{.LatencyText}} · {{.TrustText}}</summary>
<div class="sig">{{.P.Signature}}</div>
<div class="stats">{{with .P.Label}}<span>request type <b>{{.}}</b> ({{$p.P.LabelCount}} of {{$p.P.Count}})</span>{{end}}<span>count <b>{{.P.Count}}</b></span><span>expected <b>{{num .P.Expected}}</b></span><span>max p <b>{{f2 .P.MaxProbability}}</b></span><span><b>{{.TrustText}}</b></span><span>latency <b>{{.LatencyText}}</b>{{with .LatencyP90}} (p90 {{.}}){{end}}</span></div>
{{if .Malformed}}<p class="empty">This pattern's hops are not a tree in parent-first order; it cannot be drawn.</p>{{else}}
<div class="caption">Timeline (WAP5 §6.1): time flows left to right; boxes are nodes labelled with their delay, lines are messages labelled with the network delay; a <span class="dia">◇ diamond</span> is a node nobody traced, labelled with its delay plus the network on both sides.</div>
<div class="figs">{{.Timeline}}</div>
<div class="caption">{{.Mode}}. Nodes show the mean latency of the node and its children; edges the delay from entering the parent to entering the child.</div>
<div class="figs">{{.Tree}}</div>
<details><summary>hops and links</summary>
<table class="hops"><thead><tr><th class="num">hop</th><th class="num">parent</th><th>from</th><th>to</th><th>kind</th><th>label</th><th class="num">start</th><th class="num">node delay mean (p50 / p90)</th><th class="num">network mean (p50 / p90)</th><th class="num">bytes</th>{{if .HasDelays}}<th>delays</th>{{end}}</tr></thead><tbody>
{{range .Hops}}<tr><td class="num">{{.ID}}</td><td class="num">{{.Parent}}</td><td>{{.From}}</td><td>{{.To}}</td><td>{{.Kind}}</td><td>{{.Label}}</td><td class="num">{{.Start}}</td><td class="num{{if .Diamond}} dia{{end}}">{{.Node}}</td><td class="num">{{.Net}}</td><td class="num">{{.Bytes}}</td>{{if $p.HasDelays}}<td>{{.Delays}}</td>{{end}}</tr>
{{end}}</tbody></table>
<div class="caption">Per link and request (profile-driven model, NSDI 2005 §2.3): bytes ν both ways, blocking round trips κ, measured round-trip time γ. <code>wirepath whatif</code> predicts the latency for another γ or bandwidth.</div>
<table class="links"><thead><tr><th>link</th><th class="num">messages</th><th class="num">bytes ν</th><th class="num">round trips κ</th><th class="num">RTT γ</th></tr></thead><tbody>
{{range .Links}}<tr><td><code>{{.Link}}</code></td><td class="num">{{.Messages}}</td><td class="num">{{printf "%.0f" .Bytes}}</td><td class="num">{{.RoundTrips}}</td><td class="num">{{rtt .}}</td></tr>
{{end}}</tbody></table>
</details>{{end}}
</details></section>{{end}}`

// openPatterns is how many detailed patterns per engine are drawn open;
// the others are folded (a result of --engine all on a large trace made
// a page 141,000 px tall).
const openPatterns = 5

// patternPage is how many rows of the pattern list a page shows.
const patternPage = 50

// htmlAgreement is the agreement table of several engines.
type htmlAgreement struct {
	Engines []string
	Rows    []agreeRow
	All     string
	N       int
	Missing string
}

type agreeRow struct {
	Engine string
	Cells  []string
}

func htmlAgreementOf(a *Agreement) *htmlAgreement {
	if a == nil {
		return nil
	}
	h := &htmlAgreement{Engines: a.Engines, All: agreeText(a.AllSame, a.All), N: len(a.Engines), Missing: strings.Join(a.Missing, ", ")}
	for i, e := range a.Engines {
		r := agreeRow{Engine: e}
		for j := range a.Engines {
			r.Cells = append(r.Cells, agreeText(a.Same[i][j], a.Both[i][j]))
		}
		h.Rows = append(h.Rows, r)
	}
	return h
}
