package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wirepath/wirepath/internal/golden"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// flat is a message with its strings resolved, for comparing messages of
// different traces.
type flat struct {
	SendTS, RecvTS                     Timestamp
	Src, Dst, SrcNode, DstNode, CallID string
	Bytes                              int64
	Kind                               Kind
	Proto                              Proto
}

func flatten(t *Trace) []flat {
	out := make([]flat, len(t.Messages))
	for i, m := range t.Messages {
		out[i] = flat{m.SendTS, m.RecvTS, t.Str(m.Src), t.Str(m.Dst), t.Str(m.SrcNode), t.Str(m.DstNode), t.Str(m.CallID), m.Bytes, m.Kind, m.Proto}
	}
	return out
}

// flatEv is a message's evidence with its strings and tokens resolved.
type flatEv struct {
	Conn, Seq        uint32
	Stream           uint64
	Sender, Receiver Task
	ReqID, Label     string
	Tokens           string // the hashes in hex, comma-separated
}

func flattenEv(t *Trace) []flatEv {
	out := make([]flatEv, len(t.Messages))
	for i, m := range t.Messages {
		e := &m.Evidence
		out[i] = flatEv{e.Conn, e.Seq, e.Stream, e.Sender, e.Receiver, t.Str(e.ReqID), t.Str(e.Label), string(appendTokens(nil, t.Syms.Tokens(e.Tokens)))}
	}
	return out
}

func equalTraces(a, b *Trace) error {
	fa, fb := flatten(a), flatten(b)
	if len(fa) != len(fb) {
		return fmt.Errorf("%d messages, %d messages", len(fa), len(fb))
	}
	ea, eb := flattenEv(a), flattenEv(b)
	for i := range fa {
		if fa[i] != fb[i] {
			return fmt.Errorf("message %d: %+v != %+v", i, fa[i], fb[i])
		}
		if ea[i] != eb[i] {
			return fmt.Errorf("message %d: evidence %+v != %+v", i, ea[i], eb[i])
		}
	}
	return nil
}

// smallWant is the ground truth of testdata/small.tsv and small.jsonl,
// written out by hand from the fixtures.
var smallWant = []flat{
	{1700000000000000000, 1700000000000031000, "10.0.0.9:51000", "10.0.1.11:80", "client", "web", "", 320, KindCall, ProtoTCP},
	{1700000000000100000, 1700000000000130000, "10.0.1.11:43000", "10.0.2.5:5432", "web", "db", "q1", 96, KindCall, ProtoTCP},
	{1700000000004000000, NoTime, "10.0.2.5:5432", "10.0.1.11:43000", "db", "web", "q1", 2048, KindReturn, ProtoTCP},
	{NoTime, 1700000000005200000, "10.0.1.11:80", "10.0.0.9:51000", "web", "client", "", 5120, KindReturn, ProtoTCP},
	{1700000000006000000, 1700000000006000500, "unix:/run/app.sock", "unix:/run/app.sock", "nginx[812]@web1", "-", "tab\there", 12, KindUnknown, ProtoUnix},
}

