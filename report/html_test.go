package report

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
)

// domState is what the browser test reads back from the rendered page.
type domState struct {
	Ready     string `json:"ready"`
	Rows      []int  `json:"rows"`
	Timelines []struct {
		Rank     int           `json:"rank"`
		Visits   int           `json:"visits"`
		Rects    int           `json:"rects"`
		Diamonds int           `json:"diamonds"`
		Msgs     int           `json:"msgs"`
		Labels   []string      `json:"labels"`
		Nodes    []string      `json:"nodes"`
		Boxes    [][4]float64  `json:"boxes"`
		Dia      [][]float64   `json:"dia"`
		BBox     [2]float64    `json:"bbox"`
		Ticks    []string      `json:"ticks"`
		_        []interface{} // keep the struct open to additions
	} `json:"timelines"`
	Trees []struct {
		Rank     int      `json:"rank"`
		Mode     string   `json:"mode"`
		Ellipses int      `json:"ellipses"`
		Diamonds int      `json:"diamonds"`
		Edges    int      `json:"edges"`
		Labels   []string `json:"labels"`
	} `json:"trees"`
	Hosts    []string `json:"hosts"`
	MapEdges int      `json:"mapEdges"`
	Hists    []struct {
		Node string `json:"node"`
		Bars []int  `json:"bars"`
	} `json:"hists"`
	NAT      int `json:"nat"`
	Offsets  int `json:"offsets"`
	Acc      int `json:"acc"`
	Warnings int `json:"warns"`
}

const domProbe = `(() => {
  const q = (s, r) => Array.from((r || document).querySelectorAll(s));
  const num = (e, a) => parseFloat(e.getAttribute(a));
  return {
    ready: document.documentElement.getAttribute("data-ready"),
    rows: q("#pattern-list tbody tr").map(r => +r.dataset.rank),
    timelines: q("svg.timeline").map(s => { const bb = s.getBBox(); return {
      rank: +s.dataset.rank,
      visits: q("g.visit", s).length,
      rects: q("rect.node", s).length,
      diamonds: q("polygon.diamond", s).length,
      msgs: q("g.msg line", s).length,
      labels: q("text.dlabel", s).map(t => t.textContent),
      nodes: q("g.visit", s).map(g => g.dataset.node),
      boxes: q("g.visit rect.node", s).map(r => [num(r, "x"), num(r, "width"), num(r, "y"), 0]),
      dia: q("polygon.diamond", s).map(p => p.getAttribute("points").split(/[ ,]/).map(parseFloat)),
      bbox: [bb.width, bb.height],
      ticks: q("g.axis text", s).map(t => t.textContent),
    }; }),
    trees: q("svg.calltree").map(s => ({
      rank: +s.dataset.rank, mode: s.dataset.mode,
      ellipses: q("ellipse.node", s).length, diamonds: q("polygon.diamond", s).length,
      edges: q("g.edge", s).length, labels: q("text", s).map(t => t.textContent),
    })),
    hosts: q("svg.service-map g.host").map(g => g.dataset.node),
    mapEdges: q("svg.service-map g.edge").length,
    hists: q("svg.hist").map(s => ({ node: s.dataset.node, bars: q("rect.bar", s).map(r => +r.dataset.k) })),
    nat: q("#nat-table tbody tr").length,
    offsets: q("#offset-table tbody tr").length,
    acc: q("#accounting-table tbody tr").length,
    warns: q("#warning-list li").length,
  };
})()`

// x position of time t (µs) in a timeline whose total is total: the
// constants of timelineSVG.
func timelineX(t, total float64) float64 { return 24 + t/total*780 }

