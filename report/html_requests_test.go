package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// fakeFrames puts message m in frames 2m+1 and 2m+2; its filter lists
// them.
type fakeFrames struct{}

func (fakeFrames) DisplayFilter(fs []int64) string {
	if len(fs) == 0 {
		return ""
	}
	return fmt.Sprintf("frame.number in {%s}", strings.Trim(fmt.Sprint(fs), "[]"))
}

func (fakeFrames) FramesOf(msgs []int) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, int64(2*m+1), int64(2*m+2))
	}
	return out
}

// ownLabelledShop is ownShop with the labels of labelledShopResult.
func ownLabelledShop() (*causal.Result, *trace.Trace) {
	res, tr := ownShop()
	_, insts := shopTrace()
	labelShop(tr, insts)
	for i := range res.Requests {
		q := &res.Requests[i]
		q.Label = tr.Str(tr.Messages[q.Root].Label)
		lat := 1000.0 + float64(i)
		q.Latency = &lat
	}
	return res, tr
}

// TestHTMLRequests renders the request list: from an engine's own
// requests timed from the trace, with or without the merged capture's
// frames; from the result alone; and says why there is none.
func TestHTMLRequests(t *testing.T) {
	all := shopPageN + shopLookupN + shopHitN
	cases := []struct {
		name   string
		res    func() (*causal.Result, *trace.Trace)
		trace  bool
		frames FrameIndex
		want   []string // in the page
		not    []string // not in the page
		rows   int
	}{
		{name: "trace and frames", res: ownLabelledShop, trace: true, frames: fakeFrames{}, rows: all,
			want: []string{"<th>Wireshark filter</th>", `<code class="flt">frame.number in {`, "GET /search", "+"}},
		{name: "trace only", res: ownLabelledShop, trace: true, rows: all,
			want: []string{"for each request's Wireshark filter"}, not: []string{"<th>Wireshark filter</th>"}},
		{name: "result only", res: ownLabelledShop, rows: all, want: []string{"GET /page/{id}"}, not: []string{"<th>Wireshark filter</th>"}},
		{name: "instances, no trace", res: func() (*causal.Result, *trace.Trace) { r, tr := shopResult(); return r, tr }, rows: 0,
			want: []string{"no requests: the assembly engine lists its requests"}},
		{name: "instances and trace", res: func() (*causal.Result, *trace.Trace) { r, tr := shopResult(); return r, tr }, trace: true, rows: all},
	}
	rowRE := regexp.MustCompile(`<tr data-rank="\d+" data-request=`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, tr := tc.res()
			opt := HTMLOptions{Frames: tc.frames}
			if tc.trace {
				opt.Trace = tr
			}
			var buf bytes.Buffer
			if err := WriteHTML(&buf, res, opt); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(page, w) {
					t.Errorf("the page has %q", w)
				}
			}
			if n := len(rowRE.FindAllString(page, -1)); n != tc.rows {
				t.Errorf("%d request rows, want %d", n, tc.rows)
			}
		})
	}
}

// requestState is what TestHTMLRequestsInChromium reads of the list.
type requestState struct {
	Latencies []float64 `json:"latencies"`
	Labels    []string  `json:"labels"`
	Filters   []string  `json:"filters"`
	Requests  []int     `json:"requests"`
	Info      string    `json:"info"`
	Overflow  []string  `json:"overflow"`
}

// requestProbe reads the visible rows of the request list, and lists
// every cell of it whose content overflows it or overlaps another cell.
const requestProbe = `(() => {
  const rows = Array.from(document.querySelectorAll("#request-list tbody tr")).filter(r => !r.hidden);
  const over = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const overflow = [];
  for (const r of rows) {
    const boxes = Array.from(r.cells).map(c => { const g = document.createRange(); g.selectNodeContents(c); return g.getBoundingClientRect(); });
    Array.from(r.cells).forEach((c, i) => {
      if (c.scrollWidth > c.clientWidth + 1) overflow.push("row " + r.dataset.rank + " cell " + i + " overflows: " + c.textContent);
      for (let j = i + 1; j < boxes.length; j++) if (boxes[i].width && boxes[j].width && over(boxes[i], boxes[j])) overflow.push("row " + r.dataset.rank + " cells " + i + " and " + j + " overlap");
    });
  }
  return {
    latencies: rows.map(r => +r.dataset.latency),
    labels: rows.map(r => r.cells[1].textContent.trim()),
    filters: rows.map(r => { const c = r.querySelector("code.flt"); return c ? c.textContent : ""; }),
    requests: rows.map(r => +r.dataset.request),
    info: document.querySelector('.controls[data-list="request-list"] .pageinfo').textContent.trim(),
    overflow: overflow,
  };
})()`

