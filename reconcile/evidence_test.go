package reconcile

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/trace"
)

// withEv gives a sniffed message what a protocol decoder said about it.
func withEv(m *flows.Message, ordinal uint32, label string, ids []proto.ID, toks ...uint64) *flows.Message {
	m.Ordinal, m.Label = ordinal, label
	if ids != nil || toks != nil {
		m.Evidence = &proto.Evidence{IDs: ids, Tokens: toks}
	}
	return m
}

func pid(source, value string) proto.ID { return proto.ID{Source: source, Value: value} }

// TestDecoderNames: the default cap and the id sources are the decoders'
// (reconcile does not import them: it reads messages, not payloads).
func TestDecoderNames(t *testing.T) {
	if DefaultMaxTokens != evidence.DefaultConfig().MaxTokens {
		t.Errorf("DefaultMaxTokens %d, the decoders' default %d", DefaultMaxTokens, evidence.DefaultConfig().MaxTokens)
	}
	for _, s := range []string{evidence.SrcTraceparent, evidence.SrcTraceresponse, evidence.SrcB3, evidence.SrcB3TraceID, evidence.SrcUber,
		evidence.SrcSW8, evidence.SrcAmzn, evidence.SrcCloudTrace, evidence.SrcGRPCTraceBin, evidence.SrcRequestID, evidence.SrcCorrelationID} {
		if idRank(s) == genericRank {
			t.Errorf("source %q of proto/evidence has no rank", s)
		}
	}
}

// TestEvidenceCarried: what the decoders said about sniffed messages is in
// the trace: the ordinal, stream and label, the request id of highest
// priority, the tokens; both directions of a connection share a number
// that a later connection on the same endpoints does not.
func TestEvidenceCarried(t *testing.T) {
	s0 := func(at int64) sn { return sn{0, 64, at, at + 10, false} }
	ids := []proto.ID{
		{Source: "header:x-span", Value: "0af7651916cd43dd8448eb211c80319c"},
		{Source: "x-request-id", Value: "7f3a9c"},
		{Source: "traceparent", Value: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{Source: "b3", Value: "00000000000000000000000000000001"},
	}
	msgs := []*flows.Message{
		withEv(fmsg(1, 0, "10.0.0.1:40000", "10.0.1.2:80", 1000, 100, trace.KindCall, 0, s0(1000)), 1, "GET /item/{id}", ids, 3, 9, 27),
		withEv(fmsg(1, 1, "10.0.1.2:80", "10.0.0.1:40000", 5000, 300, trace.KindReturn, 0, s0(2000)), 1, "200", nil),
		withEv(fmsg(1, 2, "10.0.0.1:40000", "10.0.1.2:80", 1100, 100, trace.KindCall, 1, s0(3000)), 2, "GET /cart", []proto.ID{{Source: "x-request-id", Value: "8e1d"}}, 9),
		// the same endpoints again, a new connection
		withEv(fmsg(2, 0, "10.0.0.1:40000", "10.0.1.2:80", 7000, 50, trace.KindCall, 0, s0(9000)), 1, "GET /", nil),
		fmsg(2, 1, "10.0.1.2:80", "10.0.0.1:40000", 9000, 50, trace.KindReturn, 0, s0(9500)),
	}
	msgs[1].Stream = 5
	tr, rep := run(t, Options{Sniffers: sniffers(1)}, msgs)
	if len(tr.Messages) != 5 {
		t.Fatalf("%d messages", len(tr.Messages))
	}
	type want struct {
		conn, seq    uint32
		stream       uint64
		label, reqID string
		tokens       []uint64
	}
	for i, w := range []want{
		{1, 1, 0, "GET /item/{id}", "traceparent:4bf92f3577b34da6a3ce929d0e0e4736", []uint64{3, 9, 27}},
		{1, 1, 5, "200", "", nil},
		{1, 2, 0, "GET /cart", "x-request-id:8e1d", []uint64{9}},
		{2, 1, 0, "GET /", "", nil},
		{2, 0, 0, "", "", nil},
	} {
		m := &tr.Messages[i]
		if m.Conn != w.conn || m.Seq != w.seq || m.Stream != w.stream || tr.Str(m.Label) != w.label || tr.Str(m.ReqID) != w.reqID ||
			!slices.Equal(tr.Syms.Tokens(m.Tokens), w.tokens) {
			t.Errorf("message %d: conn %d seq %d stream %d label %q id %q tokens %v; want %+v", i, m.Conn, m.Seq, m.Stream,
				tr.Str(m.Label), tr.Str(m.ReqID), tr.Syms.Tokens(m.Tokens), w)
		}
	}
	if rep.WithReqID != 2 || rep.WithTokens != 2 || rep.WithLabel != 4 || rep.WithTask != 0 {
		t.Errorf("report: %d ids, %d token sets, %d labels, %d tasks", rep.WithReqID, rep.WithTokens, rep.WithLabel, rep.WithTask)
	}
	acc := map[string]int64{}
	for _, c := range tr.Meta.Accounting {
		acc[c.Name] = c.Value
	}
	if acc["messages_with_req_id"] != 2 || acc["messages_with_label"] != 4 {
		t.Errorf("accounting %v", acc)
	}
}

// TestRequestIDPriority: of the ids a message carries, the trace keeps the
// one whose source comes first in idSources, whatever their order.
func TestRequestIDPriority(t *testing.T) {
	for _, tc := range []struct {
		ids  []proto.ID
		want string
	}{
		{[]proto.ID{pid("x-correlation-id", "c"), pid("x-request-id", "r")}, "x-request-id:r"},
		{[]proto.ID{pid("x-request-id", "r"), pid("sw8", "s"), pid("uber-trace-id", "u")}, "uber-trace-id:u"},
		{[]proto.ID{pid("x-amzn-trace-id", "a"), pid("b3", "b")}, "b3:b"},
		{[]proto.ID{pid("header:x-a", "1"), pid("header:x-b", "2")}, "header:x-a:1"},
		{[]proto.ID{pid("header:x-a", "1"), pid("x-correlation-id", "c")}, "x-correlation-id:c"},
		{[]proto.ID{pid("traceparent", "has space"), pid("x-request-id", "r")}, "x-request-id:r"}, // not printable: skipped
		{[]proto.ID{pid("traceparent", strings.Repeat("f", trace.MaxReqID))}, ""},                 // too long: skipped
		{[]proto.ID{pid("traceresponse", "t"), pid("traceparent", "p")}, "traceparent:p"},
	} {
		m := withEv(fmsg(1, 0, "10.0.0.1:40000", "10.0.1.2:80", 1000, 100, trace.KindCall, 0, sn{0, 64, 1000, 1010, false}), 0, "", tc.ids)
		tr, _ := run(t, Options{Sniffers: sniffers(1)}, []*flows.Message{m})
		if got := tr.Str(tr.Messages[0].ReqID); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.ids, got, tc.want)
		}
	}
}

