package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// The service map's layout (serviceMapSVG) is a layered drawing of its
// own, in the manner of Sugiyama et al.: hosts go in columns by their hop
// distance from the paths' roots; within a column they are ordered by the
// mean row of their neighbours in the columns before and after (a few
// barycentre sweeps, which untangle crossings); the two directions between
// two hosts are one straight line with arrowheads at both ends. Each
// line's label (the messages each way and their mean network delay) is
// centred on its own line, at the first point along it (the middle, then
// further out) where its box overlaps no host and no label placed before
// it; when a line has no such point, the rows are spread further apart
// and the labels placed again. A test draws generated maps and checks
// that no label overlaps another or a host and that every label's centre
// lies on its own line.

// Service map geometry, in px.
const (
	smHostW, smHostH = 120.0, 32.0
	smPad            = 30.0
	smLineH          = 13.0 // one label line
	smLabelPad       = 4.0
	// maxLayoutTries bounds how often the rows and columns are spread
	// for labels that found no free place.
	maxLayoutTries = 10
	// maxHostRunes is the longest host name shown whole in its box.
	maxHostRunes = 17
)

// smRect is an axis-aligned box: centre x, y and half sizes.
type smRect struct{ x, y, hw, hh float64 }

func (a smRect) overlaps(b smRect) bool {
	return math.Abs(a.x-b.x) < a.hw+b.hw && math.Abs(a.y-b.y) < a.hh+b.hh
}

// smPair is the two directions between two hosts, drawn as one line.
type smPair struct {
	A, B   string
	Ways   [2]*mapEdge // A→B, B→A (nil when unseen)
	Lines  []string
	Label  smRect
	Placed bool
}

// smLayout is a laid out service map.
type smLayout struct {
	Pos    map[string][2]float64
	Pairs  []*smPair
	W, H   float64
	Tries  int
	Hosts  []string
	Failed int // labels placed over something (none when every try failed but the last)
	// padX is the left and right margin: a label centred on a line into
	// the first or last column may reach past the hosts.
	padX float64
}

// mapGraph collects the service map's hosts, edges and roots from the
// patterns of res.
func mapGraph(res *causal.Result) (edges map[[2]string]*mapEdge, order [][2]string, roots []string, untraced map[string]bool) {
	edges = map[[2]string]*mapEdge{}
	untraced = map[string]bool{}
	for pi := range res.Patterns {
		p := &res.Patterns[pi]
		if !p.WellFormed() {
			continue
		}
		tl := buildTimeline(p, meanTimes(p))
		roots = append(roots, p.Hops[0].From)
		if tl.Visits[0].Untraced {
			untraced[p.Hops[0].From] = true
		}
		for i := range p.Hops {
			h := &p.Hops[i]
			if tl.Visits[tl.Recv[i]].Untraced {
				untraced[h.To] = true
			}
			k := [2]string{h.From, h.To}
			e := edges[k]
			if e == nil {
				e = &mapEdge{From: h.From, To: h.To}
				edges[k] = e
				order = append(order, k)
			}
			e.Expected += p.Expected
			e.Count += p.Count
			if h.NetDelay != nil {
				e.netSum += h.NetDelay.Mean * h.NetDelay.Weight
				e.netW += h.NetDelay.Weight
			}
		}
	}
	return edges, order, roots, untraced
}

// layoutMap lays the map out: columns, rows, lines and labels.
func layoutMap(edges map[[2]string]*mapEdge, order [][2]string, roots []string) *smLayout {
	cols := mapColumns(edges, order, roots)
	pairs := mapPairs(edges, order)
	l := &smLayout{}
	widest := 0.0
	for _, pr := range pairs {
		for _, s := range pr.Lines {
			widest = max(widest, textWidth(s))
		}
	}
	colW := max(240, smHostW+widest+40)
	rowH := 80.0
	l.padX = smPad + max(0, widest/2+smLabelPad-smHostW/2)
	for l.Tries = 1; ; l.Tries++ {
		l.place(cols, colW, rowH)
		l.Pairs = pairs
		if l.labels() == 0 || l.Tries == maxLayoutTries {
			break
		}
		rowH *= 1.4
		colW *= 1.25
	}
	return l
}

