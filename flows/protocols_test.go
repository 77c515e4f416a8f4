package flows

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/golden"
	"github.com/wirepath/wirepath/trace"
)

// Builders of protocol bytes for the table test below.

func be32(v uint32) string { return string(binary.BigEndian.AppendUint32(nil, v)) }
func be16(v uint16) string { return string(binary.BigEndian.AppendUint16(nil, v)) }

// pgMsg is a PostgreSQL message of type typ.
func pgMsg(typ byte, body string) string { return string(typ) + be32(uint32(len(body)+4)) + body }

// pgStartup is a StartupMessage for protocol 3.
func pgStartup() string {
	body := be32(pgProtocol3) + "user\x00app\x00database\x00shop\x00\x00"
	return be32(uint32(len(body)+4)) + body
}

// pgReady is the server's start-up answer up to ReadyForQuery.
const pgReady = "R\x00\x00\x00\x08\x00\x00\x00\x00" + "Z\x00\x00\x00\x05I"

// myPkt is a MySQL packet with a sequence id.
func myPkt(seq byte, payload string) string {
	return string([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}) + payload
}

// myGreeting is a protocol-10 greeting.
func myGreeting() string {
	b := []byte("\x0a10.11.0-MariaDB\x00\x07\x00\x00\x0012345678\x00")
	caps := uint32(1 | 0x200 | 0x8000 | 0x80000 | 0x1000000)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 33, 2, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)
	b = append(b, make([]byte, 10)...)
	b = append(b, "123456789012\x00mysql_native_password\x00"...)
	return myPkt(0, string(b))
}

// myLogin is the client's handshake response.
func myLogin() string {
	b := binary.LittleEndian.AppendUint32(nil, 1|0x200|0x8000|0x80000)
	b = append(b, 0, 0, 0, 1, 33)
	b = append(b, make([]byte, 23)...)
	b = append(b, "app\x00\x00"...)
	return myPkt(1, string(b))
}

const myOK = "\x00\x00\x00\x02\x00\x00\x00"

// kafkaReq is a Metadata v1 request with a correlation id.
func kafkaReq(corr int32, topic string) string {
	b := be16(3) + be16(1) + be32(uint32(corr)) + be16(3) + "app" + be32(1) + be16(uint16(len(topic))) + topic
	return be32(uint32(len(b))) + b
}

// kafkaResp is a response with a correlation id.
func kafkaResp(corr int32) string { return be32(8) + be32(uint32(corr)) + be32(0) }

func resp3(args ...string) string {
	s := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	return s
}

// describe is a line per message: direction, kind, call, app, label,
// status, stream, ordinal, size, identifiers and token count.
func describe(msgs []*Message) string {
	var b strings.Builder
	for _, m := range msgs {
		dir := "c>s"
		if m.Src.Port() < m.Dst.Port() {
			dir = "s>c"
		}
		ids, toks := "-", 0
		if m.Evidence != nil {
			var parts []string
			for _, id := range m.Evidence.IDs {
				parts = append(parts, id.Source+"="+id.Value)
			}
			if len(parts) > 0 {
				ids = strings.Join(parts, ",")
			}
			toks = len(m.Evidence.Tokens)
		}
		fmt.Fprintf(&b, "%s %-6s %-6s %-8s %-28q status=%d stream=%d ord=%d bytes=%d gap=%d incomplete=%v end=%v ids=%s tokens=%d\n",
			dir, m.Kind, m.Call, m.App, m.Label, m.Status, m.Stream, m.Ordinal, m.Bytes, m.GapBytes, m.Incomplete, m.End, ids, toks)
	}
	return b.String()
}

// step is one write of a conversation: the client's or the server's
// bytes, or a gap of n bytes (lost by the capture) in that direction.
type step struct {
	client bool
	data   string
	gap    int
}

func cl(s string) step { return step{client: true, data: s} }
func sv(s string) step { return step{data: s} }

// converse builds the packets of a conversation: a handshake, each
// step in segments of at most mss bytes, a close. A gap step advances the
// sequence numbers without a packet (the receiver's ACK then says the
// bytes were sent).
func converse(srv string, steps []step, mss int) *conv {
	return play(newConv("10.0.0.1:40000", srv, 1000, 5000).handshake(), steps, mss)
}

// play sends steps on c (a gap skips sequence numbers), acknowledges
// both directions and closes the connection.
func play(c *conv, steps []step, mss int) *conv {
	for _, s := range steps {
		if s.gap > 0 {
			if s.client {
				c.cseq += uint32(s.gap)
			} else {
				c.sseq += uint32(s.gap)
			}
			continue
		}
		c.send(s.client, s.data, mss)
	}
	return c.ack(true).ack(false).close()
}

