package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
)

// TestHTMLSeveralEnginesInChromium renders the three engines' results on
// a generated multi-tier trace (linking alone finds hundreds of patterns)
// as one page and checks that it stays usable: one page of at most 50
// rows per pattern list, at most 5 patterns drawn open per engine, and,
// with every folded drawing opened, no two texts overlapping anywhere
// (the timelines' stacked node names used to run into the lane above and
// past the top, and a linear path's delay labels into each other).
func TestHTMLSeveralEnginesInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	cfg, err := gen.LoadConfig("multitier")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Duration = gen.Duration(20 * time.Second)
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rs []*causal.Result
	lo, no, co := linking.DefaultOptions(), nesting.DefaultOptions(), convolution.DefaultOptions()
	lo.Aggregate.KeepInstances, no.Aggregate.KeepInstances = true, true
	le, _ := linking.New(lo)
	ne, _ := nesting.New(no)
	ce, _ := convolution.New(co)
	for _, e := range []causal.Engine{le, ne, ce} {
		r, err := e.Infer(context.Background(), out.Trace)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if len(rs[0].Patterns) < 60 {
		t.Fatalf("linking found %d patterns, too few for the list's pages to mean something", len(rs[0].Patterns))
	}
	var buf bytes.Buffer
	if err := WriteAll(&buf, FormatHTML, rs, Options{Top: 50}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`id="agreement-table"`)) {
		t.Error("no agreement table for engines that list instances")
	}
	path := filepath.Join(t.TempDir(), "all.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel, pg := openPage(t, path, 120*time.Second)
	defer cancel()
	var st struct {
		Rows []int `json:"rows"`
		Open []int `json:"open"`
	}
	if err := pg.eval(ctx, `({
	  rows: Array.from(document.querySelectorAll("table.pattern-list")).map(t => Array.from(t.tBodies[0].rows).filter(r => !r.hidden).length),
	  open: ["linking", "nesting", "convolution"].map(e => document.querySelectorAll("section.pattern[id^='" + e + "-'] details.pat[open]").length),
	})`, &st); err != nil {
		t.Fatal(err)
	}
	for i, n := range st.Rows {
		if n > patternPage || n == 0 {
			t.Errorf("pattern list %d shows %d rows, want 1..%d", i, n, patternPage)
		}
	}
	for i, n := range st.Open {
		if n > openPatterns {
			t.Errorf("engine %d draws %d patterns open, want at most %d", i, n, openPatterns)
		}
	}
	var overlaps []string
	if err := pg.eval(ctx, `document.querySelectorAll("details").forEach(d => d.open = true)`, nil); err != nil {
		t.Fatal(err)
	}
	if err := pg.eval(ctx, overlapProbe, &overlaps); err != nil {
		t.Fatal(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("%d texts overlap, the first:\n%s", len(overlaps), strings.Join(overlaps[:min(len(overlaps), 10)], "\n"))
	}
	pg.drain()
	if len(pg.problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(pg.problems, "\n"))
	}
}