// TestHTMLRequestsInChromium loads a report with the request list of an
// engine's own requests and their frames in headless Chromium: the
// slowest first, a page of them, each with its label, latency,
// confidence and the Wireshark filter of its frames; the search over
// labels and statuses; and no text overflowing its cell or overlapping
// another, nor any two texts of the page's figures.
func TestHTMLRequestsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	res, tr := ownLabelledShop()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, res, HTMLOptions{Trace: tr, Frames: fakeFrames{}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "requests.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := RequestRows([]*causal.Result{res}, tr)
	if err != nil {
		t.Fatal(err)
	}
	filterOf := map[int]string{} // by request
	for _, r := range rows {
		filterOf[r.Request] = fakeFrames{}.DisplayFilter(fakeFrames{}.FramesOf(r.Messages))
	}
	ctx, cancel, pg := openPage(t, path, 90*time.Second)
	defer cancel()
	var st requestState
	read := func(expr string) {
		t.Helper()
		if expr != "" {
			if err := pg.eval(ctx, expr, nil); err != nil {
				t.Fatal(err)
			}
		}
		st = requestState{}
		if err := pg.eval(ctx, requestProbe, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Overflow) > 0 {
			t.Errorf("request list:\n%s", strings.Join(st.Overflow, "\n"))
		}
	}
	read("")
	if len(st.Latencies) != requestPage || !strings.Contains(st.Info, "of 63") {
		t.Fatalf("%d rows shown (%q), want a page of %d of 63", len(st.Latencies), st.Info, requestPage)
	}
	for i := 1; i < len(st.Latencies); i++ {
		if st.Latencies[i] > st.Latencies[i-1] {
			t.Errorf("row %d (%v µs) is slower than row %d (%v µs)", i, st.Latencies[i], i-1, st.Latencies[i-1])
		}
	}
	// The slowest are the page requests whose query went to disk.
	if st.Labels[0] != "GET /page/{id}" {
		t.Errorf("the slowest request is %q", st.Labels[0])
	}
	for i, l := range st.Labels {
		want := filterOf[st.Requests[i]]
		if want == "" || st.Filters[i] != want {
			t.Errorf("row %d (%s): filter %q, want %q", i, l, st.Filters[i], want)
		}
	}
	search := func(s string) string {
		return `(() => { const i = document.querySelector('.controls[data-list="request-list"] .search'); i.value = "` + s + `"; i.dispatchEvent(new Event("input")); })()`
	}
	read(search("get /search"))
	if len(st.Labels) != shopLookupN || !strings.Contains(st.Info, "of 20") {
		t.Errorf("search GET /search: %d rows (%q)", len(st.Labels), st.Info)
	}
	read(search("404"))
	if len(st.Labels) != shopLookupN/5 {
		t.Errorf("search 404: %d rows, want %d", len(st.Labels), shopLookupN/5)
	}
	read(search("no such request"))
	if len(st.Labels) != 0 || st.Info != "no request matches" {
		t.Errorf("search for nothing: %d rows (%q)", len(st.Labels), st.Info)
	}
	read(search(""))
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
	if out := os.Getenv("WIREPATH_REQUESTS_SCREENSHOT"); out != "" {
		if err := pg.eval(ctx, `document.getElementById("slowest").scrollIntoView()`, nil); err != nil {
			t.Fatal(err)
		}
		png, err := pg.screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