func TestReadFileFormats(t *testing.T) {
	for _, tc := range []struct {
		file   string
		format Format
		want   []flat
	}{
		{"small.tsv", FormatTSV, smallWant},
		{"small.jsonl", FormatJSONL, smallWant},
		{"small.tsv.gz", FormatTSV, smallWant},
		{"small.jsonl.zst", FormatJSONL, smallWant},
		{"plain.tsv", FormatTSV, smallWant[:2]},
		{"project5.txt", FormatProject5, []flat{
			{1047680084482205000, 1047680084482205000, "", "", "nodeA", "nodeB", "id37", 0, KindCall, ProtoUnknown},
			{1047680084483575000, 1047680084483575000, "", "", "nodeB", "nodeA", "id37", 0, KindReturn, ProtoUnknown},
			{1047680085000000000, 1047680085000000000, "", "", "nodeA", "nodeC", "", 0, KindUnknown, ProtoUnknown},
			{1047680085123456789, 1047680085123456789, "", "", "nodeC", "nodeD", "", 0, KindCall, ProtoUnknown},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := NewReader(f, path, ReadOptions{Strict: true})
			tr, err := r.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tc.format {
				t.Errorf("detected %v, want %v", r.Format(), tc.format)
			}
			got := flatten(tr)
			if len(got) != len(tc.want) {
				t.Fatalf("%d messages, want %d: %+v", len(got), len(tc.want), got)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("message %d:\n got %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
			if strings.HasPrefix(tc.file, "small") {
				if off, ok := tr.Meta.OffsetOf("db"); !ok || off != -2500 {
					t.Errorf("meta not read: %+v", tr.Meta)
				}
			}
			// Golden: the canonical TSV form of what was read.
			var buf bytes.Buffer
			if err := WriteTSV(&buf, tr); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, tc.file+".golden.tsv", buf.Bytes())
		})
	}
}

// columnOf returns the column a reading error names, "" for none.
func columnOf(err error) string {
	var ce *ColumnError
	if errors.As(err, &ce) {
		return ce.Column
	}
	return ""
}

func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), got)
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		head string
		want Format
	}{
		{"# wirepath-trace v1\nsend_ts\n", FormatTSV},
		{"# wirepath-trace v9\n{", FormatTSV},
		{"\n\n  {\"send_ts\":1}\n", FormatJSONL},
		{"# comment\n1047680084.482205 CALL_SENT a b id\n", FormatProject5},
		{"Timestamp Operation Sender Receiver ID\n", FormatProject5},
		{"12 a b\n", FormatProject5},
		{"send_ts\trecv_ts\n", FormatTSV},
		{"", FormatTSV},
	} {
		if got := DetectFormat([]byte(tc.head)); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.head, got, tc.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		line        int
		column, msg string
		lenientOK   bool // reading goes on when not strict
	}{
		{"tsv bad number", "send_ts\tbytes\n1\t2\n1\tx\n", 3, "bytes", `"x" is not a valid number`, true},
		{"tsv no header", "# wirepath-trace v1\n", 1, "", "no header line", false},
		{"tsv version", "# wirepath-trace v3\nsend_ts\n1\n", 1, "", "unsupported TSV trace version", false},
		{"jsonl bad json", "{\"send_ts\":1}\n{\"send_ts\":2,}\n", 2, "", "byte 14", true},
		{"jsonl type", "{\"send_ts\":1}\n{\"send_ts\":\"2\"}\n", 2, "send_ts", "wrong JSON type", true},
		{"jsonl no time", "{\"send_ts\":1}\n{\"bytes\":5}\n", 2, "", "neither send_ts nor recv_ts", true},
		{"jsonl version", "{\"wirepath_trace\":3}\n{\"send_ts\":1}\n", 1, "", "unsupported JSON Lines trace version 3", false},
		{"jsonl late header", "{\"send_ts\":1}\n{\"wirepath_trace\":1}\n", 2, "", "header record after the first line", true},
		{"jsonl kind", "{\"send_ts\":1,\"kind\":\"POKE\"}\n", 1, "kind", "unknown message kind", true},
		{"p5 fields", "1.5 CALL_SENT a b id extra\n", 1, "", "6 fields", true},
		{"p5 time", "1.5 CALL_SENT a b\n1.x CALL_SENT a b\n", 2, "timestamp", "not a time in seconds", true},
		{"p5 op", "1.5 POKE a b\n", 1, "operation", "unknown message kind", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in), "in.trace", ReadOptions{Strict: true})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.File != "in.trace" || pe.Line != tc.line || columnOf(err) != tc.column || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q (line %d column %q), want line %d column %q containing %q", err, pe.Line, columnOf(err), tc.line, tc.column, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "in.trace:"+strconv.Itoa(tc.line)+": ") {
				t.Errorf("error %q does not start with file:line", err)
			}
			tr, err := Read(strings.NewReader(tc.in), "in.trace", ReadOptions{})
			if (err == nil) != tc.lenientOK {
				t.Fatalf("lenient read: err = %v", err)
			}
			if err == nil {
				var skipped int64 = -1
				for _, c := range tr.Meta.Accounting {
					if c.Name == "skipped_lines" {
						skipped = c.Value
					}
				}
				if skipped != 1 || len(tr.Meta.Warnings) != 1 || !strings.Contains(tr.Meta.Warnings[0], tc.msg) {
					t.Errorf("lenient read: skipped %d, warnings %q", skipped, tr.Meta.Warnings)
				}
			}
		})
	}
}

