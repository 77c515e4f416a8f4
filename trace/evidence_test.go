package trace

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// evidenceWant is the ground truth of testdata/evidence.tsv and
// evidence.jsonl, written out by hand from the fixtures.
var evidenceWant = []flat{
	{1700000000000000000, 1700000000000031000, "10.0.0.9:51000", "10.0.1.11:80", "client", "web", "c1.0", 320, KindCall, ProtoTCP},
	{1700000000000100000, 1700000000000130000, "10.0.1.11:43000", "10.0.2.5:6379", "web", "db", "c2.0", 96, KindCall, ProtoTCP},
	{1700000000004000000, NoTime, "10.0.2.5:6379", "10.0.1.11:43000", "db", "web", "c2.0", 2048, KindReturn, ProtoTCP},
	{NoTime, 1700000000005200000, "10.0.1.11:80", "10.0.0.9:51000", "web", "client", "c1.0", 5120, KindReturn, ProtoTCP},
	{1700000000006000000, 1700000000006000500, "10.0.1.11:40000", "10.0.3.7:9092", "web", "kafka", "", 64, KindCall, ProtoTCP},
}

var evidenceWantEv = []flatEv{
	{1, 1, 0, Task{}, Task{812, 815}, "x-request-id:7f3a9c", "GET /item/{id}", "00000000000000ff,8a3c1e0f5b7d2c49"},
	{2, 1, 0, Task{812, 815}, Task{}, "traceparent:4bf92f3577b34da6a3ce929d0e0e4736", "redis GET", "8a3c1e0f5b7d2c49"},
	{2, 1, 0, Task{}, Task{812, 815}, "", "", "-"},
	{1, 1, 0, Task{812, 816}, Task{}, "x-request-id:7f3a9c", "200", "-"},
	{math.MaxUint32, math.MaxUint32, math.MaxUint64, Task{math.MaxInt32, math.MaxInt32}, Task{PID: 9}, "header:x-odd:a\tb", "-", "0000000000000000,ffffffffffffffff"},
}

