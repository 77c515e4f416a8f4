package trace

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

func TestTSVRoundTrip(t *testing.T) {
	tr := &Trace{Meta: Meta{Source: "test", Offsets: []Offset{{Node: "b", Reference: "a", Known: true, OffsetNS: -5}}}}
	tr.Messages = []Message{
		{SendTS: 1, RecvTS: 2, Src: tr.Intern("10.0.0.1:5000"), Dst: tr.Intern("10.0.0.2:80"), SrcNode: tr.Intern("a"), DstNode: tr.Intern("b"), Bytes: 10, Kind: KindCall, CallID: tr.Intern("c1"), Proto: ProtoTCP},
		{SendTS: NoTime, RecvTS: 7, Src: tr.Intern("-"), Dst: tr.Intern("we\tird"), SrcNode: tr.Intern(`"q"`), DstNode: 0, Bytes: 0, Kind: KindReturn},
	}
	var buf bytes.Buffer
	if err := WriteTSV(&buf, tr); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTSV(&buf, "x", ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != len(tr.Messages) {
		t.Fatalf("got %d messages", len(got.Messages))
	}
	for i := range tr.Messages {
		a, b := tr.Messages[i], got.Messages[i]
		if a.SendTS != b.SendTS || a.RecvTS != b.RecvTS || a.Bytes != b.Bytes || a.Kind != b.Kind || a.Proto != b.Proto ||
			tr.Str(a.Src) != got.Str(b.Src) || tr.Str(a.Dst) != got.Str(b.Dst) || tr.Str(a.SrcNode) != got.Str(b.SrcNode) ||
			tr.Str(a.DstNode) != got.Str(b.DstNode) || tr.Str(a.CallID) != got.Str(b.CallID) {
			t.Errorf("message %d: %+v != %+v", i, a, b)
		}
	}
	if off, ok := got.Meta.OffsetOf("b"); !ok || off != -5 {
		t.Errorf("meta offsets lost: %+v", got.Meta)
	}
}

func TestTSVErrorsNameLineAndColumn(t *testing.T) {
	in := "send_ts\trecv_ts\tsrc_node\tdst_node\n1\t2\ta\tb\nx\t2\ta\tb\n3\t4\ta\n"
	_, err := ReadTSV(strings.NewReader(in), "f.tsv", ReadOptions{Strict: true})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || columnOf(err) != "send_ts" || pe.Offset != int64(strings.Index(in, "x\t")) {
		t.Fatalf("err = %v", err)
	}
	if got := err.Error(); !strings.HasPrefix(got, "f.tsv:3: column send_ts:") {
		t.Errorf("message %q", got)
	}
	tr, err := ReadTSV(strings.NewReader(in), "f.tsv", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 1 || len(tr.Meta.Warnings) != 2 {
		t.Errorf("lenient read: %d messages, warnings %q", len(tr.Messages), tr.Meta.Warnings)
	}
}

// TestParseIntMatchesStrconv checks the allocation-free integer parser
// (eight digits at a time) against strconv on numbers of every length,
// signs, the int64 limits and malformed fields.
func TestParseIntMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []string{"0", "-0", "+7", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "99999999999999999999", "1700000000000000000", "12345678",
		"1234567a", "12345678a", "/2345678", ":2345678", "1234 678", "", "-", "+", "1e9", "\x801234567"}
	for i := 0; i < 20000; i++ {
		v := rng.Int64() >> rng.IntN(63)
		if rng.IntN(4) == 0 {
			v = -v
		}
		cases = append(cases, strconv.FormatInt(v, 10))
	}
	for _, c := range cases {
		got, err := parseInt([]byte(c))
		want, werr := strconv.ParseInt(c, 10, 64)
		if (err != nil) != (werr != nil) || err == nil && got != want {
			t.Errorf("parseInt(%q) = %d, %v; strconv says %d, %v", c, got, err, want, werr)
		}
	}
}

// TestSpanCache: reading with the cache of (src, dst, src_node, dst_node)
// spans gives what reading field by field gives, on lines that repeat
// spans, change one name of a span, quote names, leave fields empty or
// "-", and end with the span; and on enough new spans to turn it off.
func TestSpanCache(t *testing.T) {
	var b strings.Builder
	b.WriteString("send_ts\tbytes\tsrc\tdst\tsrc_node\tdst_node\n")
	rng := rand.New(rand.NewPCG(3, 3))
	names := []string{"a:1", "b:2", "a", "b", `"q\tx"`, "-", "", "c:3"}
	for i := 0; i < 40000; i++ {
		f := [4]string{"a:1", "b:2", "a", "b"}
		if rng.IntN(4) == 0 {
			f[rng.IntN(4)] = names[rng.IntN(len(names))]
		}
		if i > 3000 { // new spans all the time
			f[0] = "10.0.0.1:" + strconv.Itoa(i)
		}
		b.WriteString(strconv.Itoa(i) + "\t" + strconv.Itoa(i%7) + "\t" + strings.Join(f[:], "\t") + "\n")
	}
	read := func(cache bool) (*Trace, *tsvDecoder) {
		tr := &Trace{}
		d := newTSVDecoder(tr, &evidenceState{})
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			m := Message{SendTS: NoTime, RecvTS: NoTime}
			ok, err := d.decode([]byte(line), &m)
			if !cache {
				d.span = -1
			}
			if err != nil {
				t.Fatal(err)
			} else if ok {
				tr.Messages = append(tr.Messages, m)
			}
		}
		return tr, &d
	}
	plain, _ := read(false)
	cached, d := read(true)
	if err := equalTraces(plain, cached); err != nil {
		t.Fatal(err)
	}
	if len(plain.Messages) != 40000 || d.cache.hits < 1000 || d.cache.on {
		t.Fatalf("%d messages, %d cache hits, cache on at the end: %v", len(plain.Messages), d.cache.hits, d.cache.on)
	}
}

