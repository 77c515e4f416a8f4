package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// overlapProbe lists every pair of visible SVG texts whose boxes (from
// the DOM, as drawn) overlap by more than a pixel both ways, and every
// host box of the service map a label overlaps.
const overlapProbe = `(() => {
  const out = [];
  const vis = r => r.width > 0 && r.height > 0;
  const over = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  for (const svg of document.querySelectorAll("svg")) {
    const ts = Array.from(svg.querySelectorAll("text")).map(t => [t.textContent, t.getBoundingClientRect()]).filter(x => vis(x[1]));
    for (let i = 0; i < ts.length; i++) for (let j = i + 1; j < ts.length; j++)
      if (over(ts[i][1], ts[j][1])) out.push((svg.getAttribute("class") || "svg") + " " + (svg.dataset.rank || "") + ": " + ts[i][0] + " | " + ts[j][0]);
  }
  for (const svg of document.querySelectorAll("svg.service-map")) {
    const hosts = Array.from(svg.querySelectorAll("g.host rect")).map(r => r.getBoundingClientRect());
    for (const t of svg.querySelectorAll("g.edge text")) {
      const r = t.getBoundingClientRect();
      if (hosts.some(h => over(h, r))) out.push("label on a host: " + t.textContent);
    }
  }
  return out;
})()`

// overviewState is what TestHTMLOverviewInChromium reads back.
type overviewState struct {
	Types      []string `json:"types"`
	Counts     []int    `json:"counts"`
	Shares     []int    `json:"shares"`
	Waterfalls []int    `json:"waterfalls"`
	WfNames    []string `json:"wfNames"`
	FirstH2    string   `json:"firstH2"`
	Order      []string `json:"order"`
	AccRows    int      `json:"accRows"`
	AccOpen    bool     `json:"accOpen"`
}

const overviewProbe = `(() => {
  const q = (s, r) => Array.from((r || document).querySelectorAll(s));
  return {
    types: q("#type-table tbody tr").map(r => r.dataset.type),
    counts: q("#type-table tbody tr").map(r => +r.cells[1].textContent),
    shares: q("table.shares").map(t => t.rows.length),
    waterfalls: q("table.wf").map(t => +t.dataset.rank),
    wfNames: q("table.wf").length ? q("tr td.name", q("table.wf")[0]).map(td => td.textContent.trim()) : [],
    firstH2: q("main h2")[0].id,
    order: q("main h2").map(h => h.id),
    accRows: q("#accounting-table tbody tr").length,
    accOpen: document.getElementById("accounting-details").open,
  };
})()`

// shownRows is the ranks of the pattern list's visible rows.
const shownRows = `Array.from(document.querySelectorAll("#pattern-list tbody tr")).filter(r => !r.hidden).map(r => +r.dataset.rank)`