func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	res, _ := shopResult()
	dir := t.TempDir()
	path := filepath.Join(dir, "shop.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, res, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel, pg := openPage(t, path, 90*time.Second)
	defer cancel()
	var st domState
	if err := pg.eval(ctx, domProbe, &st); err != nil {
		t.Fatal(err)
	}
	if st.Ready != "1" {
		t.Errorf("the page script did not finish (data-ready=%q)", st.Ready)
	}
	if !slices.Equal(st.Rows, []int{1, 2, 3}) {
		t.Errorf("pattern list rows %v, want [1 2 3]", st.Rows)
	}
	// Timelines: one per pattern, a visit per hop plus the root sender.
	if len(st.Timelines) != 3 {
		t.Fatalf("%d timelines, want 3", len(st.Timelines))
	}
	want := []struct{ visits, rects, diamonds, msgs int }{{7, 7, 0, 6}, {7, 6, 1, 6}, {3, 3, 0, 2}}
	for i, w := range want {
		g := st.Timelines[i]
		if g.Visits != w.visits || g.Rects != w.rects || g.Diamonds != w.diamonds || g.Msgs != w.msgs {
			t.Errorf("timeline %d: visits %d rects %d diamonds %d msgs %d, want %+v", g.Rank, g.Visits, g.Rects, g.Diamonds, g.Msgs, w)
		}
		if g.BBox[0] < 400 || g.BBox[1] < 40 {
			t.Errorf("timeline %d drew a %vx%v box", g.Rank, g.BBox[0], g.BBox[1])
		}
		if len(g.Ticks) < 3 {
			t.Errorf("timeline %d has %d axis ticks", g.Rank, len(g.Ticks))
		}
	}
	// Time flows left to right in proportion: in the cache-hit pattern the
	// web box runs from the request's arrival (200 µs) to the response's
	// send (700 µs) of a 900 µs path.
	hit := st.Timelines[2]
	if !slices.Equal(hit.Nodes, []string{causal.ClientName, "10.0.0.1", causal.ClientName}) {
		t.Errorf("hit timeline visits %v", hit.Nodes)
	}
	box := hit.Boxes[1]
	total := shopNetUS*2 + shopWebOutUS
	if x, w := timelineX(shopNetUS, total), shopWebOutUS/total*780; math.Abs(box[0]-x) > 0.2 || math.Abs(box[1]-w) > 0.2 {
		t.Errorf("web box at x=%.1f width %.1f, want x=%.1f width %.1f", box[0], box[1], x, w)
	}
	// The untraced DNS server is a diamond spanning web's send to it until
	// web received its answer, labelled with that combined delay.
	lookup := st.Timelines[1]
	if !slices.Contains(lookup.Labels, FormatUS(shopDNSTotalUS)) {
		t.Errorf("lookup timeline labels %v lack the diamond's %s", lookup.Labels, FormatUS(shopDNSTotalUS))
	}
	ltotal := res.Patterns[1].Hops[5].Start.Mean + shopNetUS
	d := lookup.Dia[0] // left, middle, top, bottom, right
	s1 := shopNetUS + shopWebInUS
	if math.Abs(d[0]-timelineX(s1, ltotal)) > 0.2 || math.Abs(d[4]-timelineX(s1+shopDNSTotalUS, ltotal)) > 0.2 {
		t.Errorf("diamond spans x %.1f..%.1f, want %.1f..%.1f", d[0], d[4], timelineX(s1, ltotal), timelineX(s1+shopDNSTotalUS, ltotal))
	}
	// Call trees: CLIENT, web and the services web calls.
	wantTrees := []struct {
		mode                      string
		ellipses, diamonds, edges int
	}{{"calls", 4, 0, 3}, {"calls", 3, 1, 3}, {"calls", 2, 0, 1}}
	for i, w := range wantTrees {
		g := st.Trees[i]
		if g.Mode != w.mode || g.Ellipses != w.ellipses || g.Diamonds != w.diamonds || g.Edges != w.edges {
			t.Errorf("tree %d: mode %s ellipses %d diamonds %d edges %d, want %+v", g.Rank, g.Mode, g.Ellipses, g.Diamonds, g.Edges, w)
		}
	}
	if !slices.Contains(st.Trees[0].Labels, "count 40") {
		t.Errorf("first edge of tree 1 lacks the count: %v", st.Trees[0].Labels)
	}
	slices.Sort(st.Hosts)
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.53", causal.ClientName}; !slices.Equal(st.Hosts, want) {
		t.Errorf("service map hosts %v, want %v", st.Hosts, want)
	}
	// A line per pair of hosts: CLIENT–web, web–cache, web–db, web–dns.
	if st.MapEdges != 4 {
		t.Errorf("service map has %d lines, want 4", st.MapEdges)
	}
	// Node delay histograms for the three traced senders; the database's
	// shows both its fast (1 ms) and its disk (8 ms) mode.
	if len(st.Hists) != 3 {
		t.Errorf("%d histograms, want 3: %+v", len(st.Hists), st.Hists)
	}
	for _, h := range st.Hists {
		if h.Node != "10.0.0.2" {
			continue
		}
		for _, v := range []float64{shopDBFastUS, shopDBSlowUS} {
			if k := int(math.Floor(math.Log10(v) * 5)); !slices.Contains(h.Bars, k) {
				t.Errorf("db histogram bars %v lack bin %d (%v µs)", h.Bars, k, v)
			}
		}
	}
	if st.NAT != 1 || st.Offsets != 3 || st.Acc != 6 || st.Warnings != 2 {
		t.Errorf("tables: nat %d offsets %d accounting %d warnings %d, want 1 3 6 2", st.NAT, st.Offsets, st.Acc, st.Warnings)
	}
	// Sorting by clicking the column headers.
	for _, c := range []struct {
		col  string
		want []int
	}{
		{"latency", []int{2, 1, 3}}, // 4.60, 4.52, 0.90 ms, descending first
		{"latency", []int{3, 1, 2}},
		{"count", []int{1, 2, 3}},
		{"maxp", []int{1, 2, 3}},
		{"rank", []int{1, 2, 3}},
		{"rank", []int{3, 2, 1}},
	} {
		var rows []int
		expr := `document.querySelector("th[data-sort=` + c.col + `] button").click(); Array.from(document.querySelectorAll("#pattern-list tbody tr")).map(r => +r.dataset.rank)`
		if err := pg.eval(ctx, expr, &rows); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rows, c.want) {
			t.Errorf("after clicking %s: rows %v, want %v", c.col, rows, c.want)
		}
	}
	if err := pg.eval(ctx, `document.querySelector("th[data-sort=rank] button").click()`, nil); err != nil {
		t.Fatal(err)
	}
	// No two texts overlap: timelines, call trees, the service map.
	var overlaps []string
	if err := pg.eval(ctx, overlapProbe, &overlaps); err != nil {
		t.Fatal(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("%d texts overlap:\n%s", len(overlaps), strings.Join(overlaps, "\n"))
	}
	pg.drain()
	if len(pg.problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(pg.problems, "\n"))
	}
	if out := os.Getenv("WIREPATH_SCREENSHOT"); out != "" {
		png, err := pg.screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", out)
	}

	// The convolution result: linear paths as Project 5 Figure 9.
	conv := filepath.Join(dir, "conv.html")
	buf.Reset()
	if err := WriteHTML(&buf, convResult(), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conv, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pg.navigate(ctx, "file://"+conv); err != nil {
		t.Fatal(err)
	}
	st = domState{}
	if err := pg.eval(ctx, domProbe, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Trees) != 1 || st.Trees[0].Mode != "linear" || st.Trees[0].Ellipses != 7 || st.Trees[0].Edges != 6 {
		t.Errorf("convolution tree %+v, want a linear path of 7 nodes", st.Trees)
	}
	if len(st.Trees) == 1 && !slices.Contains(st.Trees[0].Labels, FormatUS(shopDBFastUS)+", "+FormatUS(shopDBSlowUS)) {
		t.Errorf("db edge should list its delays by declining frequency: %v", st.Trees[0].Labels)
	}
	pg.drain()
	if len(pg.problems) > 0 {
		t.Errorf("the convolution page reported problems:\n%s", strings.Join(pg.problems, "\n"))
	}
}

