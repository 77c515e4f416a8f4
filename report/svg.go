package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// SVG drawings for the HTML report. Every drawing is plain inline SVG with
// classes the stylesheet colours and <title> tooltips; it references the
// arrowhead marker the page defines once (#wp-arrow).

func esc(s string) string { return html.EscapeString(s) }

// textWidth estimates the width of s at the 11px font the drawings use.
func textWidth(s string) float64 { return 6.4 * float64(len([]rune(s))) }

// lanePlacer staggers labels on a lane so that neighbours do not overlap.
type lanePlacer map[[2]int][]float64 // (lane, band) -> right edges per level

// place returns the level (0, 1, ...) at which a label spanning [x0, x1]
// fits on the given lane and band.
func (lp lanePlacer) place(lane, band int, x0, x1 float64) int {
	k := [2]int{lane, band}
	ends := lp[k]
	for lvl := range ends {
		if x0 >= ends[lvl]+4 {
			ends[lvl] = x1
			return lvl
		}
	}
	lp[k] = append(ends, x1)
	return len(ends)
}

// timelineSVG draws a WAP5 §6.1 timeline of one pattern: time flows left to
// right, boxes are node visits labelled with the node delay, lines are
// messages labelled with the network delay, and an untraced node is a
// diamond labelled with its delay combined with the network on both sides.
func timelineSVG(p *causal.Pattern, tl *timeline) string {
	const (
		padL, plotW, padR = 24.0, 780.0, 150.0
		top, laneH        = 44.0, 70.0
	)
	total := tl.Total
	if !(total > 0) {
		total = 1
	}
	x := func(t float64) float64 { return padL + math.Max(0, t)/total*plotW }
	// Each lane is as tall as its labels: node names are stacked above
	// its boxes, delays below, at as many levels as overlapping labels
	// need (lanes of a fixed height let a tall stack reach into the lane
	// above, and the first lane's past the top). A dry run of the
	// placement, which depends on x only, counts the levels.
	lanes := max(tl.Lanes, 1)
	dry := lanePlacer{}
	var scratch strings.Builder
	visitsSVG(&scratch, p, tl, x, func(int) float64 { return 0 }, dry)
	timelineMsgLabels(p, tl, x, dry)
	ys := make([]float64, lanes)
	cur := top - 15.0
	for l := range lanes {
		cur += 15 + 13*float64(max(len(dry[[2]int{l, 0}])-1, 0))
		ys[l] = cur
		cur += 23 + 12*float64(max(len(dry[[2]int{l, 1}])-1, 0)) + 18
	}
	y := func(lane int) float64 {
		if lane < 0 || lane >= lanes {
			return top + float64(lane)*laneH
		}
		return ys[lane]
	}
	width := padL + plotW + padR
	var b strings.Builder
	lp := lanePlacer{}
	// Visits are laid out first so that their labels get the first places;
	// messages are drawn first so that the boxes cover them.
	var vb strings.Builder
	visitsSVG(&vb, p, tl, x, y, lp)
	for i := range p.Hops {
		h := &p.Hops[i]
		ht := tl.Hops[i]
		sv, rv := &tl.Visits[tl.Sender[i]], &tl.Visits[tl.Recv[i]]
		x0, y0 := x(ht.send), y(sv.Lane)
		x1, y1 := x(ht.arrive()), y(rv.Lane)
		if rv.Untraced && !rv.Unseen {
			x1 = x(rv.Start)
		}
		tip := fmt.Sprintf("%s → %s %s", h.From, hopTarget(h), h.Kind)
		if h.NetDelay != nil {
			tip += "\nnetwork " + distText(h.NetDelay)
		} else {
			tip += "\nnetwork not measured (an end was not seen)"
		}
		if h.Bytes != nil {
			tip += fmt.Sprintf("\n%.0f bytes", h.Bytes.Mean)
		}
		fmt.Fprintf(&b, `<g class="msg" data-hop="%d"><title>%s</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" marker-end="url(#wp-arrow)"/>`,
			i, esc(tip), x0, y0, x1, y1)
		if ht.netKnown && !sv.Untraced && !rv.Untraced {
			label := FormatUS(ht.net)
			mx := (x0 + x1) / 2
			w := textWidth(label)
			lane := sv.Lane
			if rv.Lane != sv.Lane {
				lane = rv.Lane
			}
			lvl := lp.place(lane, 1, mx-w/2, mx+w/2)
			fmt.Fprintf(&b, `<text class="mlabel" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, mx, y(lane)+23+float64(lvl)*12, esc(label))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(vb.String())
	// Time axis, below the lowest label.
	low := y(tl.Lanes-1) + 12
	for k, ends := range lp {
		if k[1] == 1 {
			low = math.Max(low, y(k[0])+23+float64(len(ends)-1)*12)
		}
	}
	ay := low + 26
	height := ay + 8
	fmt.Fprintf(&b, `<g class="axis"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, padL, ay-10, padL+plotW, ay-10)
	for _, t := range niceTicks(total, 6) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			x(t), ay-13, x(t), ay-7, x(t), ay+2, esc(FormatUS(t)))
	}
	b.WriteString(`</g></svg>`)
	return fmt.Sprintf(`<svg class="timeline" data-rank="%d" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="timeline of pattern %d">`,
		p.Rank, width, height, width, height, p.Rank) + b.String()
}