// TestTruncated cuts compressed and plain fixtures at every byte: the reader
// must return an error or a prefix of the messages, never panic or hang.
func TestTruncated(t *testing.T) {
	for _, file := range []string{"small.tsv.gz", "small.jsonl.zst", "small.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(data); n++ {
			tr, err := Read(bytes.NewReader(data[:n]), file, ReadOptions{})
			if err != nil {
				continue
			}
			got := flatten(tr)
			if len(got) > len(smallWant) {
				t.Fatalf("%s cut at %d: %d messages", file, n, len(got))
			}
			for i := range got {
				// The last message may be cut inside a string or number.
				if got[i] != smallWant[i] && i != len(got)-1 {
					t.Fatalf("%s cut at %d: message %d = %+v", file, n, i, got[i])
				}
			}
		}
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	src, err := ReadFile(filepath.Join("testdata", "small.tsv"), ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"a.tsv", "a.jsonl", "a.tsv.gz", "a.jsonl.zst", "a.ndjson.gz"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, src, FormatAuto); err != nil {
			t.Fatal(err)
		}
		r := NewReader(mustOpen(t, path), path, ReadOptions{Strict: true})
		got, err := r.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if r.Format() != FormatForName(name) {
			t.Errorf("%s: read back as %v", name, r.Format())
		}
		if err := equalTraces(src, got); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustOpen(t *testing.T, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// repeat returns a reader that yields head once and then body n times.
func repeat(head, body string, n int) io.Reader {
	rs := []io.Reader{strings.NewReader(head)}
	big := strings.Repeat(body, 256)
	for i := 0; i < n/256+1; i++ {
		rs = append(rs, strings.NewReader(big))
	}
	return io.MultiReader(rs...)
}

// TestReaderNoAllocs guards the hot path: once the symbols are interned,
// reading a message allocates nothing, in every format.
func TestReaderNoAllocs(t *testing.T) {
	for _, tc := range []struct{ name, head, body string }{
		{"tsv", "send_ts\trecv_ts\tsrc\tdst\tsrc_node\tdst_node\tbytes\tkind\tcall_id\tproto\n",
			"1700000000000000000\t1700000000000031000\t10.0.0.9:51000\t10.0.1.11:80\tclient\tweb\t320\tCALL\tc1\ttcp\n"},
		{"jsonl", `{"wirepath_trace":1}` + "\n",
			`{"send_ts":1700000000000000000,"recv_ts":null,"src":"10.0.0.9:51000","dst":"10.0.1.11:80","src_node":"cl\u00e9ent","dst_node":"web","bytes":320,"kind":"CALL","call_id":"c1","proto":"tcp"}` + "\n"},
		{"project5", "", "1047680084.482205\tCALL_SENT\tnodeA\tnodeB\tid37\n"},
		{"tsv evidence", strings.Join(TSVColumns, "\t") + "\t" + strings.Join(EvidenceColumnNames, "\t") + "\n",
			"1700000000000000000\t1700000000000031000\t10.0.0.9:51000\t10.0.1.11:80\tclient\tweb\t320\tCALL\tc1\ttcp\t7\t3\t-\t812/815\t-\tx-request-id:7f3a9c\tGET /item/{id}\t00000000000000ff,8a3c1e0f5b7d2c49\n"},
		{"jsonl evidence", `{"wirepath_trace":2}` + "\n",
			`{"send_ts":1700000000000000000,"src":"10.0.0.9:51000","bytes":320,"conn":7,"seq":3,"send_task":{"pid":812,"tid":815},"req_id":"x-request-id:7f3a9c","label":"GET /item/{id}","tokens":["00000000000000ff","8a3c1e0f5b7d2c49"]}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(repeat(tc.head, tc.body, 5000), tc.name, ReadOptions{Strict: true})
			for i := 0; i < 100; i++ {
				if !r.Scan() {
					t.Fatal(r.Err())
				}
			}
			allocs := testing.AllocsPerRun(1000, func() {
				if !r.Scan() {
					t.Fatal(r.Err())
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per message, want 0", allocs)
			}
		})
	}
}

func validStrings(t *Trace) bool {
	for i := 0; i < t.Syms.Len(); i++ {
		if !utf8.ValidString(t.Syms.String(Sym(i))) {
			return false
		}
	}
	return true
}

// checkRoundTrips asserts that a trace that was read writes and reads back
// to the same messages in TSV, and in JSON Lines when its strings are UTF-8.
func checkRoundTrips(t *testing.T, tr *Trace) {
	t.Helper()
	var tsv bytes.Buffer
	if err := WriteTSV(&tsv, tr); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(tsv.Bytes()), "rt.tsv", ReadOptions{Strict: true})
	if err != nil {
		t.Fatalf("TSV written does not read back: %v\n%s", err, tsv.Bytes())
	}
	if err := equalTraces(tr, back); err != nil {
		t.Fatalf("TSV round trip: %v", err)
	}
	if !validStrings(tr) {
		return
	}
	var js bytes.Buffer
	if err := WriteJSONL(&js, tr); err != nil {
		t.Fatal(err)
	}
	back, err = Read(bytes.NewReader(js.Bytes()), "rt.jsonl", ReadOptions{Strict: true})
	if err != nil {
		t.Fatalf("JSONL written does not read back: %v\n%s", err, js.Bytes())
	}
	if err := equalTraces(tr, back); err != nil {
		t.Fatalf("JSONL round trip: %v", err)
	}
}

func addSeeds(f *testing.F, files ...string) {
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzReadTSV: TSV input never panics, and what was read round-trips
// through both writers.
func FuzzReadTSV(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "cmd/wirepath/testdata/traces/*.tsv", "trace/testdata/*.tsv")
	addSeeds(f, "small.tsv", "plain.tsv")
	f.Add([]byte("send_ts\tsrc\n1\t\"a\\x00b\"\n"))                   // quoted field with an escape
	f.Add([]byte("send_ts\ttokens\tlabel\n1\tff,0\t-\n2\tx\t\"\"\n")) // evidence columns out of the usual order, a bad token
	f.Add([]byte("recv_ts\tsend_ts\n-\t-\n2\t-\n"))                   // neither time known, then one
	f.Add([]byte("send_ts\tbytes\n-9223372036854775808\t1\n"))        // NoTime itself
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), "f", ReadOptions{Format: FormatTSV})
		if err != nil {
			return
		}
		checkRoundTrips(t, tr)
	})
}

// FuzzReadJSONL: JSON Lines input never panics, what was read round-trips,
// and lines the lexer rejects are counted as skipped.
func FuzzReadJSONL(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "trace/testdata/*.jsonl*", "preload/testdata/sample.jsonl")
	addSeeds(f, "small.jsonl")
	f.Add([]byte(`{"send_ts":1,"src":"\ud800"}`))                                 // lone surrogate
	f.Add([]byte(`{"send_ts":1,"tokens":["f",1],"send_task":{"pid":1,"pid":2}}`)) // a bad token, a duplicate member
	f.Add([]byte(`{"wirepath_trace":1,"meta":{"source":1}}`))                     // bad meta
	f.Add([]byte("{\"send_ts\":1}\n\xff\n{\"recv_ts\":2}"))                       // garbage line between records
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), "f", ReadOptions{Format: FormatJSONL})
		if err != nil {
			return
		}
		checkRoundTrips(t, tr)
	})
}

// p5Reference is a slow, plain reading of one Project 5 line, for FuzzReadProject5.
func p5Reference(line string) (flat, bool) {
	f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(f) < 3 || len(f) > 5 {
		return flat{}, false
	}
	sec, frac, hasDot := strings.Cut(f[0], ".")
	if sec == "" || strings.TrimLeft(sec, "0123456789") != "" || (hasDot && (frac == "" || strings.TrimLeft(frac, "0123456789") != "")) {
		return flat{}, false
	}
	frac = (frac + "000000000")[:9]
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s >= maxSeconds {
		return flat{}, false
	}
	ns, _ := strconv.ParseInt(frac, 10, 64)
	ts := Timestamp(s*1e9 + ns)
	m := flat{SendTS: ts, RecvTS: ts}
	nodes := f[1:]
	if len(f) >= 4 {
		k, err := ParseKind(f[1])
		if err != nil {
			return flat{}, false
		}
		m.Kind = k
		nodes = f[2:]
	}
	dash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	m.SrcNode, m.DstNode = dash(nodes[0]), dash(nodes[1])
	if len(nodes) == 3 {
		m.CallID = dash(nodes[2])
	}
	return m, true
}

// FuzzReadProject5 compares the Project 5 reader line by line with a slow
// reference reading.
func FuzzReadProject5(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "trace/testdata/project5.txt")
	addSeeds(f, "project5.txt")
	f.Add([]byte("1.0000000001 a b\n")) // more than nine fractional digits
	f.Add([]byte("9223372036.9 a b\n")) // out of range
	f.Add([]byte("1. a b\n.5 a b\n"))   // malformed times
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), "f", ReadOptions{Format: FormatProject5})
		if err != nil {
			return // only over-long lines stop this reader
		}
		var want []flat
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSuffix(line, "\r")
			f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
			if len(f) == 0 || f[0][0] == '#' || (len(f) >= 3 && strings.EqualFold(f[0], "timestamp") && (strings.EqualFold(f[1], "operation") || strings.EqualFold(f[1], "sender"))) {
				continue
			}
			if m, ok := p5Reference(line); ok {
				want = append(want, m)
			}
		}
		got := flatten(tr)
		if len(got) != len(want) {
			t.Fatalf("%d messages, reference %d\n%+v\n%+v", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("message %d: %+v, reference %+v", i, got[i], want[i])
			}
		}
		checkRoundTrips(t, tr)
	})
}

// FuzzReadAuto feeds anything to format detection and decompression.
func FuzzReadAuto(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "cmd/wirepath/testdata/traces/*.tsv", "trace/testdata/*.tsv", "trace/testdata/*.jsonl*", "trace/testdata/project5.txt")
	addSeeds(f, "small.tsv", "small.jsonl", "project5.txt", "small.tsv.gz", "small.jsonl.zst")
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "f", ReadOptions{})
		tr, err := r.ReadAll()
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "f" {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		checkRoundTrips(t, tr)
	})
}

// TestRereadAccounting: reading a trace that a read wrote keeps one counter
// of each name, with the new values.
func TestRereadAccounting(t *testing.T) {
	tr, err := ReadFile(filepath.Join("testdata", "small.tsv"), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Messages = tr.Messages[:2]
	var buf bytes.Buffer
	WriteJSONL(&buf, tr)
	back, err := Read(&buf, "again", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range back.Meta.Accounting {
		if c.Stage == "trace" && c.Name == "messages_read" {
			n++
			if c.Value != 2 {
				t.Errorf("messages_read = %d, want 2", c.Value)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d messages_read counters: %+v", n, back.Meta.Accounting)
	}
}

// TestReaderTooLarge: a trace past what one in-memory trace holds ends the
// read with ErrTooLarge naming the line, not with a panic. (The limits are
// billions of messages or names; the test moves the reader to the edge.)
func TestReaderTooLarge(t *testing.T) {
	in := "send_ts\trecv_ts\tsrc_node\tdst_node\n1\t2\ta\tb\n3\t4\ta\tb\n"
	r := NewReader(strings.NewReader(in), "big.tsv", ReadOptions{})
	if !r.Scan() {
		t.Fatalf("first message: %v", r.Err())
	}
	r.n = maxMessages
	if r.Scan() {
		t.Fatal("read past the message limit")
	}
	var pe *ParseError
	if err := r.Err(); !errors.Is(err, ErrTooLarge) || !errors.As(err, &pe) || pe.Line != 3 || pe.File != "big.tsv" {
		t.Errorf("err %v, want ErrTooLarge at big.tsv:3", err)
	}
}
