package pgwire

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	. "github.com/wirepath/wirepath/proto/internal/dectest"
)

// msg encodes a typed message: type byte, length, body.
func msg(typ byte, body ...string) string {
	b := strings.Join(body, "")
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(4+len(b)))
	return string(h[:]) + b
}

// startup encodes an untyped start-up packet with a protocol code.
func startup(code uint32, rest string) string {
	var h [8]byte
	binary.BigEndian.PutUint32(h[:], uint32(8+len(rest)))
	binary.BigEndian.PutUint32(h[4:], code)
	return string(h[:]) + rest
}

func u16(v int) string { return string([]byte{byte(v >> 8), byte(v)}) }
func u32(v int) string { return string(binary.BigEndian.AppendUint32(nil, uint32(v))) }

var (
	hello   = startup(196608, "user\x00app\x00database\x00shop\x00\x00")
	authOK  = msg('R', u32(0)) + msg('S', "server_version\x0015\x00") + msg('K', u32(7), u32(9)) + msg('Z', "I")
	rowDesc = msg('T', u16(1), "name\x00", u32(0), u16(0), u32(25), u16(65535), u32(0xffffffff), u16(0))
	row     = func(v string) string { return msg('D', u16(1), u32(len(v)), v) }
	ready   = msg('Z', "I")
)

