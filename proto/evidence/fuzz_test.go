package evidence

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// checkBuilder asserts the properties every input keeps: a sorted,
// distinct token set within the cap, identifiers within theirs, and
// balanced counters.
func checkBuilder(t *testing.T, b *Builder) {
	t.Helper()
	toks := b.Tokens()
	if len(toks) > b.cfg.MaxTokens || len(b.IDs()) > b.cfg.MaxIDs {
		t.Fatalf("caps exceeded: %d tokens, %d ids", len(toks), len(b.IDs()))
	}
	for i := 1; i < len(toks); i++ {
		if toks[i-1] >= toks[i] {
			t.Fatalf("tokens not sorted and distinct: %x", toks)
		}
	}
	for _, id := range b.IDs() {
		if id.Source == "" || id.Value == "" || len(id.Value) > b.cfg.MaxValue {
			t.Fatalf("bad id %+v", id)
		}
	}
	if err := b.Stats.Check(); err != nil {
		t.Fatal(err)
	}
}

func checkLabel(t *testing.T, label string) {
	t.Helper()
	if len(label) > maxLabel+16 {
		t.Fatalf("label of %d bytes", len(label))
	}
	for _, c := range []byte(label) {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("label with control bytes: %q", label)
		}
	}
}

func FuzzHTTPRequest(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, l := range fuzzseed.Lines(f, 16, "cmd/wirepath/testdata/traces/rpc-small.tsv") {
		f.Add(l, l)
	}
	// A plain GET with a numeric segment and a query.
	f.Add([]byte("GET /item/42?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"), []byte(""))
	// A JSON body with nested values and a traceparent.
	f.Add([]byte("POST /o HTTP/1.1\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n"), []byte(`{"a":[1,"b",{"c":-2.5e3}]}`))
	// Absolute-form target, form body.
	f.Add([]byte("PUT http://h/p/q HTTP/1.0\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n"), []byte("a=1&b"))
	// Garbage and a bare line feed head.
	f.Add([]byte("\x00 \xff\n:\n"), []byte("{\"\\"))
	// A response-like head and every id header at once.
	f.Add([]byte("GET * HTTP/1.1\nb3: 1\nuber-trace-id: %3a\nsw8: 1-=-\ngrpc-trace-bin: AAA\nX-Amzn-Trace-Id: Root=\n\n"), []byte("[\"x\" ,"))
	f.Fuzz(func(t *testing.T, head, body []byte) {
		b := NewBuilder(Config{MaxTokens: 8, MaxIDs: 2, MaxValue: 40})
		b.Reset()
		checkLabel(t, b.HTTPRequest(head, body))
		checkBuilder(t, b)
		b.Reset()
		label, status := b.HTTPResponse(head, body)
		if (status == 0) != (label == "") || status < 0 || status > 999 {
			t.Fatalf("response label %q status %d", label, status)
		}
		checkBuilder(t, b)
	})
}

// FuzzJSON checks the tolerant scanner against encoding/json: on a valid
// document whose top level is an object or array and that has no escapes,
// the tokens are exactly the hashes of its string and number values.
func FuzzJSON(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "report/testdata/*.result.json", "cmd/wirepath/testdata/report/*.json")
	f.Add([]byte(`{"a":"x","b":[1,2.5,-3e2,"y"],"c":{"d":true,"e":null,"f":"z"}}`)) // every value type
	f.Add([]byte(`[ "k" , 0 ]`))                                                    // whitespace around values
	f.Add([]byte(`{"a":"x"`))                                                       // cut document
	f.Add([]byte(`{"\"":"\\"}`))                                                    // escapes: no oracle
	f.Fuzz(func(t *testing.T, p []byte) {
		b := NewBuilder(Config{MaxTokens: 1 << 10, MaxBytes: 1 << 20, MaxValue: 1 << 10})
		b.Reset()
		b.JSON(p)
		checkBuilder(t, b)
		t0 := bytes.TrimLeft(p, " \t\r\n")
		// Invalid UTF-8 is binary to the builder, U+FFFD to encoding/json:
		// no oracle.
		if !json.Valid(p) || !utf8.Valid(p) || bytes.IndexByte(p, '\\') >= 0 || len(t0) == 0 || (t0[0] != '{' && t0[0] != '[') {
			return
		}
		want := jsonValues(t, p)
		if got, w := b.Tokens(), hashes(want...); !slices.Equal(got, w) {
			t.Fatalf("%q: tokens %x, want %x (%q)", p, got, w, want)
		}
	})
}