// FuzzParseCanonical: the one-pass parser of the usual columns accepts
// only lines the general parser accepts, and reads them the same; an
// error it reports in an evidence column is the general parser's error.
// Odd cases run with the evidence columns WriteTSV writes after the usual
// ones, even ones without.
func FuzzParseCanonical(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, l := range fuzzseed.Lines(f, 64, "cmd/wirepath/testdata/traces/*.tsv", "trace/testdata/*.tsv") {
		f.Add(l)
	}
	for _, seed := range []string{
		"1700000000000000000\t1700000000000031000\t10.0.0.9:51000\t10.0.1.11:80\tclient\tweb\t320\tCALL\t-\ttcp", // usual
		"-\t1700000000005200000\t10.0.1.11:80\t10.0.0.9:51000\tweb\tclient\t5120\tRETURN\tq1\ttcp",               // send unseen
		"1\t2\ta\tb\tc\td\t-\t-\t-\t-",                   // short numbers, every dash
		"9223372036854775808\t1\ta\tb\tc\td\t1\t-\t-\t-", // 19 digits, out of range
		"1\t2\t\"q\\tx\"\tb\tc\td\t1\t-\t-\tudp",         // quoted name: general path
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\textra",       // a field too many
		"1\t2\ta\tb\tc\td\t1\tcall\tx\tTCP",              // lower-case kind
		// with the evidence columns:
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\t7\t3\t-\t812/813\t-\ttraceparent:4bf9\tGET /a\t00000000000000ff,0000000000000100", // every kind of value
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\t-\t-\t-\t-\t-\t-\t-\t-",                                                           // every dash
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\t4294967296\t-\t-\t-\t-\t-\t-\t-",                                                  // conn out of range: an error
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\t1\t1\t1\t1/x\t-\t-\t-\t-",                                                         // bad task
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\t1\t1\t1\t-\t-\t\"q\\tr\"\t\"l\"\tff,",                                             // quoted names, a list ending in a comma
		"1\t2\ta\tb\tc\td\t1\tCALL\tx\ttcp\t1\t1\t1\t-\t-\t-\t-",                                                              // a field too few
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) == 0 || bytes.ContainsAny(line, "\r\n") || line[0] == '#' {
			return
		}
		header := strings.Join(TSVColumns, "\t")
		if len(line)%2 == 1 {
			header += "\t" + strings.Join(EvidenceColumnNames, "\t")
		}
		tr := &Trace{}
		d := newTSVDecoder(tr, &evidenceState{})
		if _, err := d.decode([]byte(header), nil); err != nil || !d.canonical {
			t.Fatal("canonical header not recognised", err)
		}
		d.lines = cacheAfter - 1 // with the caches on

		fast := Message{SendTS: NoTime, RecvTS: NoTime}
		ok, ferr := d.parseCanonical(line, &fast)
		if !ok && ferr == nil {
			return
		}
		slow := Message{SendTS: NoTime, RecvTS: NoTime}
		serr := d.parse(line, &slow)
		if ferr != nil {
			if serr == nil || serr.Error() != ferr.Error() {
				t.Fatalf("%q: fast path error %v, parser %v", line, ferr, serr)
			}
			return
		}
		if serr != nil {
			t.Fatalf("%q: fast path accepted what the parser rejects: %v", line, serr)
		}
		// Each reading interned its own copy of the token set.
		if !slices.Equal(tr.Syms.Tokens(fast.Tokens), tr.Syms.Tokens(slow.Tokens)) {
			t.Fatalf("%q: fast tokens %x, parser %x", line, tr.Syms.Tokens(fast.Tokens), tr.Syms.Tokens(slow.Tokens))
		}
		fast.Tokens, slow.Tokens = 0, 0
		if fast != slow {
			t.Fatalf("%q: fast %+v, parser %+v", line, fast, slow)
		}
	})
}