func run(t *testing.T, steps []Step) ([]proto.Unit, Stats) {
	t.Helper()
	d := NewDecoder(Config{})
	units := Run(d, steps, nil)
	Check(t, units, true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	for i, cut := range []func(int) []int{Bytewise, Random(1), Random(2)} {
		if u2 := Run(NewDecoder(Config{}), steps, cut); !Same(units, u2) {
			t.Fatalf("cut %d gives other units:\n%s\nwant:\n%s", i, Lines(u2), Lines(units))
		}
	}
	return units, st
}

func TestDecoder(t *testing.T) {
	parse := msg('P', "s1\x00SELECT name FROM users WHERE id = $1\x00", u16(0))
	bind := func(stmt, v string) string {
		return msg('B', "\x00", stmt+"\x00", u16(0), u16(1), u32(len(v)), v, u16(0))
	}
	exec := msg('D', "P\x00") + msg('E', "\x00", u32(0))
	sync := msg('S')
	tests := []struct {
		name  string
		steps []Step
	}{
		{"startup and a simple query", []Step{
			C(hello), S(msg('R', u32(10), "SCRAM-SHA-256\x00\x00")),
			C(msg('p', "SCRAM-SHA-256\x00", u32(4), "n,,x")), S(msg('R', u32(12), "v=x") + authOK),
			C(msg('Q', "SELECT name FROM users WHERE id = 42\x00")),
			S(rowDesc + row("ann") + msg('C', "SELECT 1\x00") + ready),
			C(msg('X')),
		}},
		{"SSLRequest refused, then start-up", []Step{
			C(startup(codeSSL, "")), S("N"), C(hello), S(authOK),
		}},
		{"SSLRequest accepted: encrypted from then on", []Step{
			C(startup(codeSSL, "")), S("S"), C("\x16\x03\x01\x00\x05hello"), S("\x16\x03\x03\x00\x01x"),
		}},
		{"pipelined extended-protocol requests", []Step{
			C(hello), S(authOK),
			C(parse + bind("s1", "42") + exec + sync + bind("s1", "43") + exec + sync),
			S(msg('1') + msg('2') + rowDesc + row("ann") + msg('C', "SELECT 1\x00") + ready),
			S(msg('2') + rowDesc + row("bob") + msg('C', "SELECT 1\x00") + ready),
		}},
		{"Flush before Sync: one request", []Step{
			C(hello), S(authOK),
			C(msg('P', "\x00UPDATE t SET v = 1\x00", u16(0)) + msg('D', "S\x00") + msg('H')),
			S(msg('1') + msg('t', u16(0)) + msg('n')),
			C(bind("", "") + exec + sync),
			S(msg('2') + msg('C', "UPDATE 3\x00") + ready),
		}},
		{"an error: label and status", []Step{
			C(hello), S(authOK),
			C(msg('Q', "INSERT INTO orders VALUES (1)\x00")),
			S(msg('E', "SERROR\x00", "VERROR\x00", "C23505\x00", "Mduplicate key\x00", "\x00") + ready),
		}},
		{"COPY FROM STDIN: the data is one-way", []Step{
			C(hello), S(authOK),
			C(msg('Q', "COPY items FROM STDIN\x00")), S(msg('G', "\x00", u16(0))),
			C(msg('d', "1\tx\n") + msg('d', "2\ty\n") + msg('c')),
			S(msg('C', "COPY 2\x00") + ready),
		}},
		{"a notification while idle is one-way", []Step{
			C(hello), S(authOK),
			S(msg('A', u32(1), "chan\x00payload\x00")),
			S(msg('N', "SNOTICE\x00\x00")),
		}},
		{"a gap inside a body keeps the framing", []Step{
			C(hello), S(authOK),
			C(msg('Q', "SELECT 1\x00")[:8]), G(proto.FromClient, 4), C("1\x00"),
			S(rowDesc[:10]), G(proto.FromServer, int64(len(rowDesc)-10)), S(row("1") + msg('C', "SELECT 1\x00") + ready),
		}},
		{"a gap across headers: resynchronised, pairing resumed", []Step{
			C(hello), S(authOK),
			C(msg('Q', "SELECT 1\x00")), S(rowDesc + row("1") + msg('C', "SELECT 1\x00") + ready),
			C(msg('Q', "SELECT 2\x00")[:2]), G(proto.FromClient, 12), S(rowDesc + row("2") + msg('C', "SELECT 1\x00") + ready),
			C(msg('Q', "SELECT 3 FROM t\x00")), S(rowDesc + row("3") + msg('C', "SELECT 1\x00") + ready),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, _ := run(t, tt.steps)
			Golden(t, t.Name(), Lines(units))
		})
	}
}

func TestEvidence(t *testing.T) {
	binParam := msg('B', "\x00s\x00", u16(1), u16(1), u16(2), u32(8), "\x00\x00\x00\x00\x00\x00\x01\x00",
		u32(16), "\x0b\x9c\x2f\x7e\x1d\x2a\x4c\x3b\x9e\x8f\x7a\x6b\x5c\x4d\x3e\x2f", u16(0))
	units, _ := run(t, []Step{
		C(hello), S(authOK),
		C(msg('P', "s\x00SELECT * FROM carts WHERE user_id = $1 AND id = $2 AND kind = 'gift'\x00", u16(0)) + binParam + msg('E', "\x00", u32(0)) + msg('S')),
		S(msg('1') + msg('2') + row("cart-9") + msg('C', "SELECT 1\x00") + ready),
	})
	req, resp := units[len(units)-2], units[len(units)-1]
	if req.Label != "SELECT carts" || !HasTokens(req, "gift", "256", "0b9c2f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f") {
		t.Errorf("request %s tokens %x", Line(req), req.Evidence)
	}
	if resp.Label != "SELECT" || !HasTokens(resp, "cart-9") {
		t.Errorf("response %s", Line(resp))
	}
}

func TestNoAllocs(t *testing.T) {
	d := NewDecoder(Config{})
	var off [2]int64
	feed := func(dir proto.Dir, b []byte) {
		d.Feed(dir, off[dir], b)
		Drain(d)
		off[dir] += int64(len(b))
	}
	feed(proto.FromClient, []byte(hello))
	feed(proto.FromServer, []byte(authOK))
	q := []byte(msg('Q', "SELECT name FROM users WHERE id = 42\x00"))
	r := []byte(rowDesc + row("ann") + msg('C', "SELECT 1\x00") + ready)
	step := func() {
		feed(proto.FromClient, q)
		feed(proto.FromServer, r)
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("%v allocations per query", n)
	}
}

func BenchmarkDecoder(b *testing.B) {
	q := []byte(msg('P', "\x00SELECT name, email FROM users WHERE id = $1\x00", u16(0)) +
		msg('B', "\x00\x00", u16(0), u16(1), u32(4), "1234", u16(0)) + msg('E', "\x00", u32(0)) + msg('S'))
	r := []byte(msg('1') + msg('2') + rowDesc + row("ann") + row("bob") + msg('C', "SELECT 2\x00") + ready)
	d := NewDecoder(Config{})
	var off [2]int64
	d.Feed(proto.FromClient, 0, []byte(hello))
	Drain(d)
	d.Feed(proto.FromServer, 0, []byte(authOK))
	Drain(d)
	off[0], off[1] = int64(len(hello)), int64(len(authOK))
	b.SetBytes(int64(len(q) + len(r)))
	b.ReportAllocs()
	for b.Loop() {
		d.Feed(proto.FromClient, off[0], q)
		Drain(d)
		off[0] += int64(len(q))
		d.Feed(proto.FromServer, off[1], r)
		Drain(d)
		off[1] += int64(len(r))
	}
	if st := d.Stats(); st.Requests != st.Responses || st.Unpaired != 0 {
		b.Fatalf("stats %+v", st)
	}
}
