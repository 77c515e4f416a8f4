package preload

import (
	"bytes"

	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

const sampleTrace = `{"wirepath_preload":1,"tool":"libwpcap","host":"web1","pid":812,"ppid":1,"process":"nginx","exe":"/usr/sbin/nginx","start_ts":1700000000000000000}
{"ts":1700000000000100000,"tid":812,"call":"socket","ret":5,"sock":"tcp"}
{"ts":1700000000000200000,"dur":4000,"tid":812,"call":"connect","fd":5,"ret":-1,"errno":"EINPROGRESS","sock":"tcp","local":"10.0.0.1:43000","remote":"10.0.0.2:5432"}
{"ts":1700000000000300000,"dur":900,"tid":813,"call":"send","fd":5,"len":96,"ret":96}
{"ts":1700000000000400000,"dur":700,"tid":813,"call":"send","fd":5,"len":4096,"ret":1000}
{"ts":1700000000001000000,"dur":500,"tid":813,"call":"recv","fd":5,"len":8192,"ret":2048}
{"ts":1700000000001100000,"tid":813,"call":"recv","fd":5,"len":8192,"ret":10,"peek":true}
{"ts":1700000000001200000,"tid":812,"call":"sendto","fd":7,"len":40,"ret":40,"sock":"udp","local":"0.0.0.0:5353","peer":"10.0.0.9:53","sum":"0a0b0c0d"}
{"ts":1700000000002000000,"tid":812,"call":"future_call","fd":5,"novel":{"a":[1]}}
{"ts":1700000000002100000,"tid":812,"call":"dup2","fd":5,"ret":9}
{"ts":1700000000002200000,"tid":812,"call":"close","fd":5,"ret":0}
{"ts":1700000000002300000,"tid":812,"call":"write","fd":9,"len":5,"ret":5}
{"ts":1700000000002400000,"tid":812,"call":"close","fd":9,"ret":0}
{"ts":1700000000002500000,"tid":812,"call":"fork","ret":900}
{"ts":1700000000003000000,"pid":900,"tid":900,"call":"read","fd":3,"len":10,"ret":0,"sock":"unix-stream","local":"unix:/run/a.sock","peer_pid":812}
{"ts":1700000000003100000,"tid":812,"call":"end","records":14,"eagain_skipped":3,"write_errors":0}
`

// TestSampleFile keeps testdata/sample.jsonl (used by the CLI's golden
// tests) the same as sampleTrace.
func TestSampleFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "sample.jsonl"))
	if err != nil || string(data) != sampleTrace {
		t.Errorf("testdata/sample.jsonl differs from sampleTrace (%v)", err)
	}
}

func TestReadSample(t *testing.T) {
	r := NewReader(strings.NewReader(sampleTrace), "s.jsonl", Options{Strict: true})
	tab := NewTable()
	if err := tab.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	if r.Records() != 15 || len(r.Headers()) != 1 || r.Header().Process != "nginx" {
		t.Fatalf("records %d headers %+v", r.Records(), r.Headers())
	}
	c := tab.Counters
	want := Counters{Records: 15, DataCalls: 5, FailedCalls: 1, EmptyCalls: 1, PeekCalls: 1, SocketCalls: 4, ProcessCalls: 2, UnknownCalls: 1, EAGAINSkipped: 3}
	if c != want {
		t.Errorf("counters\n got %+v\nwant %+v", c, want)
	}
	tcp := tab.Conns[0]
	if tcp.Origin != OriginConnect || tcp.Local != "10.0.0.1:43000" || tcp.Remote != "10.0.0.2:5432" || tcp.Process != "nginx" {
		t.Errorf("tcp conn %+v", *tcp)
	}
	// Partial send counted by the bytes sent; offsets per direction; the
	// write after dup2 and close of the original lands on the same socket.
	if tcp.SentBytes != 1101 || tcp.RecvBytes != 2048 || len(tcp.Msgs) != 4 || tcp.Msgs[1].Offset != 96 || tcp.Msgs[3].Offset != 1096 || tcp.Msgs[3].Bytes != 5 {
		t.Errorf("tcp messages %+v", tcp.Msgs)
	}
	if tcp.Closed != 1700000000002400000 {
		t.Errorf("closed at %d, want when the last descriptor closed", tcp.Closed)
	}
	k := ProcKey{"web1", 812}
	if tab.Lookup(k, 5, 1700000000000300000) != tcp || tab.Lookup(k, 9, 1700000000002300000) != tcp ||
		tab.Lookup(k, 5, 1700000000002300000) != nil || tab.Lookup(k, 5, 1700000000000000000) != nil {
		t.Errorf("Lookup: fd 5 and its dup 9 are the tcp connection only while open")
	}
	if f := tab.Find("10.0.0.1:43000", "10.0.0.2:5432"); len(f) != 1 || f[0] != tcp {
		t.Errorf("Find: %v", f)
	}
	udp := tab.Conns[1]
	if udp.Sock != SockUDP || udp.Msgs[0].Peer != "10.0.0.9:53" || !udp.Msgs[0].HasSum || udp.Msgs[0].Sum != 0x0a0b0c0d {
		t.Errorf("udp %+v", *udp)
	}
	child := tab.Process(ProcKey{"web1", 900})
	if child == nil || len(child.Conns) != 1 || child.Conns[0].PeerPID != 812 || !child.Conns[0].EOF || child.Conns[0].Origin != OriginInherited {
		t.Errorf("child %+v", child)
	}
	if p := tab.Process(ProcKey{"web1", 812}); p == nil || len(p.Children) != 1 || p.Children[0] != 900 {
		t.Errorf("parent %+v", p)
	}
}