// TestProtocols frames conversations of each protocol, whole and in
// small segments, and compares the messages with golden files
// (go test ./flows -run TestProtocols -update).
func TestProtocols(t *testing.T) {
	query := func(q string) string { return myPkt(0, "\x03"+q) }
	tests := []struct {
		name  string
		srv   string
		ports map[uint16]App
		steps []step
		check func(t *testing.T, st *Stats)
		loose bool // content tokens differ in small segments (an HTTP body's are read with its head's segment)
		// cuts: what is lost to a rejection depends on the segments.
		cuts bool
	}{
		{name: "redis pipelined", srv: "10.0.0.2:6379", steps: []step{
			cl(resp3("GET", "cart:u1") + resp3("GET", "cart:u2") + resp3("SET", "k", "v")),
			sv("$2\r\nxy\r\n$-1\r\n+OK\r\n"),
			cl(resp3("DEL", "k")), sv(":1\r\n"),
		}},
		{name: "postgres simple and extended", srv: "10.0.0.2:5432", steps: []step{
			cl(pgStartup()), sv(pgReady),
			cl(pgMsg('Q', "SELECT name FROM users WHERE id = 42\x00")),
			sv(pgMsg('T', "\x00\x00") + pgMsg('C', "SELECT 0\x00") + pgMsg('Z', "I")),
			cl(pgMsg('P', "\x00INSERT INTO orders VALUES ($1)\x00\x00\x00") + pgMsg('B', "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x017\x00\x00") +
				pgMsg('E', "\x00\x00\x00\x00\x00") + pgMsg('S', "")),
			sv(pgMsg('1', "") + pgMsg('2', "") + pgMsg('C', "INSERT 0 1\x00") + pgMsg('Z', "I")),
		}},
		{name: "mysql: the server greets first", srv: "10.0.0.2:3306", steps: []step{
			sv(myGreeting()), cl(myLogin()), sv(myPkt(2, myOK)),
			cl(query("SELECT a FROM t WHERE b = 'x'")), sv(myPkt(1, myOK)),
			cl(query("UPDATE t SET a = 1")), sv(myPkt(1, myOK)),
		}},
		{name: "memcached text", srv: "10.0.0.2:11211", steps: []step{
			cl("get item:7\r\n"), sv("VALUE item:7 0 3\r\nabc\r\nEND\r\n"),
			cl("set item:8 0 0 2\r\nhi\r\nget item:9\r\n"), sv("STORED\r\nEND\r\n"),
		}},
		{name: "kafka by port, answered out of order", srv: "10.0.0.2:9092", ports: map[uint16]App{9092: AppKafka}, steps: []step{
			cl(kafkaReq(7, "orders") + kafkaReq(8, "events")), sv(kafkaResp(8) + kafkaResp(7)),
		}},
		{name: "http 1.1 labels and evidence", srv: "10.0.0.2:8080", loose: true, steps: []step{
			cl("GET /item/123?x=abc HTTP/1.1\r\nHost: a\r\nX-Request-ID: req-1\r\n\r\n"),
			sv("HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"),
			cl("POST /cart HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"user\":\"u14\"}"),
			sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		}},
		{name: "redis: a gap in a reply suspends pairing", srv: "10.0.0.2:6379", steps: []step{
			cl(resp3("GET", "a")), sv("$1\r\nx\r\n"),
			cl(resp3("GET", "b")), sv("$5\r"), {gap: 6}, sv("\n"),
			cl(resp3("GET", "c")), sv("$1\r\nz\r\n"),
		}},
		{name: "unknown protocol: direction changes", srv: "10.0.0.2:7000", steps: []step{
			cl("hello there"), sv("general kenobi"), cl("bye"),
		}},
		{name: "port named none: no framing", srv: "10.0.0.2:8080", ports: map[uint16]App{8080: AppNone}, steps: []step{
			cl("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		}},
		{name: "not quite an h2 preface: direction changes", srv: "10.0.0.2:8080", steps: []step{
			cl("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\nmore"), sv("what"), cl("again"),
		}},
		{name: "port named tls but not TLS: rejected, then direction changes", srv: "10.0.0.2:8443", ports: map[uint16]App{8443: AppTLS}, cuts: true, steps: []step{
			cl("hello"), sv("there"), cl("again"),
		}, check: func(t *testing.T, st *Stats) {
			if p := st.Protocols["tls"]; p == nil || p.Rejected != 1 || st.DetectRejected != 1 || p.UnframedBytes != 5 {
				t.Errorf("tls %+v", p)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var whole string
			for _, mss := range []int{1448, 3} {
				cfg := DefaultConfig()
				cfg.Ports = tt.ports
				msgs, _, st := run(t, cfg, converse(tt.srv, tt.steps, mss).pkts...)
				got := describe(msgs)
				if mss == 1448 {
					whole = got
					golden.Check(t, "testdata/protocols/"+strings.ReplaceAll(tt.name, " ", "_")+".golden", []byte(got))
				} else if !tt.cuts && (tt.loose && noTokens(got) != noTokens(whole) || !tt.loose && got != whole) {
					t.Errorf("in 3-byte segments:\n%s\nwhole:\n%s", got, whole)
				}
				if tt.check != nil && mss == 1448 {
					tt.check(t, st)
				}
				checkOrdinals(t, msgs)
			}
		})
	}
}

// noTokens drops the token counts from describe's output.
func noTokens(s string) string { return regexp.MustCompile(` tokens=\d+`).ReplaceAllString(s, "") }

// TestPairsByKey: responses pair with their requests by Key, whatever
// their order: every RETURN's call id is a CALL's with the same stream.
func TestPairsByKey(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ports = map[uint16]App{9092: AppKafka}
	var reqs, resps string
	for i := range 40 {
		reqs += kafkaReq(int32(i), "t")
		resps = kafkaResp(int32(i)) + resps
	}
	msgs, _, _ := run(t, cfg, converse("10.0.0.2:9092", []step{cl(reqs), sv(resps)}, 1448).pkts...)
	calls := map[CallID]uint64{}
	for _, m := range msgs {
		if m.Kind == trace.KindCall {
			calls[m.Call] = m.Stream
		}
	}
	if len(calls) != 40 {
		t.Fatalf("%d calls", len(calls))
	}
	for _, m := range msgs {
		if m.Kind == trace.KindReturn {
			if s, ok := calls[m.Call]; !ok || s != m.Stream {
				t.Fatalf("return %+v: call stream %d", *m, s)
			}
		}
	}
}
