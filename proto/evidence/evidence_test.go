package evidence

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	farm "github.com/dgryski/go-farm"
	"github.com/wirepath/wirepath/proto"
)

// hashes returns the sorted distinct Fingerprint64 of words: the token set
// a test expects.
func hashes(words ...string) []uint64 {
	var h []uint64
	for _, w := range words {
		h = append(h, farm.Fingerprint64([]byte(w)))
	}
	slices.Sort(h)
	return slices.Compact(h)
}

func checkSet(t *testing.T, b *Builder, want ...string) {
	t.Helper()
	if got, w := b.Tokens(), hashes(want...); !slices.Equal(got, w) {
		t.Errorf("tokens: got %d %x, want %d (%q)", len(got), got, len(w), want)
	}
	if err := b.Stats.Check(); err != nil {
		t.Error(err)
	}
}

func TestHTTPRequest(t *testing.T) {
	tests := []struct {
		name, head, body string
		label            string
		tokens           []string
		ids              []proto.ID
	}{
		{
			name:   "route with numeric and uuid segments and a query",
			head:   "GET /item/12345/owner/0b9c2f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f?sort=asc&page=2 HTTP/1.1\r\nHost: shop\r\n\r\n",
			label:  "GET /item/{id}/owner/{id}",
			tokens: []string{"GET", "item", "12345", "owner", "0b9c2f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f", "asc", "2"},
		},
		{
			name:   "hex segment collapsed, a word kept",
			head:   "DELETE /cart/9f86d081884c/deadbeef HTTP/1.1\r\n\r\n",
			label:  "DELETE /cart/{id}/deadbeef",
			tokens: []string{"DELETE", "cart", "9f86d081884c", "deadbeef"},
		},
		{
			name:   "absolute form target, JSON body values not keys",
			head:   "POST http://api.example/orders HTTP/1.1\r\nContent-Type: application/json\r\nX-User-Id: u-77\r\n\r\n",
			body:   `{"sku":"A-100","qty":3,"tags":["red", 7.5],"ok":true}`,
			label:  "POST /orders",
			tokens: []string{"POST", "orders", "u-77", "A-100", "3", "red", "7.5"},
		},
		{
			name:   "form body",
			head:   "POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n",
			body:   "user=ann&next=%2Fhome",
			label:  "POST /login",
			tokens: []string{"POST", "login", "ann", "%2Fhome"},
		},
		{
			name:   "propagated ids, credentials never taken",
			head:   "GET / HTTP/1.1\r\ntraceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01\r\nX-Request-ID: req-1\r\nAuthorization: Bearer 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\r\nX-Api-Key: 9f86d081884c7d659a2feaa0c55ad015\r\nX-Span: 5b8aa5a2d2c872e8321cf37308d69df2\r\n\r\n",
			label:  "GET /",
			tokens: []string{"GET"},
			ids: []proto.ID{
				{Source: SrcTraceparent, Value: "4bf92f3577b34da6a3ce929d0e0e4736"},
				{Source: SrcRequestID, Value: "req-1"},
				{Source: "header:x-span", Value: "5b8aa5a2d2c872e8321cf37308d69df2"},
			},
		},
		{
			name:   "cut JSON: the value cut by the end is left out",
			head:   "PUT /v1/k HTTP/1.1\r\n\r\n",
			body:   `{"a":"whole","b":"cu`,
			label:  "PUT /v1/k",
			tokens: []string{"PUT", "v1", "k", "whole"},
		},
		{
			name:  "not a request line",
			head:  "\x16\x03\x01\x02\x00",
			label: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(Config{})
			b.Reset()
			if got := b.HTTPRequest([]byte(tt.head), []byte(tt.body)); got != tt.label {
				t.Errorf("label %q, want %q", got, tt.label)
			}
			checkSet(t, b, tt.tokens...)
			if !slices.Equal(b.IDs(), tt.ids) {
				t.Errorf("ids %v, want %v", b.IDs(), tt.ids)
			}
		})
	}
}

func TestHTTPResponse(t *testing.T) {
	b := NewBuilder(Config{})
	b.Reset()
	label, status := b.HTTPResponse([]byte("HTTP/1.1 404 Not Found\r\ntraceresponse: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nContent-Type: application/json\r\n\r\n"), []byte(`{"error":"no such item","id":12345}`))
	if label != "404" || status != 404 || StatusClass(status) != "4xx" {
		t.Errorf("got %q %d %q", label, status, StatusClass(status))
	}
	checkSet(t, b, "no such item", "12345")
	if want := []proto.ID{{Source: SrcTraceresponse, Value: "0af7651916cd43dd8448eb211c80319c"}}; !slices.Equal(b.IDs(), want) {
		t.Errorf("ids %v", b.IDs())
	}
}