func TestReadErrors(t *testing.T) {
	hdr := `{"wirepath_preload":1,"host":"h","pid":1}` + "\n"
	for _, tc := range []struct {
		name, in, member, msg string
		line                  int
		fatal                 bool
	}{
		{"version", `{"wirepath_preload":3,"host":"h","pid":1}` + "\n", "", "unsupported preload trace version 3", 1, true},
		{"version 0", `{"wirepath_preload":0,"host":"h","pid":1}` + "\n", "", "unsupported preload trace version 0", 1, true},
		{"no ts", hdr + `{"call":"read"}` + "\n", "", `record without "ts"`, 2, false},
		{"no call", hdr + `{"ts":1}` + "\n", "", `record without "call"`, 2, false},
		{"bad fd", hdr + `{"ts":1,"call":"read","fd":"x"}` + "\n", "fd", "wrong JSON type", 2, false},
		{"bad sum", hdr + `{"ts":1,"call":"recv","sum":"zz"}` + "\n", "sum", "not 8 hex digits", 2, false},
		{"negative ts", hdr + `{"ts":-5,"call":"recv"}` + "\n", "ts", "negative timestamp", 2, false},
		{"garbage", hdr + "\n\nnot json\n", "", "not a JSON object", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in), "p.jsonl", Options{Strict: true})
			for r.Scan() {
			}
			var pe *ParseError
			var me *MemberError
			member := ""
			if errors.As(r.Err(), &me) {
				member = me.Member
			}
			if !errors.As(r.Err(), &pe) || pe.Line != tc.line || member != tc.member || !strings.Contains(pe.Error(), tc.msg) ||
				!strings.HasPrefix(pe.Error(), fmt.Sprintf("p.jsonl:%d: ", tc.line)) {
				t.Fatalf("err = %v, want line %d member %q containing %q", r.Err(), tc.line, tc.member, tc.msg)
			}
			r = NewReader(strings.NewReader(tc.in), "p.jsonl", Options{})
			for r.Scan() {
			}
			if (r.Err() != nil) != tc.fatal {
				t.Errorf("lenient: err = %v", r.Err())
			}
			if !tc.fatal && (r.Skipped() != 1 || len(r.Warnings()) != 1 || len(r.Problems()) != 1 || r.Problems()[0].Line != tc.line) {
				t.Errorf("lenient: skipped %d, warnings %q", r.Skipped(), r.Warnings())
			}
		})
	}
}