// TestHTMLOverviewInChromium loads the report of a labelled system (page
// and search requests, a cache, a database and a DNS server nobody
// traced) in headless Chromium and checks that the page answers first:
// the request types with their counts at the top, where their time goes,
// the service map, a waterfall per type; then that the pattern list's
// search, type filter and pages work on a result of 120 patterns, that
// the accounting is folded with its zero counters hidden, and that no two
// texts overlap anywhere on the page (bounding boxes from the DOM).
func TestHTMLOverviewInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	res := labelledShopResult()
	// 120 patterns: the shop's three and copies, for the list's pages.
	for len(res.Patterns) < 120 {
		p := res.Patterns[len(res.Patterns)%3]
		p.Rank = len(res.Patterns) + 1
		p.Signature = fmt.Sprintf("%s(copy %d)", p.Signature, p.Rank)
		res.Patterns = append(res.Patterns, p)
	}
	res.Accounting = append(res.Accounting, trace.Count{Stage: "linking", Name: "nothing_here", Value: 0})
	dir := t.TempDir()
	path := filepath.Join(dir, "overview.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, res, HTMLOptions{Top: 3}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel, pg := openPage(t, path, 90*time.Second)
	defer cancel()
	var st overviewState
	if err := pg.eval(ctx, overviewProbe, &st); err != nil {
		t.Fatal(err)
	}
	// The answers first: requests, where the time goes, the service map,
	// the waterfalls, the slowest requests, then the patterns.
	if want := []string{"requests", "time", "service-map", "waterfalls", "slowest", "patterns"}; len(st.Order) < 6 || !slices.Equal(st.Order[:6], want) {
		t.Errorf("sections %v, want %v first", st.Order, want)
	}
	// 40 page and 10 hit requests are GET /page/{id}; 30 lookups GET
	// /search, 6 of them answered 404.
	wantTypes := []string{"GET /page/{id} 2xx", "GET /search 2xx", "GET /search 4xx"}
	if !slices.Equal(st.Types, wantTypes) || !slices.Equal(st.Counts, []int{shopPageN + shopHitN, shopLookupN - shopLookupN/5, shopLookupN / 5}) {
		t.Errorf("request types %v %v, want %v", st.Types, st.Counts, wantTypes)
	}
	if len(st.Shares) != 3 || st.Shares[0] < 2 {
		t.Errorf("time shares per type %v", st.Shares)
	}
	// A waterfall per type at least (a typical and a slow one where the
	// slowest pattern is not the most frequent).
	if len(st.Waterfalls) < 3 {
		t.Errorf("waterfalls of patterns %v", st.Waterfalls)
	}
	// The page request's spans nested by causality: the client, web, and
	// the two services web called.
	if len(st.WfNames) != 4 || !strings.HasPrefix(st.WfNames[0], causal.ClientName) || !strings.Contains(st.WfNames[2], "memcached get") || !strings.Contains(st.WfNames[3], "SELECT items") {
		t.Errorf("first waterfall's spans %q", st.WfNames)
	}
	if st.AccOpen || st.AccRows != len(res.Trace.Accounting)+len(res.Accounting)-1 {
		t.Errorf("accounting open %v with %d rows, want folded with %d (the zero counter hidden)", st.AccOpen, st.AccRows, len(res.Trace.Accounting)+len(res.Accounting)-1)
	}
	// Pages of 50, search and the type filter.
	var rows []int
	check := func(what, expr string, want func([]int) bool) {
		t.Helper()
		if expr != "" {
			if err := pg.eval(ctx, expr, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := pg.eval(ctx, shownRows, &rows); err != nil {
			t.Fatal(err)
		}
		if !want(rows) {
			t.Errorf("%s: rows shown %v", what, rows)
		}
	}
	check("first page", "", func(r []int) bool { return len(r) == 50 && r[0] == 1 })
	check("second page", `document.querySelector(".controls .next").click()`, func(r []int) bool { return len(r) == 50 && r[0] == 51 })
	check("third page", `document.querySelector(".controls .next").click()`, func(r []int) bool { return len(r) == 20 && r[0] == 101 })
	search := func(s string) string {
		return `(() => { const i = document.querySelector(".controls .search"); i.value = "` + s + `"; i.dispatchEvent(new Event("input")); })()`
	}
	check("search dns", search("10.0.0.53"), func(r []int) bool { return len(r) == 40 && !slices.Contains(r, 1) })
	check("search nothing", search("no such host"), func(r []int) bool { return len(r) == 0 })
	check("cleared", search(""), func(r []int) bool { return len(r) == 50 })
	check("type filter", `(() => { const s = document.querySelector(".controls .typefilter"); s.value = "GET /search 2xx"; s.dispatchEvent(new Event("change")); })()`,
		func(r []int) bool { return len(r) == 40 })
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
	// The probe sees an overlap where there is one.
	bad := filepath.Join(dir, "overlap.html")
	if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><svg width="200" height="50"><text x="10" y="20">one label</text><text x="30" y="24">another</text><text x="10" y="45">apart</text></svg>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pg.navigate(ctx, "file://"+bad); err != nil {
		t.Fatal(err)
	}
	overlaps = nil
	if err := pg.eval(ctx, overlapProbe, &overlaps); err != nil {
		t.Fatal(err)
	}
	if len(overlaps) != 1 {
		t.Errorf("the probe found %q in a page with one overlap", overlaps)
	}
	if err := pg.navigate(ctx, "file://"+path); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("WIREPATH_OVERVIEW_SCREENSHOT"); out != "" {
		png, err := pg.screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
