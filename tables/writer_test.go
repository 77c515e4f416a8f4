package tables

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// readAll reads every row of table name under dir, with the partition
// each file is in.
func readAll[T any](t *testing.T, dir, name string) (rows []T, parts []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, name, "*", "*", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rs, err := parquet.ReadFile[T](f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rel, _ := filepath.Rel(filepath.Join(dir, name), f)
		for range rs {
			parts = append(parts, rel)
		}
		rows = append(rows, rs...)
	}
	return rows, parts
}

func ns(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

// TestPartitionsByHour writes messages across three hours, in an order
// that comes back to a closed hour, with two files open at most: every
// row is in the partition of its hour, the least recently used file is
// the one closed, and an hour whose file was closed gets a second part.
func TestPartitionsByHour(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	w, err := Create(dir, Options{RowGroupRows: 3, MaxOpenParts: 2})
	if err != nil {
		t.Fatal(err)
	}
	times := []string{
		"2024-01-01T00:59:59.9Z", "2024-01-01T01:00:00Z", "2024-01-01T00:59:59.95Z", // late row, hour still open
		"2024-01-01T02:00:01Z",   // third hour: closes 01, the least recently used
		"2024-01-01T00:30:00Z",   // 00 is still open
		"1969-12-31T23:59:59.5Z", // before the epoch
	}
	for i, s := range times {
		w.Message(&Message{SendTS: ns(s), Index: int64(i), Src: "a:1", Dst: "b:2", Proto: "tcp", Kind: "CALL", Bytes: int64(i)})
	}
	w.Message(&Message{RecvTS: ns("2024-01-01T01:10:00Z"), Index: 6, Kind: "-"}) // send unseen: the receive decides; 01 was closed: a second part
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, parts := readAll[Message](t, dir, TableMessages)
	if len(rows) != len(times)+1 {
		t.Fatalf("%d rows, want %d", len(rows), len(times)+1)
	}
	want := map[int64]string{
		0: "date=2024-01-01/hour=00/part-00000.parquet", 1: "date=2024-01-01/hour=01/part-00000.parquet",
		2: "date=2024-01-01/hour=00/part-00000.parquet", 3: "date=2024-01-01/hour=02/part-00000.parquet",
		4: "date=2024-01-01/hour=00/part-00000.parquet", 5: "date=1969-12-31/hour=23/part-00000.parquet",
		6: "date=2024-01-01/hour=01/part-00001.parquet",
	}
	for i, r := range rows {
		if parts[i] != want[r.Index] {
			t.Errorf("row %d in %s, want %s", r.Index, parts[i], want[r.Index])
		}
		if r.Index < int64(len(times)) && (r.SendTS != ns(times[r.Index]) || r.Bytes != r.Index) {
			t.Errorf("row %d read back as %+v", r.Index, r)
		}
	}
	if n := w.Rows()[TableMessages]; n != int64(len(times)+1) {
		t.Errorf("Rows says %d messages", n)
	}
}

// TestOptionalColumnsAreNull checks that zero values of optional columns
// are written as nulls (a message whose receive was not seen).
func TestOptionalColumnsAreNull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	w, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Message(&Message{SendTS: ns("2024-01-01T00:00:00Z"), Kind: "CALL"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, TableMessages, "*", "*", "*.parquet"))
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"recv_ts", "src_node", "call_id", "conn", "label"} {
		col, ok := pf.Schema().Lookup(name)
		if !ok {
			t.Fatalf("no column %s", name)
		}
		if !col.Node.Optional() {
			t.Errorf("%s is not optional", name)
		}
		nulls := pf.Metadata().RowGroups[0].Columns[col.ColumnIndex].MetaData.Statistics.NullCount
		if nulls != 1 {
			t.Errorf("%s: %d nulls, want 1", name, nulls)
		}
	}
	if v, _ := pf.Lookup("wirepath.schema_version"); v != "1" {
		t.Errorf("schema version %q", v)
	}
	if v, _ := pf.Lookup("wirepath.table"); v != TableMessages {
		t.Errorf("table %q", v)
	}
}

// TestAbortLeavesNothing: an aborted writer leaves no directory and no
// temporary one; a non-empty directory is refused; an empty one is
// replaced.
func TestAbortLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	w, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Observation(&Observation{TS: 1, Sniffer: "a"})
	w.Abort()
	if err := w.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
	if err := os.MkdirAll(filepath.Join(dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, Options{}); err == nil {
		t.Error("a non-empty directory was accepted")
	}
	os.Remove(filepath.Join(dir, "x"))
	w, err = Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Connection(&Connection{Conn: 7, Start: ns("2024-01-01T05:00:00Z")})
	w.Request(&Request{Engine: "nesting", Messages: []int64{3, 4}, Start: ns("2024-01-01T05:00:00Z")})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	conns, _ := readAll[Connection](t, dir, TableConnections)
	reqs, _ := readAll[Request](t, dir, TableRequests)
	if len(conns) != 1 || conns[0].Conn != 7 || len(reqs) != 1 || !slices.Equal(reqs[0].Messages, []int64{3, 4}) {
		t.Errorf("read back %+v %+v", conns, reqs)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("left %v beside the tables", ents)
	}
}

func TestFloorHour(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{0, 0}, {3599e9, 0}, {3600e9, 3600}, {-1, -3600}, {-3600e9, -3600}, {-3600e9 - 1, -7200},
	} {
		if got := floorHour(c.in); got != c.want {
			t.Errorf("floorHour(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