// TestTokenCapAndSkips: the tokens are cut to the cap (their smallest
// hashes), none are kept when asked, and labels and ids the trace cannot
// hold are skipped and counted.
func TestTokenCapAndSkips(t *testing.T) {
	mk := func() []*flows.Message {
		return []*flows.Message{
			withEv(fmsg(1, 0, "10.0.0.1:40000", "10.0.1.2:80", 1000, 100, trace.KindCall, 0, sn{0, 64, 1000, 1010, false}),
				1, strings.Repeat("x", trace.MaxLabel+1), []proto.ID{pid("x-request-id", "a\x01b")}, 5, 6, 7, 8),
			withEv(fmsg(1, 1, "10.0.1.2:80", "10.0.0.1:40000", 5000, 10, trace.KindReturn, 0, sn{0, 64, 2000, 2010, false}),
				1, "bad\x7flabel", nil, 1),
		}
	}
	for _, tc := range []struct {
		max  int
		want [][]uint64
		cut  int64
	}{
		{0, [][]uint64{{5, 6, 7, 8}, {1}}, 0},
		{2, [][]uint64{{5, 6}, {1}}, 2},
		{-1, [][]uint64{nil, nil}, 5},
	} {
		tr, rep := run(t, Options{Sniffers: sniffers(1), MaxTokens: tc.max}, mk())
		for i, w := range tc.want {
			if got := tr.Syms.Tokens(tr.Messages[i].Tokens); !slices.Equal(got, w) {
				t.Errorf("cap %d: message %d tokens %v, want %v", tc.max, i, got, w)
			}
			if tr.Messages[i].Label != 0 || tr.Messages[i].ReqID != 0 {
				t.Errorf("cap %d: message %d kept label %q, id %q", tc.max, i, tr.Str(tr.Messages[i].Label), tr.Str(tr.Messages[i].ReqID))
			}
		}
		if rep.TokensCut != tc.cut || rep.SkippedLong != 1 || rep.SkippedBinary != 2 {
			t.Errorf("cap %d: %d tokens cut, %d long, %d binary skipped", tc.max, rep.TokensCut, rep.SkippedLong, rep.SkippedBinary)
		}
	}
	if _, err := New(Options{MaxTokens: trace.MaxTokens + 1}); err == nil {
		t.Error("a cap beyond what a trace holds is accepted")
	}
}