// mapColumns returns the hosts by column (hop distance from the nearest
// root), each column ordered by barycentre sweeps.
func mapColumns(edges map[[2]string]*mapEdge, order [][2]string, roots []string) [][]string {
	adj := map[string][]string{}
	for _, k := range order {
		adj[k[0]] = append(adj[k[0]], k[1])
	}
	depth := map[string]int{}
	queue := []string{}
	for _, r := range roots {
		if _, ok := depth[r]; !ok {
			depth[r] = 0
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range adj[n] {
			if _, ok := depth[m]; !ok {
				depth[m] = depth[n] + 1
				queue = append(queue, m)
			}
		}
	}
	var cols [][]string
	for n, d := range depth {
		for len(cols) <= d {
			cols = append(cols, nil)
		}
		cols[d] = append(cols[d], n)
	}
	for _, c := range cols {
		slices.Sort(c)
	}
	nb := map[string][]string{}
	for k := range edges {
		if k[0] != k[1] {
			nb[k[0]] = append(nb[k[0]], k[1])
			nb[k[1]] = append(nb[k[1]], k[0])
		}
	}
	row := map[string]float64{}
	setRows := func() {
		for _, c := range cols {
			for i, n := range c {
				row[n] = float64(i) - float64(len(c)-1)/2
			}
		}
	}
	setRows()
	for sweep := 0; sweep < 4; sweep++ {
		for _, c := range cols {
			bary := map[string]float64{}
			for _, n := range c {
				sum, k := 0.0, 0
				for _, m := range nb[n] {
					if depth[m] != depth[n] {
						sum += row[m]
						k++
					}
				}
				bary[n] = row[n]
				if k > 0 {
					bary[n] = sum / float64(k)
				}
			}
			slices.SortStableFunc(c, func(a, b string) int {
				if d := cmp.Compare(bary[a], bary[b]); d != 0 {
					return d
				}
				return strings.Compare(a, b)
			})
			setRows()
		}
	}
	return cols
}

// mapPairs merges the two directions between two hosts into one pair,
// in the order the edges were first seen, with its label's lines.
func mapPairs(edges map[[2]string]*mapEdge, order [][2]string) []*smPair {
	idx := map[[2]string]*smPair{}
	var out []*smPair
	for _, k := range order {
		a, b := k[0], k[1]
		way := 0
		if b < a {
			a, b, way = b, a, 1
		}
		pr := idx[[2]string{a, b}]
		if pr == nil {
			pr = &smPair{A: a, B: b}
			idx[[2]string{a, b}] = pr
			out = append(out, pr)
		}
		pr.Ways[way] = edges[k]
	}
	for _, pr := range out {
		for _, e := range pr.Ways {
			if e == nil {
				continue
			}
			s := fmt.Sprintf("%s → %s: %s msgs", e.From, e.To, fmtNum(e.Expected))
			if e.netW > 0 {
				s += " · " + FormatUS(e.netSum/e.netW)
			}
			pr.Lines = append(pr.Lines, s)
		}
	}
	return out
}

// place sets the hosts' positions: column c at x, rows centred.
func (l *smLayout) place(cols [][]string, colW, rowH float64) {
	l.Pos = map[string][2]float64{}
	l.Hosts = l.Hosts[:0]
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	l.H = 2*smPad + smHostH + float64(max(rows-1, 0))*rowH + 6*smLineH
	l.W = 2*l.padX + smHostW + float64(max(len(cols)-1, 0))*colW
	for ci, c := range cols {
		for ri, n := range c {
			y := l.H/2 + (float64(ri)-float64(len(c)-1)/2)*rowH
			l.Pos[n] = [2]float64{l.padX + smHostW/2 + float64(ci)*colW, y}
			l.Hosts = append(l.Hosts, n)
		}
	}
	slices.Sort(l.Hosts)
}

// labels places every pair's label on its line and returns how many
// found no free place (those keep the middle of their line).
func (l *smLayout) labels() int {
	var taken []smRect
	for _, n := range l.Hosts {
		q := l.Pos[n]
		taken = append(taken, smRect{q[0], q[1], smHostW/2 + 2, smHostH/2 + 2})
	}
	failed := 0
	for _, pr := range l.Pairs {
		w := 0.0
		for _, s := range pr.Lines {
			w = max(w, textWidth(s))
		}
		hw, hh := w/2+smLabelPad, float64(len(pr.Lines))*smLineH/2+smLabelPad/2
		a, b := l.Pos[pr.A], l.Pos[pr.B]
		pr.Placed = false
		if pr.A == pr.B {
			pr.Label = smRect{a[0], a[1] - smHostH/2 - hh - 6, hw, hh}
		} else {
			for _, t := range labelSpots {
				r := smRect{a[0] + t*(b[0]-a[0]), a[1] + t*(b[1]-a[1]), hw, hh}
				if !slices.ContainsFunc(taken, r.overlaps) && r.x-hw >= 0 && r.x+hw <= l.W && r.y-hh >= 0 && r.y+hh <= l.H {
					pr.Label, pr.Placed = r, true
					break
				}
			}
			if !pr.Placed {
				pr.Label = smRect{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, hw, hh}
			}
		}
		if !pr.Placed && pr.A != pr.B {
			failed++
		}
		taken = append(taken, pr.Label)
	}
	l.Failed = failed
	return failed
}

// labelSpots are the points along its line where a label is tried, the
// middle first.
var labelSpots = func() []float64 {
	out := []float64{0.5}
	for d := 0.05; d < 0.36; d += 0.05 {
		out = append(out, 0.5-d, 0.5+d)
	}
	return out
}()

// serviceMapSVG draws the hosts and the lines between them over all
// patterns (the layout above), each line labelled with the expected
// number of messages each way and their mean network delay. It returns
// the SVG, the number of hosts and the number of lines.
func serviceMapSVG(res *causal.Result) (string, int, int) {
	edges, order, roots, untraced := mapGraph(res)
	l := layoutMap(edges, order, roots)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="service-map" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="service map">`, l.W, l.H, l.W, l.H)
	for _, pr := range l.Pairs {
		a, c := l.Pos[pr.A], l.Pos[pr.B]
		tip := strings.Join(pr.Lines, "\n")
		fmt.Fprintf(&b, `<g class="edge" data-from="%s" data-to="%s"><title>%s</title>`, esc(pr.A), esc(pr.B), esc(tip))
		if pr.A == pr.B {
			fmt.Fprintf(&b, `<path d="M%.1f,%.1f c40,-50 80,-10 0,16" marker-end="url(#wp-arrow)"/>`, a[0]+30, a[1]-8)
		} else {
			sx, sy := hostBorder(a, c)
			ex, ey := hostBorder(c, a)
			start, end := "", ""
			if pr.Ways[1] != nil {
				start = ` marker-start="url(#wp-arrow)"`
			}
			if pr.Ways[0] != nil {
				end = ` marker-end="url(#wp-arrow)"`
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"%s%s/>`, sx, sy, ex, ey, start, end)
		}
		r := pr.Label
		fmt.Fprintf(&b, `<rect class="lbg" x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3"/>`, r.x-r.hw, r.y-r.hh, 2*r.hw, 2*r.hh)
		for i, s := range pr.Lines {
			y := r.y - r.hh + smLabelPad/2 + smLineH*float64(i) + 10
			fmt.Fprintf(&b, `<text class="elabel" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, r.x, y, esc(s))
		}
		b.WriteString(`</g>`)
	}
	for _, n := range l.Hosts {
		q := l.Pos[n]
		cls := "host"
		tip := n
		if untraced[n] {
			cls += " untraced"
			tip += "\nnot traced in some paths (diamonds)"
		}
		name := n
		if textWidth(name) > smHostW-8 {
			name = string([]rune(name)[:maxHostRunes-1]) + "…"
		}
		fmt.Fprintf(&b, `<g class="%s" data-node="%s"><title>%s</title><rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" rx="8"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`,
			cls, esc(n), esc(tip), q[0]-smHostW/2, q[1]-smHostH/2, smHostW, smHostH, q[0], q[1]+4, esc(name))
	}
	b.WriteString(`</svg>`)
	return b.String(), len(l.Hosts), len(l.Pairs)
}

// hostBorder is where the line from host box a towards c leaves a.
func hostBorder(a, c [2]float64) (float64, float64) {
	dx, dy := c[0]-a[0], c[1]-a[1]
	l := math.Hypot(dx, dy)
	if l == 0 {
		return a[0], a[1]
	}
	ux, uy := dx/l, dy/l
	t := math.Min((smHostW/2+3)/math.Max(math.Abs(ux), 1e-9), (smHostH/2+3)/math.Max(math.Abs(uy), 1e-9))
	return a[0] + ux*t, a[1] + uy*t
}
