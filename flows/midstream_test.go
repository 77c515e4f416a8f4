package flows

import (
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/golden"
	"github.com/wirepath/wirepath/trace"
)

// midConverse builds the packets of a conversation the capture joins in
// its middle: no handshake, each step in segments of at most mss bytes,
// then a close.
func midConverse(srv string, steps []step, mss int) *conv {
	return play(newConv("10.0.0.1:40000", srv, 1000, 5000), steps, mss)
}

// midWant is what a mid-stream case must show.
type midWant struct {
	app      App   // the protocol the connection is decoded as (AppNone: cut by flows)
	skipped  int64 // bytes skipped before the boundaries
	labelled int   // CALLs and RETURNs with a label, at least
	paired   int   // calls with both a CALL and a RETURN, at least
	// wrong: labels no CALL may carry (a resync taken inside a value).
	wrong string
	// byPort: decoded by the port's protocol without a confirmed boundary.
	byPort bool
}

// TestMidStream joins conversations of each protocol in their middle:
// inside a value, inside a pipelined batch, inside a bulk string whose
// content looks like a command; it checks that the connection is picked
// up at a confirmed boundary, the bytes before it counted, and the calls
// after it labelled and paired (golden files: go test ./flows -run
// TestMidStream -update).
func TestMidStream(t *testing.T) {
	pgQ := func(q string) string { return pgMsg('Q', q+"\x00") }
	pgR := pgMsg('T', "\x00\x00") + pgMsg('C', "SELECT 1\x00") + pgMsg('Z', "I")
	tests := []struct {
		name  string
		srv   string
		steps []step
		ports map[uint16]App
		want  midWant
	}{
		{name: "redis inside a reply value", srv: "10.0.0.2:6379", steps: []step{
			sv("lo world\r\n"),
			cl(resp3("GET", "a")), sv("$1\r\nx\r\n"),
			cl(resp3("GET", "b")), sv("$1\r\ny\r\n"),
			cl(resp3("GET", "c")), sv("$-1\r\n"),
		}, want: midWant{app: AppRedis, skipped: 10, labelled: 3, paired: 3}},
		// A pipelining client: pairing stays suspended (the replies
		// answer commands sent before the capture began).
		{name: "redis inside a pipelined batch", srv: "10.0.0.2:6379", steps: []step{
			cl("cart:u1\r\n" + resp3("GET", "cart:u2") + resp3("GET", "cart:u3")),
			sv("$2\r\nab\r\n$2\r\ncd\r\n$-1\r\n"),
			cl(resp3("GET", "x")), sv("$1\r\nz\r\n"),
			cl(resp3("GET", "y")), sv("$1\r\nw\r\n"),
		}, want: midWant{app: AppRedis, skipped: 9, labelled: 4}},
		{name: "redis inside a bulk string that looks like a command", srv: "10.0.0.2:6379", steps: []step{
			cl("*1\r\n$4\r\nPING\r\n\r\n" + resp3("GET", "k1")), sv("+OK\r\n$1\r\nv\r\n"),
			cl(resp3("GET", "k2")), sv("$1\r\nv\r\n"),
			cl(resp3("GET", "k3")), sv("$1\r\nv\r\n"),
		}, want: midWant{app: AppRedis, skipped: 16, labelled: 3, paired: 2, wrong: "redis PING"}},
		{name: "memcached idle when the capture began", srv: "10.0.0.2:11211", steps: []step{
			cl("get item:7\r\n"), sv("VALUE item:7 0 3\r\nabc\r\nEND\r\n"),
			cl("get item:8\r\n"), sv("END\r\n"),
			cl("set item:9 0 0 2\r\nhi\r\n"), sv("STORED\r\n"),
		}, want: midWant{app: AppMemcache, labelled: 6, paired: 3}},
		// The last END of the value is taken for a reply: an orphan
		// RETURN, no CALL is paired with it.
		{name: "memcached inside a value that looks like replies", srv: "10.0.0.2:11211", steps: []step{
			sv("END\r\nSTORED\r\n\r\nEND\r\n"),
			cl("get a\r\n"), sv("END\r\n"),
			cl("get b\r\n"), sv("VALUE b 0 1\r\nx\r\nEND\r\n"),
			cl("get c\r\n"), sv("END\r\n"),
		}, want: midWant{app: AppMemcache, skipped: 15, labelled: 6, paired: 3}},
		{name: "postgres inside a response", srv: "10.0.0.2:5432", steps: []step{
			sv(pgMsg('D', "\x00\x01\x00\x00\x00\x01x") + pgMsg('C', "SELECT 1\x00") + pgMsg('Z', "I")),
			cl(pgQ("SELECT 1")), sv(pgR),
			cl(pgQ("SELECT 2")), sv(pgR),
			cl(pgQ("SELECT 3")), sv(pgR),
		}, want: midWant{app: AppPostgres, labelled: 6, paired: 2}},
		{name: "http keep-alive inside a body", srv: "10.0.0.2:8080", steps: []step{
			sv("tail of a body"),
			cl("GET /item/1 HTTP/1.1\r\nHost: a\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
			cl("GET /item/2 HTTP/1.1\r\nHost: a\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
		}, want: midWant{app: AppNone, labelled: 4, paired: 2}},
		{name: "memcached with a cached HTTP response as its value", srv: "10.0.0.2:11211", steps: []step{
			cl("get page:1\r\n"), sv("VALUE page:1 0 19\r\nHTTP/1.1 200 OK\r\n\r\n\r\nEND\r\n"),
			cl("get page:2\r\n"), sv("END\r\n"),
		}, want: midWant{app: AppMemcache, labelled: 4, paired: 2}},
		{name: "one message only: not confirmed", srv: "10.0.0.2:6379", steps: []step{
			cl(resp3("GET", "a")), sv("$1\r\nx\r\n"),
		}, want: midWant{app: AppNone}},
		// Named by port: taken up searching, although nothing confirmed.
		{name: "one message only, port named redis", srv: "10.0.0.2:7000", ports: map[uint16]App{7000: AppRedis}, steps: []step{
			cl(resp3("GET", "a")), sv("$1\r\nx\r\n"),
		}, want: midWant{app: AppRedis, labelled: 1, byPort: true}},
		{name: "opaque bytes", srv: "10.0.0.2:7000", steps: []step{
			cl("\x00\x01\x02*3\r\n"), sv("+\x00\xff"), cl("hello"), sv("there"),
		}, want: midWant{app: AppNone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var whole string
			for _, mss := range []int{1448, 5} {
				cfg := DefaultConfig()
				cfg.Ports = tt.ports
				msgs, _, st := run(t, cfg, midConverse(tt.srv, tt.steps, mss).pkts...)
				got := describe(msgs)
				if mss == 1448 {
					whole = got
					golden.Check(t, "testdata/midstream/"+strings.ReplaceAll(tt.name, " ", "_")+".golden", []byte(got))
				} else if noTokens(got) != noTokens(whole) {
					t.Errorf("in 5-byte segments:\n%s\nwhole:\n%s", got, whole)
				}
				checkMid(t, msgs, st, tt.want)
			}
		})
	}
}

// checkMid checks a mid-stream case's messages and counters.
func checkMid(t *testing.T, msgs []*Message, st *Stats, w midWant) {
	t.Helper()
	if st.MidStream != 1 {
		t.Errorf("conns_mid_stream %d", st.MidStream)
	}
	decoded := w.app != AppNone
	taken := int64(1)
	if w.byPort {
		taken = 0
	}
	if (st.MidStreamDecoded == 1) != (decoded && !w.byPort) || st.MidStreamDecoded+st.MidStreamHTTP+st.MidStreamUndecoded != taken {
		t.Errorf("decoded %d, undecoded %d; want %v", st.MidStreamDecoded, st.MidStreamUndecoded, w.app)
	}
	if st.MidSkippedBytes != w.skipped {
		t.Errorf("skipped %d bytes, want %d", st.MidSkippedBytes, w.skipped)
	}
	if decoded {
		ps := st.Protocols[w.app.String()]
		if ps == nil || ps.MidStream != taken || ps.MidSkippedBytes != w.skipped {
			t.Errorf("%v counters %+v", w.app, ps)
		}
	}
	labelled, calls, rets := 0, map[CallID]bool{}, map[CallID]bool{}
	for _, m := range msgs {
		if decoded && m.App != w.app {
			t.Errorf("message of %v, want %v", m.App, w.app)
		}
		if m.Label != "" && m.Kind != trace.KindUnknown {
			labelled++
		}
		if w.wrong != "" && m.Label == w.wrong {
			t.Errorf("a resync inside a value made %q", m.Label)
		}
		switch m.Kind {
		case trace.KindCall:
			calls[m.Call] = true
			if m.Src.Port() != 40000 {
				t.Errorf("a CALL from the server: %+v", m)
			}
		case trace.KindReturn:
			rets[m.Call] = true
		}
	}
	paired := 0
	for id := range calls {
		if rets[id] {
			paired++
		}
	}
	if labelled < w.labelled || paired < w.paired {
		t.Errorf("%d labelled, %d paired; want at least %d and %d", labelled, paired, w.labelled, w.paired)
	}
}

// midFuzzPorts are the server ports FuzzMidStream's first byte picks.
var midFuzzPorts = []string{"10.0.0.2:6379", "10.0.0.2:11211", "10.0.0.2:5432", "10.0.0.2:8080", "10.0.0.2:7000", "10.0.0.2:40001"}

// midFuzzSeed encodes steps as FuzzMidStream's input.
func midFuzzSeed(port byte, steps ...step) []byte {
	b := []byte{port}
	for _, s := range steps {
		for d := s.data; len(d) > 0; {
			k := min(len(d), 255)
			op := byte(0)
			if s.client {
				op = 1
			}
			b = append(b, op|0x10, byte(k))
			b = append(b, d[:k]...)
			d = d[k:]
		}
	}
	return b
}

// FuzzMidStream decodes the input as a conversation the capture joins in
// its middle (a server port, then writes: op, length, bytes; op bit 0 the
// client's, bit 1 lost by the capture, high nibble the segment size) and
// checks that the stage never panics, its accounting (and each
// decoder's) balances, and every message is consistent.
func FuzzMidStream(f *testing.F) {
	f.Add(midFuzzSeed(0, sv("lo\r\n"), cl(resp3("GET", "a")), sv("$1\r\nx\r\n"), cl(resp3("GET", "b")), sv("$1\r\ny\r\n")))
	f.Add(midFuzzSeed(0, cl("*1\r\n$4\r\nPING\r\n\r\n"+resp3("GET", "k")), sv("+OK\r\n$1\r\nv\r\n"), cl(resp3("GET", "k2")), sv("$-1\r\n")))
	f.Add(midFuzzSeed(1, sv("END\r\nSTORED\r\n\r\nEND\r\n"), cl("get a\r\n"), sv("END\r\n"), cl("get b\r\n"), sv("VALUE b 0 1\r\nx\r\nEND\r\n")))
	f.Add(midFuzzSeed(2, sv(pgMsg('C', "SELECT 1\x00")+pgMsg('Z', "I")), cl(pgMsg('Q', "SELECT 1\x00")),
		sv(pgMsg('C', "SELECT 1\x00")+pgMsg('Z', "I")), cl(pgMsg('Q', "SELECT 2\x00")), sv(pgMsg('Z', "I"))))
	f.Add(midFuzzSeed(3, sv("body"), cl("GET / HTTP/1.1\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")))
	f.Add(midFuzzSeed(5, cl("get x\r\n"), sv("END\r\n"), cl("get y\r\n"), sv("END\r\n"), cl("get z\r\n")))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		c := newConv("10.0.0.1:40000", midFuzzPorts[int(in[0])%len(midFuzzPorts)], 1000, 5000)
		for b := in[1:]; len(b) >= 2 && len(c.pkts) < 300; {
			op, n := b[0], int(b[1])
			b = b[2:]
			data := b[:min(n, len(b))]
			b = b[len(data):]
			client := op&1 != 0
			if op&2 != 0 {
				if client {
					c.cseq += uint32(len(data))
				} else {
					c.sseq += uint32(len(data))
				}
				continue
			}
			c.send(client, string(data), 1+int(op>>4)*100)
		}
		c.ack(true).ack(false).close()
		msgs, _, st := runQuiet(t, DefaultConfig(), c.pkts...)
		checkFuzzMsgs(t, msgs)
		if st.MidStreamDecoded+st.MidStreamHTTP+st.MidStreamUndecoded > st.MidStream {
			t.Fatalf("mid-stream: %d decoded + %d undecoded > %d", st.MidStreamDecoded, st.MidStreamUndecoded, st.MidStream)
		}
	})
}
