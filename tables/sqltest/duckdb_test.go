package sqltest

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/wirepath/wirepath/report"
)

// buildWirepath builds the command into a temporary directory.
func buildWirepath(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wirepath")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/wirepath").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// atoi parses a number the report printed.
func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// find returns the submatches of re in text, or fails.
func find(t *testing.T, text, re string) []string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the report has no match for %q:\n%s", re, text)
	}
	return m
}

// TestDuckDBReadsTables runs analyze on the demo captures with --parquet
// and reads the four tables with DuckDB: their row counts are the
// report's (records, connections, messages, call paths), each pattern's
// requests are its count, and the median latency of the top pattern's
// requests is the report's p50 (the result's quantile is the lower
// median, DuckDB's quantile_disc).
func TestDuckDBReadsTables(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWirepath(t)
	dir := filepath.Join(t.TempDir(), "tables")
	demo, _ := filepath.Glob("../../testdata/demo/*.pcap*")
	args := append([]string{"analyze", "-q", "--engine", "nesting", "--top", "0", "--parquet", dir}, demo...)
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	text := string(out)

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	table := func(name string) string {
		return "read_parquet('" + filepath.Join(dir, name, "*", "*", "*.parquet") + "', hive_partitioning = true)"
	}

	acc := find(t, text, `pcapio +(\d+) records read, (\d+) packets after removing \d+ duplicates; (\d+) non ip`)
	fl := find(t, text, `flows +(\d+) connections, (\d+) messages`)
	ne := find(t, text, `nesting +\d+ messages, \d+ call pairs; (\d+) call paths, (\d+) patterns`)
	for _, c := range []struct {
		table string
		want  int64
	}{
		{"observations", atoi(t, acc[1]) - atoi(t, acc[3])},
		{"connections", atoi(t, fl[1])},
		{"messages", atoi(t, fl[2])},
		{"requests", atoi(t, ne[1])},
	} {
		var n int64
		if err := db.QueryRow("select count(*) from " + table(c.table)).Scan(&n); err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		if n != c.want {
			t.Errorf("%s: %d rows, the report says %d", c.table, n, c.want)
		}
	}

	// Every pattern's requests, against its count in the report.
	for _, m := range regexp.MustCompile(`(?m)^#(\d+) +count (\d+) `).FindAllStringSubmatch(text, -1) {
		var n int64
		if err := db.QueryRow("select count(*) from "+table("requests")+" where pattern = ?", atoi(t, m[1])).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != atoi(t, m[2]) {
			t.Errorf("pattern #%s: %d requests, the report counts %s", m[1], n, m[2])
		}
	}

	// The top pattern's median latency, as the report prints it.
	p50 := find(t, text, `(?m)^#1 .* latency [^(]+\(p50 ([^,]+), p90 ([^)]+)\)`)
	var q50, q90 float64
	if err := db.QueryRow("select quantile_disc(latency_us, 0.5), quantile_disc(latency_us, 0.9) from "+table("requests")+" where pattern = 1").Scan(&q50, &q90); err != nil {
		t.Fatal(err)
	}
	if got := report.FormatUS(q50); got != p50[1] {
		t.Errorf("top pattern's p50 latency: %s from DuckDB, %s in the report", got, p50[1])
	}
	if got := report.FormatUS(q90); got != p50[2] {
		t.Errorf("top pattern's p90 latency: %s from DuckDB, %s in the report", got, p50[2])
	}

	// The partitions and the schema version are what docs/formats.md says.
	var hours int64
	if err := db.QueryRow("select count(distinct (date, hour)) from " + table("messages")).Scan(&hours); err != nil {
		t.Fatal(err)
	}
	if hours < 1 {
		t.Errorf("messages in %d hour partitions", hours)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "messages", "*", "*", "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no messages files")
	}
	var version string
	if err := db.QueryRow("select value::varchar from parquet_kv_metadata('" + files[0] + "') where key::varchar = 'wirepath.schema_version'").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != "1" {
		t.Errorf("schema version %q", version)
	}
	// Joins work: every request's root is a CALL of the messages table.
	var calls int64
	if err := db.QueryRow("select count(*) from " + table("requests") + " r join " + table("messages") + " m on m.index = r.root where m.kind = 'CALL'").Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if calls != atoi(t, ne[1]) {
		t.Errorf("%d requests' roots are CALLs in messages, want %s", calls, ne[1])
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestDuckDBWindowedTables runs analyze on the demo captures whole and in
// windows shorter than the capture (--windowed), both with --parquet, and
// checks with DuckDB that the windowed tables hold each of the whole
// run's messages once (the same msg_id set, which is also that of
// 'wirepath messages --parquet': the demo's messages are flows' one to
// one), as many requests as the
// whole run, every request's messages found by msg_id (some are owned,
// and written, by the next window) and every root a CALL.
func TestDuckDBWindowedTables(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWirepath(t)
	demo, _ := filepath.Glob("../../testdata/demo/*.pcap*")
	whole, win := filepath.Join(t.TempDir(), "whole"), filepath.Join(t.TempDir(), "windowed")
	run := func(dir string, extra ...string) string {
		args := append([]string{"analyze", "-q", "--engine", "nesting", "--top", "0", "--parquet", dir}, extra...)
		out, err := exec.Command(bin, append(args, demo...)...).Output()
		if err != nil {
			t.Fatalf("analyze %v: %v", extra, err)
		}
		return string(out)
	}
	run(whole)
	text := run(win, "--windowed", "3s", "--windowed-margin", "2500ms")
	fl := filepath.Join(t.TempDir(), "flows")
	if err := exec.Command(bin, append([]string{"messages", "-q", "-o", os.DevNull, "--parquet", fl}, demo...)...).Run(); err != nil {
		t.Fatalf("messages: %v", err)
	}
	if w := find(t, text, `window +(\d+) windows; \d+ messages owned; (\d+) messages in margins`); atoi(t, w[1]) < 2 || atoi(t, w[2]) == 0 {
		t.Fatalf("%s windows, %s messages in margins: the test needs several windows and margins", w[1], w[2])
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	table := func(dir, name string) string {
		return "read_parquet('" + filepath.Join(dir, name, "*", "*", "*.parquet") + "', hive_partitioning = true)"
	}
	count := func(q string) int64 {
		t.Helper()
		var n int64
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	for _, c := range []struct {
		what string
		got  int64
		want int64
	}{
		{"windowed messages", count("select count(*) from " + table(win, "messages")), count("select count(*) from " + table(whole, "messages"))},
		{"distinct msg_id", count("select count(distinct msg_id) from " + table(win, "messages")), count("select count(*) from " + table(whole, "messages"))},
		{"msg_id not in the whole run", count("select count(*) from " + table(win, "messages") + " where msg_id not in (select msg_id from " + table(whole, "messages") + ")"), 0},
		{"messages without msg_id", count("select count(*) from " + table(win, "messages") + " where msg_id is null or window_start is null"), 0},
		{"requests", count("select count(*) from " + table(win, "requests")), count("select count(*) from " + table(whole, "requests"))},
		{"requests' messages not found", count("select count(*) from (select unnest(message_ids) as id from " + table(win, "requests") + ") r where id not in (select msg_id from " + table(win, "messages") + ")"), 0},
		{"roots that are CALLs", count("select count(*) from " + table(win, "requests") + " r join " + table(win, "messages") + " m on m.msg_id = r.root_id where m.kind = 'CALL'"), count("select count(*) from " + table(whole, "requests"))},
		{"whole run's roots found by msg_id", count("select count(*) from " + table(whole, "requests") + " r join " + table(whole, "messages") + " m on m.msg_id = r.root_id and m.index = r.root"), count("select count(*) from " + table(whole, "requests"))},
		{"msg_id shared with flows' messages (wirepath messages)", count("select count(*) from " + table(win, "messages") + " where msg_id in (select msg_id from " + table(fl, "messages") + ")"), count("select count(*) from " + table(fl, "messages"))},
		{"observations", count("select count(*) from " + table(win, "observations")), count("select count(*) from " + table(whole, "observations"))},
		{"connections", count("select count(*) from " + table(win, "connections")), count("select count(*) from " + table(whole, "connections"))},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
}
