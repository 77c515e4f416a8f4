package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemoRequestTypesFirst: what a new user of make demo sees first, in
// the text and at the top of the HTML report, is the demo system's three
// request types with their counts (those of the request log) and
// latencies, and in the HTML where their time goes (issue 12).
func TestDemoRequestTypesFirst(t *testing.T) {
	d := filepath.Join(repo, "testdata/demo")
	truth := map[string]int{}
	for _, r := range readDemoTruth(t) {
		truth[r.kind]++
	}
	want := []struct{ label, kind string }{
		{"GET /item/{id} 2xx", "item"}, {"GET /cart 2xx", "cart"}, {"GET /static/logo.txt 2xx", "static"},
	}
	args := []string{filepath.Join(d, "outside.pcapng"), filepath.Join(d, "inside.pcapng.gz"), filepath.Join(d, "lb-any.pcap.gz"),
		"--roles", filepath.Join(d, "roles.txt"), "--no-aggregate-clients"}
	out, stderr, code := runAnalyze(t, append(args, "--top", "3")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first := strings.Index(out, "\n#1 ")
	if first < 0 {
		t.Fatalf("no pattern in the text:\n%s", out)
	}
	head := out[:first]
	if !strings.Contains(head, "150 requests of 3 types") {
		t.Errorf("the text does not start with the request types:\n%s", head)
	}
	for _, w := range want {
		re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(w.label) + ` +(\d+) +\d+% +\S+ \S+ +\S+ \S+ +\S+ \S+ +\S+ \S+ `)
		m := re.FindStringSubmatch(head)
		if m == nil || m[1] != fmt.Sprint(truth[w.kind]) {
			t.Errorf("request type %s: %v, want %d requests with p50, p90, p99 and mean", w.label, m, truth[w.kind])
		}
	}
	html := filepath.Join(t.TempDir(), "report.html")
	if _, stderr, code := runAnalyze(t, append(args, "-o", html)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	body := string(page)
	main := body[strings.Index(body, "<main>"):]
	if !strings.HasPrefix(strings.TrimSpace(main[len("<main>"):]), `<h2 id="requests">`) {
		t.Errorf("the page does not open on the requests: %.200s", main)
	}
	rows := regexp.MustCompile(`<tr data-type="([^"]+)"><td class="label"><a href="#type-\d+">[^<]+</a></td><td class="num">(\d+)</td>`).FindAllStringSubmatch(body, -1)
	if len(rows) != len(want) {
		t.Fatalf("%d request types in the page, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if rows[i][1] != w.label || rows[i][2] != fmt.Sprint(truth[w.kind]) {
			t.Errorf("type row %d: %s ×%s, want %s ×%d", i, rows[i][1], rows[i][2], w.label, truth[w.kind])
		}
	}
	// Where the time goes: the cart requests wait for auth (20 ms).
	if !regexp.MustCompile(`<table class="shares" data-type="GET /cart 2xx"><tbody>\s*(<tr>.*\n)*<tr><td class="what">auth</td>`).MatchString(body) {
		t.Error("the cart requests' time shares do not name auth")
	}
}