// TestDatagramConn: the requests and responses between two endpoints over
// UDP share one connection number.
func TestDatagramConn(t *testing.T) {
	udp := func(m *flows.Message) *flows.Message { m.Proto = trace.ProtoUDP; return m }
	msgs := []*flows.Message{
		udp(fmsg(1, 0, "10.0.0.1:5353", "10.0.0.9:53", 0, 40, trace.KindCall, 0, sn{0, 64, 1000, 1000, false})),
		udp(fmsg(1, 1, "10.0.0.9:53", "10.0.0.1:5353", 0, 80, trace.KindReturn, 0, sn{0, 64, 2000, 2000, false})),
		udp(fmsg(2, 0, "10.0.0.1:5354", "10.0.0.9:53", 0, 40, trace.KindCall, 0, sn{0, 64, 3000, 3000, false})),
	}
	tr, _ := run(t, Options{Sniffers: sniffers(1)}, msgs)
	var conns []uint32
	for _, m := range tr.Messages {
		conns = append(conns, m.Conn)
	}
	if !slices.Equal(conns, []uint32{1, 1, 2}) {
		t.Errorf("conns %v, want [1 1 2]", conns)
	}
}

// TestTasks: a message written by a traced thread carries it as its
// sender, one read by a traced thread as its receiver, whether the bytes
// were sniffed too or not.
func TestTasks(t *testing.T) {
	for _, sniffed := range []bool{true, false} {
		w := newWorld(true)
		tid := func(id int) func(*preload.Record) { return func(r *preload.Record) { r.TID = id } }
		w.b.rec("c", 100, 2e9+offC, 500, preload.CallWrite, 3, 100, tid(101))
		w.b.rec("s", 200, 2e9+50_000+offS, 500, preload.CallRead, 4, 100, tid(201))
		w.b.rec("s", 200, 3e9+offS, 500, preload.CallWrite, 4, 40, tid(202))
		w.b.rec("c", 100, 3e9+50_000+offC, 500, preload.CallRead, 3, 40, tid(100))
		opts := Options{Sniffers: sniffers(1), Preload: w.b.t}
		var msgs []*flows.Message
		if sniffed {
			msgs = []*flows.Message{
				fmsg(1, 0, cliEP, srvEP, 1001, 100, trace.KindCall, 0, sn{0, 64, 2e9 + 20_000, 2e9 + 30_000, false}),
				fmsg(1, 1, srvEP, cliEP, 5001, 40, trace.KindReturn, 0, sn{0, 64, 3e9 + 20_000, 3e9 + 30_000, false}),
			}
		}
		tr, rep := run(t, opts, msgs, w.conns...)
		if len(tr.Messages) != 2 {
			t.Fatalf("sniffed %v: %d messages", sniffed, len(tr.Messages))
		}
		// (without sniffed messages, nothing ties the hosts' clocks: the
		// order of the two is not known)
		req, resp := *find(tr, cliEP, srvEP)[0], *find(tr, srvEP, cliEP)[0]
		if req.Sender != (trace.Task{PID: 100, TID: 101}) || req.Receiver != (trace.Task{PID: 200, TID: 201}) ||
			resp.Sender != (trace.Task{PID: 200, TID: 202}) || resp.Receiver != (trace.Task{PID: 100, TID: 100}) {
			t.Errorf("sniffed %v: tasks %v>%v, %v>%v", sniffed, req.Sender, req.Receiver, resp.Sender, resp.Receiver)
		}
		if req.Conn != 1 || resp.Conn != 1 || rep.WithTask != 2 {
			t.Errorf("sniffed %v: conns %d %d, %d with a task", sniffed, req.Conn, resp.Conn, rep.WithTask)
		}
	}
}

// TestPrintableASCII holds printableASCII (eight bytes at a time) to a
// byte-by-byte check: every byte value at every position of strings of
// 1 to 20 bytes otherwise printable, and random strings.
func TestPrintableASCII(t *testing.T) {
	slow := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] <= ' ' || s[i] >= 0x7f {
				return false
			}
		}
		return true
	}
	for n := 1; n <= 20; n++ {
		for pos := 0; pos < n; pos++ {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				if got, want := printableASCII(string(b)), slow(string(b)); got != want {
					t.Fatalf("printableASCII(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(0x1c + r.IntN(0x68)) // mostly printable, sometimes not
		}
		if got, want := printableASCII(string(b)), slow(string(b)); got != want {
			t.Fatalf("printableASCII(%q) = %v, want %v", b, got, want)
		}
	}
}