// TestReadVersion2 reads the end record's version-2 counters.
func TestReadVersion2(t *testing.T) {
	in := `{"wirepath_preload":2,"tool":"libwpcap","host":"h","pid":7}
{"ts":1,"call":"end","records":3,"eagain_skipped":0,"write_errors":1,"lost_records":4,"log_reopens":2}
`
	tab := NewTable()
	if err := tab.ReadFrom(NewReader(strings.NewReader(in), "v2.jsonl", Options{Strict: true})); err != nil {
		t.Fatal(err)
	}
	want := Counters{Records: 1, ProcessCalls: 1, WriteErrors: 1, LostRecords: 4, LogReopens: 2}
	if tab.Counters != want {
		t.Errorf("counters\n got %+v\nwant %+v", tab.Counters, want)
	}
	var b bytes.Buffer
	w := NewWriter(&b)
	w.WriteRecord(&Record{TS: 1, Call: CallEnd, Records: 3, WriteErrors: 1, LostRecords: 4, LogReopens: 2})
	w.Flush()
	if got := b.String(); !strings.Contains(got, `"lost_records":4,"log_reopens":2}`) {
		t.Errorf("written: %s", got)
	}
}

// TestReadTruncated cuts a trace at every byte: the reader returns a
// prefix of the records and never more, and fails only with a ParseError.
func TestReadTruncated(t *testing.T) {
	data := []byte(sampleTrace)
	for n := 0; n <= len(data); n++ {
		r := NewReader(bytes.NewReader(data[:n]), "cut", Options{})
		got := 0
		for r.Scan() {
			got++
		}
		if r.Err() != nil || got > 15 {
			t.Fatalf("cut at %d: %d records, err %v", n, got, r.Err())
		}
	}
}

func TestReaderNoAllocs(t *testing.T) {
	line := `{"ts":1700000000000400000,"dur":700,"tid":813,"call":"sendto","fd":5,"len":4096,"ret":1000,"sock":"udp","local":"10.0.0.1:43000","peer":"10.0.0.2:53","sum":"0a0b0c0d"}` + "\n"
	r := NewReader(io.MultiReader(strings.NewReader(sampleTrace[:strings.IndexByte(sampleTrace, '\n')+1]), strings.NewReader(strings.Repeat(line, 2000))), "x", Options{Strict: true})
	for i := 0; i < 10; i++ {
		r.Scan()
	}
	if a := testing.AllocsPerRun(1000, func() {
		if !r.Scan() {
			t.Fatal(r.Err())
		}
	}); a != 0 {
		t.Errorf("%v allocations per record", a)
	}
}

// recordsOf reads all records of data strictly.
func recordsOf(t *testing.T, data []byte) []Record {
	t.Helper()
	r := NewReader(bytes.NewReader(data), "rt", Options{Strict: true})
	var out []Record
	for r.Scan() {
		out = append(out, *r.Record())
	}
	if r.Err() != nil {
		t.Fatalf("%v\n%s", r.Err(), data)
	}
	return out
}

// FuzzReader: any input is read without panicking; what was read is
// written by the Writer and reads back to the same records.
func FuzzReader(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "preload/testdata/*.jsonl")
	f.Add([]byte(sampleTrace))
	f.Add([]byte(`{"ts":1,"call":"recv","pid":5,"host":"h","process":"p"}`)) // record before any header, with its own names
	f.Add([]byte(`{"wirepath_preload":1,"pid":1}` + "\n" + `{"ts":1,"call":"x\u00e9","sum":"FFFFFFFF"}`))
	f.Add([]byte(`{"wirepath_preload":1,"pid":1,"host":5}`)) // bad header member type
	for _, name := range []string{"udp", "unix"} {
		data, err := os.ReadFile(filepath.Join("testdata", "strace", name+".strace"))
		if err == nil {
			var out bytes.Buffer
			ConvertStrace(bytes.NewReader(data), name, NewWriter(&out), StraceOptions{Host: "h"})
			f.Add(out.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "f", Options{})
		var buf bytes.Buffer
		w := NewWriter(&buf)
		var recs []Record
		nh := 0
		for r.Scan() {
			for ; nh < len(r.Headers()); nh++ {
				h := *r.Headers()[nh]
				w.WriteHeader(&h)
			}
			rec := *r.Record()
			recs = append(recs, rec)
			if rec.Host != "" && (r.Header() == nil || r.Header().Host != rec.Host) {
				return // per-record host overrides are read, not written
			}
			if rec.Process != "" && (r.Header() == nil || r.Header().Process != rec.Process) && !(r.Header() != nil && r.Header().PID != rec.PID) {
				return
			}
			w.WriteRecord(&rec)
		}
		if r.Err() != nil {
			var pe *ParseError
			if !errors.As(r.Err(), &pe) || pe.File != "f" {
				t.Fatalf("error %v does not name the file", r.Err())
			}
			return
		}
		w.Flush()
		back := recordsOf(t, buf.Bytes())
		if len(back) != len(recs) {
			t.Fatalf("%d records, %d after a round trip\n%s", len(recs), len(back), buf.Bytes())
		}
		for i := range recs {
			a, b := recs[i], back[i]
			a.Host, b.Host, a.Process, b.Process = "", "", "", ""
			if a != b {
				t.Fatalf("record %d:\n%+v\n%+v\n%s", i, a, b, buf.Bytes())
			}
		}
		tab := NewTable()
		for i := range recs {
			tab.Add(&recs[i])
		}
		c := tab.Counters
		if c.DataCalls+c.FailedCalls+c.EmptyCalls+c.PeekCalls+c.SocketCalls+c.ProcessCalls+c.UnknownCalls != c.Records {
			t.Fatalf("table accounting %+v", c)
		}
	})
}

