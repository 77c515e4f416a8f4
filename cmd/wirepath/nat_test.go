package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNatGolden(t *testing.T) {
	const dir = "../../testdata/nat/"
	captures := []string{dir + "outside.pcap", dir + "inside.pcap", dir + "c1.pcapng", dir + "s1.pcap"}
	brnf := []string{dir + "brnf/outside.pcap", dir + "brnf/inside.pcap", dir + "brnf/c1.pcapng", dir + "brnf/s1.pcap"}
	runGolden(t, []cliCase{
		{name: "nat-text", args: append([]string{"nat"}, captures...), wantCode: 0},
		{name: "nat-json", args: append([]string{"nat", "--json"}, captures...), wantCode: 0},
		{name: "nat-brnf-all", args: append([]string{"nat", "--all"}, brnf...), wantCode: 0},
		{name: "nat-not-a-capture", args: []string{"nat", dir + "make.sh", dir + "outside.pcap", dir + "inside.pcap"}, wantCode: 3},
		{name: "nat-missing-file", args: []string{"nat", dir + "no-such.pcap"}, wantCode: 1},
		{name: "nat-bad-score", args: []string{"nat", "--min-score", "2", dir + "outside.pcap"}, wantCode: 2},
		{name: "nat-bad-window", args: []string{"nat", "--nat-window", "0s", dir + "outside.pcap"}, wantCode: 2},
		{name: "nat-bad-dedupe-window", args: []string{"nat", "--window", "0s", dir + "outside.pcap"}, wantCode: 2},
		{name: "nat-deprecated-flags", args: append([]string{"nat", "--no-clock-offsets", "--window", "6ms"}, captures...), wantCode: 0},
		{name: "nat-no-args", args: []string{"nat"}, wantCode: 2},
	})
}

// TestNATTable: --nat-table renames by a given table instead of learning
// (or besides it with --nat-learn) on messages, reconcile and analyze.
func TestNATTable(t *testing.T) {
	const dir = "../../testdata/nat/"
	captures := []string{dir + "outside.pcap", dir + "inside.pcap", dir + "c1.pcapng", dir + "s1.pcap"}
	tmp := t.TempDir()
	text := filepath.Join(tmp, "table.txt")
	if err := os.WriteFile(text, []byte("# the port forward\ntcp 192.0.2.100:81 10.1.0.13:8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(tmp, "bad.txt")
	if err := os.WriteFile(bad, []byte("tcp 192.0.2.100:81 10.1.0.13:8080\nudp 192.0.2.100:53 nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	learned := "testdata/golden/nat-json.stdout" // what wirepath nat --format json wrote
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runArgs(&stdout, &stderr, args...)
		return code, stdout.String(), stderr.String()
	}
	msgs := func(extra ...string) string {
		code, out, errs := run(append(append([]string{"messages", "-q", "--format", "jsonl"}, extra...), captures...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		return out
	}
	// The given row renames the port forward; nothing else is renamed.
	plain := msgs("--no-nat")
	out := msgs("--nat-table", text)
	if n := strings.Count(out, `"192.0.2.100:81"`); n != 0 {
		t.Errorf("--nat-table: %d messages still name 192.0.2.100:81", n)
	}
	want := strings.Count(plain, `"10.1.0.13:8080"`) + strings.Count(plain, `"192.0.2.100:81"`)
	if n := strings.Count(out, `"10.1.0.13:8080"`); n != want || want == 0 {
		t.Errorf("--nat-table: %d messages name 10.1.0.13:8080, want %d", n, want)
	}
	if strings.Count(out, `"192.0.2.100:80"`) == 0 {
		t.Errorf("--nat-table without --nat-learn learned the round robin")
	}
	// With --nat-learn the learned translations come too.
	if out := msgs("--nat-table", text, "--nat-learn"); strings.Count(out, `"192.0.2.100:80"`) != 0 || strings.Count(out, `"192.0.2.100:81"`) != 0 {
		t.Errorf("--nat-learn: the learned and the given translations should both apply")
	}
	// The JSON table: the accounting says what was applied and not.
	code, js, errs := run(append([]string{"messages", "--format", "json", "--nat-table", learned}, captures...)...)
	for _, want := range []string{`"name": "table_rows",`, `"name": "table_rows_applied",`, `"name": "rewrite_by_table",`} {
		if code != 0 || !strings.Contains(js, want) {
			t.Errorf("JSON table: exit %d, no %s in the accounting: %s", code, want, errs)
		}
	}
	if !strings.Contains(js, "\"name\": \"table_rows_ambiguous\",\n      \"value\": 5") {
		t.Errorf("JSON table: want 5 ambiguous rows:\n%s", js)
	}
	// reconcile and analyze take it too; the trace lists the rows as aliases.
	trace := filepath.Join(tmp, "t.tsv")
	if code, _, errs := run(append([]string{"reconcile", "-q", "--nat-table", text, "-o", trace}, captures...)...); code != 0 {
		t.Fatalf("reconcile: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(trace); !strings.Contains(string(b), "192.0.2.100:81") {
		t.Errorf("reconcile: the trace has no alias for the given row")
	}
	if code, _, errs := run(append([]string{"analyze", "-q", "--nat-table", text, "-o", filepath.Join(tmp, "r.json")}, captures...)...); code != 0 {
		t.Errorf("analyze: exit %d: %s", code, errs)
	}
	// Errors: the file and line; flags that exclude each other; the table
	// is never an output.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"messages", "--nat-table", bad}, 1, "bad.txt:2 (byte 34): inside name"},
		{[]string{"reconcile", "--nat-table", filepath.Join(tmp, "none.txt")}, 1, "none.txt"},
		{[]string{"messages", "--nat-table", text, "--no-nat"}, 2, "exclude each other"},
		{[]string{"analyze", "--nat-learn"}, 2, "only goes with --nat-table"},
		{[]string{"reconcile", "--nat-table", text, "-o", text}, 2, "also an input"},
	} {
		code, _, errs := run(append(tc.args, captures...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	if b, _ := os.ReadFile(text); !strings.Contains(string(b), "port forward") {
		t.Errorf("the table was overwritten")
	}
}