// timelineMsgLabels places the network-delay labels of a timeline's
// messages in lp as timelineSVG does, without drawing them.
func timelineMsgLabels(p *causal.Pattern, tl *timeline, x func(float64) float64, lp lanePlacer) {
	for i := range p.Hops {
		ht := tl.Hops[i]
		sv, rv := &tl.Visits[tl.Sender[i]], &tl.Visits[tl.Recv[i]]
		if !ht.netKnown || sv.Untraced || rv.Untraced {
			continue
		}
		x0, x1 := x(ht.send), x(ht.arrive())
		label := FormatUS(ht.net)
		mx, w := (x0+x1)/2, textWidth(label)
		lane := sv.Lane
		if rv.Lane != sv.Lane {
			lane = rv.Lane
		}
		lp.place(lane, 1, mx-w/2, mx+w/2)
	}
}

// visitsSVG draws the visits of a timeline (boxes and diamonds with their
// labels) into b.
func visitsSVG(b *strings.Builder, p *causal.Pattern, tl *timeline, x func(float64) float64, y func(int) float64, lp lanePlacer) {
	for vi := range tl.Visits {
		v := &tl.Visits[vi]
		cy := y(v.Lane)
		x0 := x(v.Start)
		x1 := math.Max(x(v.End), x0+6)
		tip := v.Node
		var delay string
		switch {
		case v.Unseen:
			tip += "\nnot traced: the message was not seen arriving"
			delay = "?"
		case v.Untraced && v.In < 0:
			tip += "\nnot traced: the path starts at the arrival of its first message"
		case v.Untraced:
			delay = FormatUS(v.End - v.Start)
			tip += "\nnot traced: " + delay + " is its delay plus the network on both sides"
		case len(v.Sends) > 0 && v.In >= 0:
			delay = FormatUS(v.Delay)
			tip += fmt.Sprintf("\narrived +%s, node delay %s", FormatUS(v.Start), delay)
			for _, s := range v.Sends {
				if nd := p.Hops[s].NodeDelay; nd != nil {
					tip += fmt.Sprintf("\n→ %s after %s", p.Hops[s].To, distText(nd))
				}
			}
		case v.In < 0:
			tip += "\nsends the first message at +0"
		default:
			tip += fmt.Sprintf("\narrived +%s", FormatUS(v.Start))
		}
		cls := "visit"
		if v.In < 0 {
			cls += " root"
		}
		fmt.Fprintf(b, `<g class="%s" data-node="%s"><title>%s</title>`, cls, esc(v.Node), esc(tip))
		if v.Untraced {
			cx := (x0 + math.Max(x(v.End), x0)) / 2
			half := math.Max((x(v.End)-x0)/2, 10)
			x0 = cx - half
			fmt.Fprintf(b, `<polygon class="diamond" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`,
				cx-half, cy, cx, cy-12, cx+half, cy, cx, cy+12)
		} else {
			fmt.Fprintf(b, `<rect class="node" x="%.1f" y="%.1f" width="%.1f" height="18" rx="2"/>`, x0, cy-9, x1-x0)
		}
		nw := textWidth(v.Node) * 1.2 // bold
		lvl := lp.place(v.Lane, 0, x0, x0+nw)
		fmt.Fprintf(b, `<text class="nlabel" x="%.1f" y="%.1f">%s</text>`, x0, cy-15-float64(lvl)*13, esc(v.Node))
		if delay != "" {
			dl := lp.place(v.Lane, 1, x0, x0+textWidth(delay))
			fmt.Fprintf(b, `<text class="dlabel" x="%.1f" y="%.1f">%s</text>`, x0, cy+23+float64(dl)*12, esc(delay))
		}
		b.WriteString(`</g>`)
	}
}