// TestReadEvidenceFixtures reads the version-2 fixtures in both formats,
// whole and into a Table, and writes them back in the canonical forms.
func TestReadEvidenceFixtures(t *testing.T) {
	for _, file := range []string{"evidence.tsv", "evidence.jsonl"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", file)
			tr, err := ReadFile(path, ReadOptions{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			got, gotEv := flatten(tr), flattenEv(tr)
			if len(got) != len(evidenceWant) {
				t.Fatalf("%d messages, want %d", len(got), len(evidenceWant))
			}
			for i := range got {
				if got[i] != evidenceWant[i] || gotEv[i] != evidenceWantEv[i] {
					t.Errorf("message %d:\n got %+v %+v\nwant %+v %+v", i, got[i], gotEv[i], evidenceWant[i], evidenceWantEv[i])
				}
			}
			tab, err := ReadFileTable(path, ReadOptions{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := equalTraces(tab.Trace(), tr); err != nil {
				t.Errorf("ReadFileTable: %v", err)
			}
			if tab.EvidenceColumns() != AllEvidenceColumns {
				t.Errorf("table evidence columns %08b", tab.EvidenceColumns())
			}
			var tsv, js bytes.Buffer
			if err := WriteTSV(&tsv, tr); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSONL(&js, tr); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, file+".golden.tsv", tsv.Bytes())
			compareGolden(t, file+".golden.jsonl", js.Bytes())
			checkRoundTrips(t, tr)
		})
	}
}

// TestEvidenceVersion: a trace is written as version 2, with the evidence
// columns some message has, only when it has evidence; otherwise as
// version 1, the form older readers read.
func TestEvidenceVersion(t *testing.T) {
	tr := &Trace{}
	tr.Messages = []Message{{SendTS: 1, RecvTS: 2, SrcNode: tr.Intern("a"), DstNode: tr.Intern("b")}}
	for _, tc := range []struct {
		name             string
		ev               Evidence
		tsvHead, jsonTag string
	}{
		{"none", Evidence{}, TSVMagicV1 + "\n" + strings.Join(TSVColumns, "\t") + "\n", `{"wirepath_trace":1}`},
		{"conn", Evidence{Conn: 4}, TSVMagic + "\n" + strings.Join(TSVColumns, "\t") + "\tconn\n", `{"wirepath_trace":2}`},
		{"label and task", Evidence{Label: tr.Intern("GET /"), Receiver: Task{PID: 3}}, TSVMagic + "\n" + strings.Join(TSVColumns, "\t") + "\trecv_task\tlabel\n", `{"wirepath_trace":2}`},
	} {
		tr.Messages[0].Evidence = tc.ev
		var tsv, js bytes.Buffer
		WriteTSV(&tsv, tr)
		WriteJSONL(&js, tr)
		if !strings.HasPrefix(tsv.String(), tc.tsvHead) {
			t.Errorf("%s: TSV starts %q, want %q", tc.name, tsv.String(), tc.tsvHead)
		}
		if !strings.HasPrefix(js.String(), tc.jsonTag+"\n") {
			t.Errorf("%s: JSON Lines starts %q, want %q", tc.name, js.String(), tc.jsonTag)
		}
		checkRoundTrips(t, tr)
	}
}

// TestEvidenceRoundTrip: random evidence survives both formats, whole and
// through a Table, and a Table of the read messages equals one of the
// originals.
func TestEvidenceRoundTrip(t *testing.T) {
	tr := &Trace{}
	randomMessages(tr, 3000, 0.01, 11)
	for i := range tr.Messages {
		m := &tr.Messages[i]
		m.Bytes = max(m.Bytes, 0)
		if !m.SendTS.Known() && !m.RecvTS.Known() {
			m.SendTS = 1
		}
	}
	checkRoundTrips(t, tr)
	for _, f := range []Format{FormatTSV, FormatJSONL} {
		var buf bytes.Buffer
		if err := Write(&buf, tr, f); err != nil {
			t.Fatal(err)
		}
		tab, err := NewReader(&buf, "rt", ReadOptions{Strict: true}).ReadTable()
		if err != nil {
			t.Fatal(err)
		}
		if err := equalTraces(tab.Trace(), tr); err != nil {
			t.Errorf("%v into a Table: %v", f, err)
		}
	}
}

// TestOversizedEvidence: a label or request id too long is dropped and a
// token set too large is cut, each counted; the message is kept.
func TestOversizedEvidence(t *testing.T) {
	long := strings.Repeat("x", MaxLabel+1)
	toks := make([]string, MaxTokens+10)
	jtoks := make([]string, len(toks))
	for i := range toks {
		toks[i] = strings.Repeat("0", 12) + string(hexDigits[i>>8&15]) + string(hexDigits[i>>4&15]) + string(hexDigits[i&15]) + "1"
		jtoks[i] = `"` + toks[i] + `"`
	}
	for _, tc := range []struct{ name, in string }{
		{"tsv", "send_ts\tlabel\treq_id\ttokens\n1\t" + long + "\tx-request-id:" + long + "\t" + strings.Join(toks, ",") + "\n2\tok\t-\t-\n"},
		{"tsv canonical", strings.Join(TSVColumns, "\t") + "\tlabel\treq_id\ttokens\n1\t2\ta\tb\tc\td\t1\tCALL\t-\ttcp\t" + long + "\tx-request-id:" + long + "\t" + strings.Join(toks, ",") + "\n2\t3\ta\tb\tc\td\t1\tCALL\t-\ttcp\tok\t-\t-\n"},
		{"jsonl", `{"send_ts":1,"label":"` + long + `","req_id":"x-request-id:` + long + `","tokens":[` + strings.Join(jtoks, ",") + "]}\n" + `{"send_ts":2,"label":"ok"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, table := range []bool{false, true} {
				r := NewReader(strings.NewReader(tc.in), "big", ReadOptions{Strict: true})
				var tr *Trace
				if table {
					tab, err := r.ReadTable()
					if err != nil {
						t.Fatal(err)
					}
					tr = tab.Trace()
				} else {
					var err error
					if tr, err = r.ReadAll(); err != nil {
						t.Fatal(err)
					}
				}
				if len(tr.Messages) != 2 {
					t.Fatalf("%d messages, want 2", len(tr.Messages))
				}
				m := tr.Messages[0]
				if m.Label != 0 || m.ReqID != 0 || len(tr.Syms.Tokens(m.Tokens)) != MaxTokens || tr.Str(tr.Messages[1].Label) != "ok" {
					t.Errorf("label %q, req id %q, %d tokens", tr.Str(m.Label), tr.Str(m.ReqID), len(tr.Syms.Tokens(m.Tokens)))
				}
				if n, _ := tr.Meta.Count(StageTrace, CountOversized); n != 3 {
					t.Errorf("%s = %d, want 3", CountOversized, n)
				}
			}
		})
	}
}

// TestEvidenceErrors: a bad evidence value is a bad line that names its
// column, in every path of both readers.
func TestEvidenceErrors(t *testing.T) {
	canon := strings.Join(TSVColumns, "\t") + "\t" + strings.Join(EvidenceColumnNames, "\t") + "\n"
	line := func(ev ...string) string {
		return "1\t2\ta\tb\tc\td\t1\tCALL\t-\ttcp\t" + strings.Join(ev, "\t") + "\n"
	}
	for _, tc := range []struct{ name, in, column, msg string }{
		{"conn range", "send_ts\tconn\n1\t4294967296\n", "conn", "out of range"},
		{"conn sign", "send_ts\tconn\n1\t-1\n", "conn", "not a valid number"},
		{"seq", "send_ts\tseq\n1\tx\n", "seq", "not a valid number"},
		{"stream range", "send_ts\tstream\n1\t18446744073709551616\n", "stream", "out of range"},
		{"task tid", "send_ts\tsend_task\n1\t812/x\n", "send_task", "bad task"},
		{"task range", "send_ts\trecv_task\n1\t2147483648\n", "recv_task", "bad task"},
		{"task empty tid", "send_ts\trecv_task\n1\t5/\n", "recv_task", "bad task"},
		{"token hex", "send_ts\ttokens\n1\tabc,xyz\n", "tokens", "not 1 to 16 hex digits"},
		{"token long", "send_ts\ttokens\n1\t00000000000000001\n", "tokens", "not 1 to 16 hex digits"},
		{"token comma", "send_ts\ttokens\n1\tab,\n", "tokens", "ends with a comma"},
		{"label quote", "send_ts\tlabel\n1\t\"x\n", "label", "bad quoted field"},
		{"canonical conn", canon + line("x", "-", "-", "-", "-", "-", "-", "-"), "conn", "not a valid number"},
		{"canonical tokens", canon + line("1", "-", "-", "-", "-", "-", "-", "zz"), "tokens", "not 1 to 16 hex digits"},
		{"jsonl conn", `{"send_ts":1,"conn":4294967296}`, "conn", "out of range"},
		{"jsonl conn type", `{"send_ts":1,"conn":"1"}`, "conn", "wrong JSON type"},
		{"jsonl stream", `{"send_ts":1,"stream":-1}`, "stream", "out of range"},
		{"jsonl task", `{"send_ts":1,"send_task":{"pid":-1}}`, "send_task", "pid: integer out of range"},
		{"jsonl task type", `{"send_ts":1,"send_task":"812/815"}`, "send_task", "wrong JSON type"},
		{"jsonl tokens type", `{"send_ts":1,"tokens":"ff"}`, "tokens", "wrong JSON type"},
		{"jsonl token number", `{"send_ts":1,"tokens":[255]}`, "tokens", "wrong JSON type"},
		{"jsonl token null", `{"send_ts":1,"tokens":[null]}`, "tokens", "wrong JSON type"},
		{"jsonl token hex", `{"send_ts":1,"tokens":["0x1"]}`, "tokens", "not 1 to 16 hex digits"},
		{"jsonl label", `{"send_ts":1,"label":7}`, "label", "wrong JSON type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, table := range []bool{false, true} {
				r := NewReader(strings.NewReader(tc.in), "ev", ReadOptions{Strict: true})
				var err error
				if table {
					_, err = r.ReadTable()
				} else {
					_, err = r.ReadAll()
				}
				var pe *ParseError
				if !errors.As(err, &pe) || columnOf(err) != tc.column || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("table %v: err %v, want column %s: %s", table, err, tc.column, tc.msg)
				}
				// Not strict: the line is skipped and counted.
				tr, err := Read(strings.NewReader(tc.in), "ev", ReadOptions{})
				if err != nil || tr.Meta.SkippedLines() != 1 {
					t.Errorf("lenient: err %v, %d skipped", err, tr.Meta.SkippedLines())
				}
			}
		})
	}
}

// TestEvidenceTruncated cuts the evidence fixtures at every byte: the
// reader returns an error or a prefix of the messages (the last maybe cut
// inside a value), never panics.
func TestEvidenceTruncated(t *testing.T) {
	for _, file := range []string{"evidence.tsv", "evidence.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(data); n++ {
			for _, table := range []bool{false, true} {
				r := NewReader(bytes.NewReader(data[:n]), file, ReadOptions{})
				var tr *Trace
				if table {
					tab, err := r.ReadTable()
					if err != nil {
						continue
					}
					tr = tab.Trace()
				} else if tr, err = r.ReadAll(); err != nil {
					continue
				}
				got, gotEv := flatten(tr), flattenEv(tr)
				if len(got) > len(evidenceWant) {
					t.Fatalf("%s cut at %d: %d messages", file, n, len(got))
				}
				for i := range got {
					if (got[i] != evidenceWant[i] || gotEv[i] != evidenceWantEv[i]) && i != len(got)-1 {
						t.Fatalf("%s cut at %d: message %d = %+v %+v", file, n, i, got[i], gotEv[i])
					}
				}
			}
		}
	}
}

func TestTaskString(t *testing.T) {
	for _, tc := range []struct {
		task Task
		s    string
	}{{Task{}, "-"}, {Task{PID: 5}, "5"}, {Task{5, 6}, "5/6"}, {Task{0, 6}, "0/6"}, {Task{math.MaxInt32, 1}, "2147483647/1"}} {
		if got := tc.task.String(); got != tc.s {
			t.Errorf("%+v: %q, want %q", tc.task, got, tc.s)
		}
		back, err := ParseTask(tc.s)
		if err != nil || back != tc.task {
			t.Errorf("ParseTask(%q) = %+v, %v", tc.s, back, err)
		}
	}
}

// TestParseHash compares parseHash with strconv on every one- and
// two-byte input.
func TestParseHash(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		for _, in := range [][]byte{{byte(i)}, {byte(i >> 8), byte(i)}} {
			got, err := parseHash(in)
			want, werr := strconv.ParseUint(string(in), 16, 64)
			if werr == nil && (in[0] == '+' || in[0] == '-' || in[0] == '_') {
				werr = errors.New("a sign or underscore is no hex digit")
			}
			if (err == nil) != (werr == nil) || got != want && err == nil {
				t.Fatalf("%q: %x, %v; strconv %x, %v", in, got, err, want, werr)
			}
		}
	}
}

// TestTokensHex: a token set prints as 16-digit hashes and parses back,
// whatever the values.
func TestTokensHex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var st evidenceState
	var syms Symbols
	for range 1000 {
		toks := make([]uint64, rng.IntN(6)+1)
		for i := range toks {
			toks[i] = rng.Uint64() >> rng.IntN(64)
		}
		r, _ := syms.AddTokens(toks)
		text := appendTokens(nil, syms.Tokens(r))
		back, err := st.tokens(&syms, text)
		if err != nil || string(appendTokens(nil, syms.Tokens(back))) != string(text) {
			t.Fatalf("%s read back as %x (%v)", text, syms.Tokens(back), err)
		}
	}
}