func TestHeaderIDs(t *testing.T) {
	ctx := make([]byte, 29) // OpenCensus binary trace context
	ctx[0], ctx[1], ctx[18], ctx[27] = 0, 0, 1, 2
	for i := range 16 {
		ctx[2+i] = byte(0xa0 + i)
	}
	b64 := base64.StdEncoding.EncodeToString(ctx)
	tests := []struct {
		name, value string
		want        *proto.ID // nil: no id
	}{
		{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", &proto.ID{Source: SrcTraceparent, Value: "0af7651916cd43dd8448eb211c80319c"}},
		{"traceparent", "00-00000000000000000000000000000000-b7ad6b7169203331-01", nil}, // all-zero trace id is invalid
		{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01", nil},   // short parent id
		{"Traceparent", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", &proto.ID{Source: SrcTraceparent, Value: "0af7651916cd43dd8448eb211c80319c"}},
		{"b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90", &proto.ID{Source: SrcB3, Value: "80f198ee56343ba864fe8b2a57d3eff7"}},
		{"b3", "a3ce929d0e0e4736-e457b5a2e4d86bd1-1", &proto.ID{Source: SrcB3, Value: "0000000000000000a3ce929d0e0e4736"}},
		{"b3", "1", nil}, // sampling only
		{"X-B3-TraceId", "A3CE929D0E0E4736", &proto.ID{Source: SrcB3TraceID, Value: "0000000000000000a3ce929d0e0e4736"}},
		{"uber-trace-id", "5fbe1f1a3c2d4b6a:7f2b:0:1", &proto.ID{Source: SrcUber, Value: "00000000000000005fbe1f1a3c2d4b6a"}},
		{"uber-trace-id", "5fbe1f1a3c2d4b6a%3A7f2b%3A0%3A1", &proto.ID{Source: SrcUber, Value: "00000000000000005fbe1f1a3c2d4b6a"}},
		{"sw8", "1-" + base64.StdEncoding.EncodeToString([]byte("a1b2.33.1690000000001")) + "-c2Vn-3-c3Zj-aW5z-L2FwaQ==-aG9zdA==", &proto.ID{Source: SrcSW8, Value: "a1b2.33.1690000000001"}},
		{"sw8", "1-!!!-x", nil},
		{"X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", &proto.ID{Source: SrcAmzn, Value: "1-5759e988-bd862e3fe1be46a994272793"}},
		{"X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/1;o=1", &proto.ID{Source: SrcCloudTrace, Value: "105445aa7843bc8bf206b12000100000"}},
		{"grpc-trace-bin", b64, &proto.ID{Source: SrcGRPCTraceBin, Value: "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"}},
		{"grpc-trace-bin", strings.TrimRight(b64, "="), &proto.ID{Source: SrcGRPCTraceBin, Value: "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"}},
		{"grpc-trace-bin", string(ctx), &proto.ID{Source: SrcGRPCTraceBin, Value: "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"}},
		{"X-Correlation-ID", "order-42", &proto.ID{Source: SrcCorrelationID, Value: "order-42"}},
		{"X-Request-Id", "has space", nil},
		{"X-Trace", "f3a9c1d2-4b5e-4f60-8a7b-9c0d1e2f3a4b", &proto.ID{Source: "header:x-trace", Value: "f3a9c1d2-4b5e-4f60-8a7b-9c0d1e2f3a4b"}},
		{"X-Thing", "application-json-text-value1", nil},  // words: no upper case
		{"X-Thing", "0000000000000000", nil},              // low entropy
		{"Cookie", "sid=9f86d081884c7d659a2feaa0c5", nil}, // credential
		{"X-Session-Id", "9f86d081884c7d659a2feaa0c55ad015", nil},
	}
	for _, tt := range tests {
		b := NewBuilder(Config{})
		b.Reset()
		b.Header([]byte(tt.name), []byte(tt.value))
		var want []proto.ID
		if tt.want != nil {
			want = []proto.ID{*tt.want}
		}
		if got := b.IDs(); !slices.Equal(got, want) {
			t.Errorf("%s: %q: got %v, want %v", tt.name, tt.value, got, want)
		}
		if err := b.Stats.Check(); err != nil {
			t.Error(err)
		}
	}
}

func TestHighEntropy(t *testing.T) {
	for v, want := range map[string]bool{
		"5b8aa5a2d2c872e8321cf37308d69df2":     true,  // hex
		"f3a9c1d2-4b5e-4f60-8a7b-9c0d1e2f3a4b": true,  // UUID
		"Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==":     true,  // base64
		"1700000000123456789":                  true,  // a long number
		"aaaaaaaaaaaaaaaa1":                    false, // few distinct characters
		"short1":                               false,
		"Mon, 02 Jan 2006 15:04:05 GMT":        false, // spaces, commas
		"application/x-www-form-urlencoded":    false, // no digit
		"text/html;charset=utf-8":              false,
	} {
		if got := HighEntropy([]byte(v)); got != want {
			t.Errorf("HighEntropy(%q) = %v", v, got)
		}
	}
}

func TestSQL(t *testing.T) {
	tests := []struct {
		d      Dialect
		q      string
		label  string
		tokens []string
	}{
		{Postgres, "SELECT id, name FROM users WHERE id = 42 AND name = 'ann'", "SELECT users", []string{"42", "ann"}},
		{Postgres, "select * from Public.Accounts a join x on a.id=x.id where a.n > 1.5e3", "SELECT public.accounts", []string{"1.5e3"}},
		{Postgres, `SELECT (SELECT max(v) FROM t2), 'it''s' FROM "Orders"`, "SELECT Orders", []string{"it''s"}},
		{Postgres, "SELECT now()", "SELECT", nil},
		{Postgres, "  /* app */ -- note\n INSERT INTO orders (sku, qty) VALUES ($1, $2)", "INSERT orders", nil},
		{Postgres, "WITH r AS (SELECT * FROM a WHERE k = 'x') UPDATE b SET v = 1 FROM r", "UPDATE b", []string{"x", "1"}},
		{Postgres, "DELETE FROM ONLY sessions WHERE exp < 100", "DELETE sessions", []string{"100"}},
		{Postgres, "CREATE TABLE IF NOT EXISTS t (a int)", "CREATE TABLE t", nil},
		{Postgres, "COPY items FROM STDIN", "COPY items", nil},
		{Postgres, "SELECT $$dollar 'quoted'$$, $tag$x$tag$ FROM d", "SELECT d", []string{"dollar 'quoted'", "x"}},
		{Postgres, "BEGIN", "BEGIN", nil},
		{MySQL, "SELECT * FROM `shop`.`items` WHERE sku = \"A-1\" AND note = 'a\\'b' # tail", "SELECT shop.items", []string{"A-1", "a\\'b"}},
		{MySQL, "INSERT IGNORE t2 VALUES (?, 7)", "INSERT t2", []string{"7"}},
		{MySQL, "replace into kv values ('k', 'v')", "REPLACE kv", []string{"k", "v"}},
		{Postgres, "\x00\x01garbage", "", nil},
		{Postgres, "SELECT 'unterminated FROM t", "SELECT", nil},
	}
	for _, tt := range tests {
		b := NewBuilder(Config{})
		b.Reset()
		if got := b.SQL([]byte(tt.q), tt.d); got != tt.label {
			t.Errorf("%q: label %q, want %q", tt.q, got, tt.label)
		}
		checkSet(t, b, tt.tokens...)
	}
}

func TestSQLCommenter(t *testing.T) {
	b := NewBuilder(Config{})
	b.Reset()
	b.SQL([]byte("SELECT 1 /*controller='x',traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/"), Postgres)
	if want := []proto.ID{{Source: SrcTraceparent, Value: "0af7651916cd43dd8448eb211c80319c"}}; !slices.Equal(b.IDs(), want) {
		t.Errorf("ids %v", b.IDs())
	}
}

func TestCaps(t *testing.T) {
	b := NewBuilder(Config{MaxTokens: 3, MaxValue: 5, MaxIDs: 1})
	b.Reset()
	for _, w := range []string{"a", "bb", "a", "ccc", "dddd", "toolong", "e\x01"} {
		b.Token([]byte(w))
	}
	checkSet(t, b, "a", "bb", "ccc")
	s := b.Stats
	if s.Candidates != 7 || s.Tokens != 3 || s.Duplicates != 1 || s.OverCap != 1 || s.Long != 1 || s.Binary != 1 {
		t.Errorf("stats %+v", s)
	}
	b.ID("x", []byte("1"))
	b.ID("x", []byte("1"))
	b.ID("y", []byte("2"))
	if s := b.Stats; s.IDs != 1 || s.IDDuplicates != 1 || s.IDsOverCap != 1 || s.Check() != nil {
		t.Errorf("stats %+v", s)
	}
	b.Reset()
	if b.Len() != 0 || len(b.IDs()) != 0 {
		t.Error("Reset kept tokens")
	}
}

func TestPrintable(t *testing.T) {
	b := NewBuilder(Config{MaxBytes: 24})
	b.Reset()
	b.Printable([]byte("\x00\x01abc\x02user:42\x00HELO mail.example\x00cut-by-window"))
	checkSet(t, b, "user:42", "HELO") // "mail." is cut by the 24-byte window
}

func TestAppendRoute(t *testing.T) {
	for path, want := range map[string]string{
		"":                               "/",
		"/":                              "/",
		"/a/b/":                          "/a/b/",
		"/api/v2/users/42/posts":         "/api/v2/users/{id}/posts",
		"/f/" + strings.Repeat("x", 49):  "/f/{id}",
		"/1/2/3/4/5/6/7/8/9/10/11/12/13": "/{id}/{id}/{id}/{id}/{id}/{id}/{id}/{id}/{id}/{id}/{id}/{id}/...",
	} {
		if got := string(AppendRoute(nil, []byte(path))); got != want {
			t.Errorf("%q: %q, want %q", path, got, want)
		}
	}
}

func TestUUIDAndInt(t *testing.T) {
	b := NewBuilder(Config{})
	b.Reset()
	b.Int(-1234567890123)
	b.UUID([]byte{0x0b, 0x9c, 0x2f, 0x7e, 0x1d, 0x2a, 0x4c, 0x3b, 0x9e, 0x8f, 0x7a, 0x6b, 0x5c, 0x4d, 0x3e, 0x2f})
	checkSet(t, b, "-1234567890123", "0b9c2f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f")
}

func TestPoolAndClone(t *testing.T) {
	b := NewBuilder(Config{})
	var p Pool
	b.Reset()
	b.Token([]byte("x"))
	e1 := p.Take(b)
	c := Clone(e1)
	p.Reset()
	b.Reset()
	b.Token([]byte("y"))
	e2 := p.Take(b)
	if e1 != e2 {
		t.Error("Pool did not reuse")
	}
	if !slices.Equal(c.Tokens, hashes("x")) || !slices.Equal(e2.Tokens, hashes("y")) {
		t.Error("Clone shares memory with the pooled Evidence")
	}
}

func TestNoAllocs(t *testing.T) {
	head := []byte("GET /item/12345?q=shoes HTTP/1.1\r\nHost: shop\r\nX-User-Id: 77\r\nAccept: */*\r\n\r\n")
	sql := []byte("SELECT name FROM users WHERE id = 42")
	b := NewBuilder(Config{})
	var ev proto.Evidence
	run := func() {
		b.Reset()
		b.HTTPRequest(head, nil)
		b.SQL(sql, Postgres)
		b.Fill(&ev)
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per message", n)
	}
}

func BenchmarkHTTPRequest(b *testing.B) {
	head := []byte("GET /api/v1/items/12345/reviews?sort=new&limit=20 HTTP/1.1\r\nHost: shop.example\r\nUser-Agent: bench/1.0\r\nAccept: application/json\r\nX-User-Id: 8812\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n")
	bld := NewBuilder(Config{})
	var ev proto.Evidence
	b.SetBytes(int64(len(head)))
	b.ReportAllocs()
	for b.Loop() {
		bld.Reset()
		bld.HTTPRequest(head, nil)
		bld.Fill(&ev)
	}
	if len(ev.Tokens) == 0 || len(ev.IDs) != 1 {
		b.Fatalf("evidence %+v", ev)
	}
}

func BenchmarkSQL(b *testing.B) {
	q := []byte("SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer WHERE o.id = 981 AND c.region = 'eu-west' ORDER BY o.created DESC LIMIT 10")
	bld := NewBuilder(Config{})
	b.SetBytes(int64(len(q)))
	b.ReportAllocs()
	var label string
	for b.Loop() {
		bld.Reset()
		label = bld.SQL(q, Postgres)
	}
	if label != "SELECT orders" {
		b.Fatal(label)
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"plain", []string{"plain"}},
		{"cart:u14", []string{"cart:u14", "cart", "u14"}},
		{"user:42:profile", []string{"user:42:profile", "user", "42", "profile"}},
		{"a/b|c#d,e;f", []string{"a/b|c#d,e;f", "a", "b", "c", "d", "e", "f"}},
		{"k::x:", []string{"k::x:", "k", "x"}}, // empty parts are no tokens
		{"host.example-1_2", []string{"host.example-1_2"}},
		{"bad:\x01", []string{"bad"}}, // the binary whole and part are skipped, counted
	} {
		b := NewBuilder(Config{})
		b.Reset()
		b.Key([]byte(tc.key))
		checkSet(t, b, tc.want...)
	}
}