// jsonValues returns the string and number values of a JSON document as
// encoding/json reads them, objects' keys left out. It reads the token
// stream rather than decoding into maps, which would keep only the last
// of two members with one name.
func jsonValues(t *testing.T, p []byte) []string {
	d := json.NewDecoder(bytes.NewReader(p))
	d.UseNumber()
	var out []string
	var inObject []bool // per open container: an object, not an array
	expectKey := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				inObject = append(inObject, v == '{')
				expectKey = v == '{'
				continue
			default:
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			if expectKey {
				expectKey = false
				continue
			}
			if v != "" && len(v) <= 1<<10 && !bytes.ContainsFunc([]byte(v), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				out = append(out, v)
			}
		case json.Number:
			out = append(out, string(v))
		}
		// A value ended: in an object the next token is a key.
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

func FuzzSQL(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for i, l := range fuzzseed.Lines(f, 16, "trace/testdata/small.tsv") {
		f.Add(l, i%2 == 0)
	}
	f.Add([]byte("SELECT a FROM t WHERE b = 'x' AND c = 1"), false)                     // label and literals
	f.Add([]byte("WITH q AS (SELECT 1) INSERT INTO z SELECT * FROM q"), false)          // WITH
	f.Add([]byte("select $a$ $$ $a$, E'\\'' from \"T\".\"U\" /* traceparent='"), false) // quotes and a cut comment
	f.Add([]byte("SELECT `a` FROM `b`.c WHERE d = \"e\\\"\" # x"), true)                // MySQL quoting
	f.Add([]byte("CREATE OR REPLACE TEMP VIEW"), false)                                 // object without a name
	f.Fuzz(func(t *testing.T, q []byte, mysql bool) {
		d := Postgres
		if mysql {
			d = MySQL
		}
		b := NewBuilder(Config{MaxTokens: 8, MaxValue: 32, MaxBytes: 64})
		b.Reset()
		label := b.SQL(q, d)
		checkLabel(t, label)
		if len(label) > maxLabel {
			t.Fatalf("label of %d bytes", len(label))
		}
		checkBuilder(t, b)
	})
}

func FuzzHeader(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, l := range fuzzseed.Lines(f, 16, "report/testdata/shop.result.json") {
		name, value, _ := bytes.Cut(l, []byte(":"))
		f.Add(name, value)
	}
	f.Add([]byte("traceparent"), []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
	f.Add([]byte("sw8"), []byte("1-YWJj-ZGVm-1-c3Zj"))
	f.Add([]byte("grpc-trace-bin"), []byte("AAAKq7zN3u8AAQIDBAUGBwgJCgsMDQ4PEAEAAQIDBAUGBwIB"))
	f.Add([]byte("tracestate"), []byte("a=1,b=2,,=,c"))
	f.Add([]byte("X-Foo-Id"), []byte("5b8aa5a2d2c872e8321cf37308d69df2"))
	f.Fuzz(func(t *testing.T, name, value []byte) {
		b := NewBuilder(Config{MaxIDs: 1})
		b.Reset()
		b.Header(name, value)
		checkBuilder(t, b)
		for _, id := range b.IDs() {
			if !utf8.ValidString(id.Source) {
				continue
			}
			if bytes.ContainsAny([]byte(id.Value), "\r\n\x00 ") && id.Source != SrcSW8 {
				t.Fatalf("id value with control bytes: %+v", id)
			}
		}
	})
}