// TestHTMLSelfContained checks, without a browser, that the page refers to
// nothing outside itself and forbids network access.
func TestHTMLSelfContained(t *testing.T) {
	res, _ := shopResult()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, res, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, `content="default-src 'none';`) {
		t.Error("no Content-Security-Policy forbidding network access")
	}
	ext := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:|//)|@import|url\((["']?)(https?:|//)`)
	if m := ext.FindString(page); m != "" {
		t.Errorf("page refers to an outside resource: %s", m)
	}
	if strings.Contains(page, "ZgotmplZ") {
		t.Error("html/template rejected a value (ZgotmplZ in the output)")
	}
}

// TestHTMLEscapesNames renders names that look like markup.
func TestHTMLEscapesNames(t *testing.T) {
	res, _ := shopResult()
	for pi := range res.Patterns {
		for hi := range res.Patterns[pi].Hops {
			h := &res.Patterns[pi].Hops[hi]
			if h.To == "10.0.0.1" {
				h.To = `<script>alert(1)</script>`
			}
			if h.From == "10.0.0.1" {
				h.From = `<script>alert(1)</script>`
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, res, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script>alert") {
		t.Error("a node name was written unescaped")
	}
}

// TestBrowserHarnessSeesErrors makes sure the browser test would notice a
// broken page: a script error, a console error and a network request.
func TestBrowserHarnessSeesErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "broken.html")
	page := `<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"><script>console.error("boom"); notDefined();</script></body></html>`
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg, err := b.newPage(ctx, 800, 600)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.navigate(ctx, "file://"+path); err != nil {
		t.Fatal(err)
	}
	if err := pg.eval(ctx, "1", nil); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(pg.problems, "\n")
	for _, want := range []string{"console.error", "notDefined", "network request: http://127.0.0.1:9/x.png"} {
		if !strings.Contains(all, want) {
			t.Errorf("harness missed %q; it saw:\n%s", want, all)
		}
	}
}