// FuzzStrace: any input converts without panicking, the accounting adds
// up, and the output is a valid preload trace with as many records.
func FuzzStrace(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "preload/testdata/strace/*.strace")
	for _, name := range []string{"udp", "unix", "httpsrv"} {
		data, err := os.ReadFile(filepath.Join("testdata", "strace", name+".strace"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("[pid  12] 1.5 read(3<TCP:[1.2.3.4:5->6.7.8.9:10]>, \"a\\x\"..., 5) = 5\n"))                                                                                                                                                         // bad escape, [pid N] prefix
	f.Add([]byte("7 1.000001 recvfrom(3<UDP:[[::1]:53]>, \"\\0\\377\", 9, MSG_PEEK, {sa_family=AF_INET6, sin6_port=htons(9), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, \"::ffff:1.2.3.4\", &sin6_addr), sin6_scope_id=0}, [28]) = 2 <0.000010>\n")) // IPv6, -T
	f.Add([]byte("7 1.0 connect(3<UNIX-STREAM:[1]>, {sa_family=AF_UNIX, sun_path=@\"abs\"}, 110 <unfinished ...>\n7 1.1 <... connect resumed>) = -1 ENOENT (x)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		st, err := ConvertStrace(bytes.NewReader(data), "f", NewWriter(&out), StraceOptions{Host: "h"})
		if err != nil {
			return // over-long lines only
		}
		if st.Lines != st.Converted+st.Ignored+st.Unfinished+st.Skipped || st.Records < st.Converted {
			t.Fatalf("accounting %+v", st)
		}
		if got := int64(len(recordsOf(t, out.Bytes()))); got != st.Records {
			t.Fatalf("%d records written, %d read back", st.Records, got)
		}
	})
}

// TestReadFilesCompressed reads the sample gzip- and zstd-compressed, and
// names the file of a bad compressed one.
func TestReadFilesCompressed(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write([]byte(sampleTrace))
	gw.Close()
	var zs bytes.Buffer
	zw, _ := zstd.NewWriter(&zs)
	zw.Write([]byte(sampleTrace))
	zw.Close()
	paths := []string{filepath.Join(dir, "a.jsonl.gz"), filepath.Join(dir, "b.jsonl.zst")}
	os.WriteFile(paths[0], gz.Bytes(), 0o644)
	os.WriteFile(paths[1], zs.Bytes(), 0o644)
	tab, err := ReadFiles(Options{Strict: true}, paths...)
	if err != nil || tab.Counters.Records != 30 {
		t.Fatalf("records %d, err %v", tab.Counters.Records, err)
	}
	bad := filepath.Join(dir, "bad.jsonl.gz")
	os.WriteFile(bad, gz.Bytes()[:gz.Len()/2], 0o644)
	if _, err := ReadFiles(Options{}, bad); err == nil || !strings.HasPrefix(err.Error(), bad+":") {
		t.Errorf("cut gzip file: err = %v", err)
	}
}
