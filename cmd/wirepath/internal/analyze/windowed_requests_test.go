package analyze

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/report"
)

// TestWindowedRequests checks that analyze --windowed keeps the assembly
// engine's requests: on generated captures of the multi-tier system (30
// s, three sniffers with clocks seconds off) analysed in windows of 5 s
// with 3 s margins, every request of the whole run is listed once, by the
// window whose own span holds its root (none twice from a neighbour's
// margin), with its window's index, and nearly every one with the same
// tree (the windows' engines see the same messages around it, but learn
// their models from their own windows).
func TestWindowedRequests(t *testing.T) {
	cfg, err := gen.LoadConfig("testdata/multitier-sniffers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := genCaptures(t, cfg)
	caps := []string{filepath.Join(dir, "front.pcapng"), filepath.Join(dir, "mid.pcapng"), filepath.Join(dir, "db.pcapng")}
	rs, _ := analyzeJSON(t, append(caps, "--engine", assembly.Name)...)
	whole := byEngine(t, rs, assembly.Name)
	ws, err := resultjson.ReadResultsFile(analyzeWindowed(t, caps, "json"))
	if err != nil {
		t.Fatal(err)
	}
	windowed := byEngine(t, ws, assembly.Name)

	type key struct {
		start int64
		label string
	}
	requests := func(r *causal.Result) map[key]causal.Request {
		m := map[key]causal.Request{}
		for _, q := range r.Requests {
			if q.Background {
				continue
			}
			k := key{q.StartNS, q.Label}
			if _, dup := m[k]; dup {
				t.Errorf("%s: request at %d (%s) listed twice", r.Engine, q.StartNS, q.Label)
			}
			m[k] = q
		}
		return m
	}
	wr, gr := requests(whole), requests(windowed)
	if len(wr) < 100 {
		t.Fatalf("%d requests in the whole run", len(wr))
	}
	same, windows := 0, map[int]bool{}
	for k, q := range gr {
		if q.Window == nil {
			t.Errorf("request at %d: no window", k.start)
		} else {
			windows[*q.Window] = true
		}
		w, ok := wr[k]
		if !ok {
			t.Errorf("windowed request at %d (%s) is none of the whole run's", k.start, k.label)
			continue
		}
		if len(w.Messages) == len(q.Messages) && w.Kind == q.Kind {
			same++
		}
	}
	for k := range wr {
		if _, ok := gr[k]; !ok {
			t.Errorf("request at %d (%s) of the whole run is in no window", k.start, k.label)
		}
	}
	t.Logf("%d requests whole, %d windowed from %d windows, %d with the same number of messages", len(wr), len(gr), len(windows), same)
	if len(windows) < 5 {
		t.Errorf("requests from %d windows, want at least 5 of a 30 s run in 5 s windows", len(windows))
	}
	if same < len(wr)*95/100 {
		t.Errorf("%d of %d windowed requests have the whole run's number of messages, want 95 %%", same, len(wr))
	}
	if whole.Requests[0].Window != nil {
		t.Errorf("a whole run's request names window %d", *whole.Requests[0].Window)
	}
	checkWindowedHTML(t, caps, windowed)
	checkWindowedOTLP(t, caps, whole, windowed)
}

// analyzeWindowed runs the assembly engine on caps in windows of 5 s with
// 3 s margins and returns the file of its report in format.
func analyzeWindowed(t *testing.T, caps []string, format string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "windowed."+format)
	if _, stderr, code := runAnalyze(t, append(caps, "--engine", assembly.Name, "--windowed", "5s", "--windowed-margin", "3s",
		"--format", format, "-o", out)...); code != 0 {
		t.Fatalf("analyze --windowed --format %s exited %d:\n%s", format, code, stderr)
	}
	return out
}

// checkWindowedHTML checks that analyze --windowed --format html, which
// keeps only the slowest requests of the windows (report.SlowestRequests),
// lists the same requests, numbered the same, with the same total, as a
// page made from the windowed JSON result, which holds them all.
func checkWindowedHTML(t *testing.T, caps []string, windowed *causal.Result) {
	t.Helper()
	got, err := os.ReadFile(analyzeWindowed(t, caps, "html"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := report.WriteHTML(&want, windowed, report.HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	list := func(b []byte) string {
		s := string(b)
		i := strings.Index(s, `<h2 id="slowest">`)
		if i < 0 {
			t.Fatal("no request list on the page")
		}
		return s[i : i+strings.Index(s[i:], "</table>")]
	}
	if g, w := list(got), list(want.Bytes()); g != w {
		t.Errorf("the windowed page's request list differs from the one of its JSON result:\n got  %.600s\n want %.600s", g, w)
	}
	if n := len(windowed.Requests); !strings.Contains(list(got), "requests, slowest first") || n == 0 {
		t.Errorf("%d requests; page list %.300s", n, list(got))
	}
}