// niceTicks returns about n round tick values from 0 to max.
func niceTicks(max float64, n int) []float64 {
	if !(max > 0) || math.IsInf(max, 0) {
		return []float64{0}
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for i := 0; i <= 2*n+2; i++ {
		t := float64(i) * step
		if t > max*(1+1e-9) {
			break
		}
		out = append(out, t)
	}
	return out
}

func distText(d *causal.Dist) string {
	return fmt.Sprintf("mean %s (p50 %s, p90 %s, n=%d)", FormatUS(d.Mean), FormatUS(d.P50), FormatUS(d.P90), d.N)
}

// treeSVG draws the Project 5 Figure 8/9 tree of a pattern top-down.
func treeSVG(p *causal.Pattern, nodes []treeNode, mode string) string {
	const levelH, pad = 100.0, 20.0
	// A slot is wide enough that the labels of two sibling edges, which
	// start at their lines' midpoints (half a slot apart), do not meet.
	slotW := 170.0
	for i := range nodes {
		for _, l := range nodes[i].EdgeLines {
			slotW = max(slotW, 2*(textWidth(l)+16))
		}
	}
	// Leaves get consecutive slots; a parent sits over its children.
	xs := make([]float64, len(nodes))
	depth := make([]int, len(nodes))
	slot := 0.0
	maxDepth := 0
	var place func(i, d int)
	place = func(i, d int) {
		depth[i] = d
		maxDepth = max(maxDepth, d)
		if len(nodes[i].Kids) == 0 {
			xs[i] = slot
			slot++
			return
		}
		for _, k := range nodes[i].Kids {
			place(k, d+1)
		}
		xs[i] = (xs[nodes[i].Kids[0]] + xs[nodes[i].Kids[len(nodes[i].Kids)-1]]) / 2
	}
	place(0, 0)
	width := pad*2 + math.Max(slot, 1)*slotW
	height := pad*2 + float64(maxDepth+1)*levelH
	px := func(i int) float64 { return pad + xs[i]*slotW + slotW/2 }
	py := func(i int) float64 { return pad + float64(depth[i])*levelH + 26 }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="calltree" data-rank="%d" data-mode="%s" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="call tree of pattern %d">`,
		p.Rank, mode, width, height, width, height, p.Rank)
	ry := 26.0
	for i := range nodes {
		for _, k := range nodes[i].Kids {
			x0, y0, x1, y1 := px(i), py(i)+ry, px(k), py(k)-ry
			fmt.Fprintf(&b, `<g class="edge"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" marker-end="url(#wp-arrow)"/>`, x0, y0, x1, y1)
			for li, l := range nodes[k].EdgeLines {
				fmt.Fprintf(&b, `<text class="elabel" x="%.1f" y="%.1f">%s</text>`, (x0+x1)/2+6, (y0+y1)/2-4+float64(li)*12, esc(l))
			}
			b.WriteString(`</g>`)
		}
	}
	for i, n := range nodes {
		cx, cy := px(i), py(i)
		lines := append([]string{n.Name}, n.Lines...)
		w := 0.0
		for _, l := range lines {
			w = math.Max(w, textWidth(l))
		}
		rx := math.Max(44, w/2+14)
		rx = math.Min(rx, slotW/2-4)
		b.WriteString(`<g class="tnode">`)
		fmt.Fprintf(&b, `<title>%s</title>`, esc(strings.Join(lines, "\n")))
		if n.Diamond {
			fmt.Fprintf(&b, `<polygon class="diamond" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`, cx-rx, cy, cx, cy-ry-6, cx+rx, cy, cx, cy+ry+6)
		} else {
			fmt.Fprintf(&b, `<ellipse class="node" cx="%.1f" cy="%.1f" rx="%.1f" ry="%.1f"/>`, cx, cy, rx, ry)
		}
		y0 := cy - float64(len(lines)-1)*6.5 + 4
		for li, l := range lines {
			cls := "tlabel"
			if li == 0 {
				cls += " name"
			}
			fmt.Fprintf(&b, `<text class="%s" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, cls, cx, y0+float64(li)*13, esc(l))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// mapEdge is one edge of the service map.
type mapEdge struct {
	From, To string
	Expected float64
	Count    int
	netSum   float64
	netW     float64
}

// nodeHist is the merged node-delay distribution of one node.
type nodeHist struct {
	Node      string
	N         int
	Weight    float64
	Mean      float64
	bins      map[int]float64 // k -> weight, bin [10^(k/5), 10^((k+1)/5))
	underflow float64
	hasHist   bool
	// P50 and P90 are those of the node's heaviest hop (percentiles do not
	// merge); best is that hop's weight.
	P50, P90 float64
	best     float64
}

// nodeDelays merges the node delay distributions of every hop sent by each
// node over all patterns (WAP5 Figure 11, Table 4).
func nodeDelays(res *causal.Result) []*nodeHist {
	by := map[string]*nodeHist{}
	var out []*nodeHist
	for pi := range res.Patterns {
		for hi := range res.Patterns[pi].Hops {
			h := &res.Patterns[pi].Hops[hi]
			d := h.NodeDelay
			if d == nil || d.N == 0 {
				continue
			}
			nh := by[h.From]
			if nh == nil {
				nh = &nodeHist{Node: h.From, bins: map[int]float64{}}
				by[h.From] = nh
				out = append(out, nh)
			}
			if d.Weight > nh.best {
				nh.P50, nh.P90, nh.best = d.P50, d.P90, d.Weight
			}
			nh.Mean = (nh.Mean*nh.Weight + d.Mean*d.Weight) / (nh.Weight + d.Weight)
			nh.N += d.N
			nh.Weight += d.Weight
			if h := d.Hist; h != nil && len(h.Edges) == len(h.Weights)+1 && len(h.Edges) > 0 && len(h.Edges) <= maxHistBins &&
				h.Edges[0] > 0 && !math.IsInf(h.Edges[0], 0) {
				nh.hasHist = true
				k0 := int(math.Round(math.Log10(d.Hist.Edges[0]) * 5))
				for j, w := range d.Hist.Weights {
					nh.bins[k0+j] += w
				}
				nh.underflow += d.Hist.Underflow
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *nodeHist) int { return cmpF(b.Weight, a.Weight) })
	return out
}

// maxHistBins bounds the bins a histogram may have to be drawn: the
// aggregator makes at most 200, five per decade.
const maxHistBins = 1000

// histSVG draws a node's delay histogram on a log time axis, bars as the
// fraction of the node's weight.
func histSVG(nh *nodeHist) string {
	const w, h, padL, padB, padT, padR = 350.0, 130.0, 34.0, 26.0, 8.0, 28.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="hist" data-node="%s" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="node delay histogram of %s">`,
		esc(nh.Node), w, h, w, h, esc(nh.Node))
	if !nh.hasHist || len(nh.bins) == 0 {
		fmt.Fprintf(&b, `<text class="note" x="10" y="40">no histogram in the result</text><text class="note" x="10" y="58">(run the engine with --histograms)</text></svg>`)
		return b.String()
	}
	kmin, kmax := math.MaxInt, math.MinInt
	total := nh.underflow
	for k, v := range nh.bins {
		if v > 0 {
			kmin, kmax = min(kmin, k), max(kmax, k)
		}
		total += v
	}
	if kmin > kmax {
		kmin, kmax = 0, 0
	}
	kmin = 5 * int(math.Floor(float64(kmin)/5))
	kmax = 5*int(math.Ceil(float64(kmax+1)/5)) - 1
	if kmax-kmin > maxHistBins { // merged histograms from far-apart decades
		kmin = kmax - maxHistBins
	}
	nb := kmax - kmin + 1
	plotW, plotH := w-padL-padR, h-padB-padT
	bw := plotW / float64(nb)
	fmt.Fprintf(&b, `<g class="axis"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`,
		padL, padT+plotH, padL+plotW, padT+plotH, padL, padT, padL, padT+plotH)
	for k := kmin; k <= kmax+1; k += 5 {
		xx := padL + float64(k-kmin)*bw
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			xx, padT+plotH, xx, padT+plotH+4, xx, padT+plotH+16, esc(FormatUS(math.Pow(10, float64(k)/5))))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">1</text><text x="%.1f" y="%.1f" text-anchor="end">0</text></g>`,
		padL-4, padT+8, padL-4, padT+plotH)
	for k := kmin; k <= kmax; k++ {
		v := nh.bins[k]
		if v <= 0 || total <= 0 {
			continue
		}
		frac := v / total
		bh := frac * plotH
		lo, hi := math.Pow(10, float64(k)/5), math.Pow(10, float64(k+1)/5)
		fmt.Fprintf(&b, `<rect class="bar" data-k="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s – %s: %.1f%%</title></rect>`,
			k, padL+float64(k-kmin)*bw+0.5, padT+plotH-bh, math.Max(bw-1, 1), bh, esc(FormatUS(lo)), esc(FormatUS(hi)), frac*100)
	}
	b.WriteString(`</svg>`)
	return b.String()
}
