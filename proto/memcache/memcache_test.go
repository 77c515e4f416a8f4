package memcache

import (
	"encoding/binary"
	"testing"

	"github.com/wirepath/wirepath/proto"
	. "github.com/wirepath/wirepath/proto/internal/dectest"
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

// bin encodes a binary packet: magic, opcode, key, extras, value, opaque,
// and the status (responses) in the vbucket field.
func bin(magic, op byte, key, extras, value string, opaque uint32, status uint16) string {
	h := make([]byte, 24)
	h[0], h[1] = magic, op
	binary.BigEndian.PutUint16(h[2:], uint16(len(key)))
	h[4] = byte(len(extras))
	binary.BigEndian.PutUint16(h[6:], status)
	binary.BigEndian.PutUint32(h[8:], uint32(len(extras)+len(key)+len(value)))
	binary.BigEndian.PutUint32(h[12:], opaque)
	return string(h) + extras + key + value
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name  string
		steps []Step
	}{
		{"text: set, multi-key get, noreply, incr, stats", []Step{
			C("set user:1 0 0 3\r\nann\r\nget user:1 user:2 user:3\r\n"),
			S("STORED\r\nVALUE user:1 0 3\r\nann\r\nEND\r\n"),
			C("delete user:9 noreply\r\nincr hits 1\r\nget none\r\n"), S("NOT_FOUND\r\nEND\r\n"),
			C("stats\r\n"), S("STAT pid 1\r\nSTAT uptime 5\r\nEND\r\n"),
			C("bogus\r\n"), S("ERROR\r\n"),
			C("quit\r\n"),
		}},
		{"text: quiet meta commands up to mn", []Step{
			C("mg a v q\r\nmg b v q\r\nms c 2 q\r\nhi\r\nmn\r\n"),
			S("VA 1\r\nx\r\nMN\r\n"),
			C("mg d v q k Oq4\r\nmg e v q k Oq5\r\nmn\r\n"),
			S("VA 1 kd Oq4\r\ny\r\nMN\r\n"),
		}},
		{"binary: quiet gets, a noop, a miss, stats", []Step{
			C(bin(0x80, 0x0d, "a", "", "", 1, 0) + bin(0x80, 0x0d, "b", "", "", 2, 0) + bin(0x80, 0x0a, "", "", "", 3, 0)),
			S(bin(0x81, 0x0d, "b", "\x00\x00\x00\x00", "v", 2, 0) + bin(0x81, 0x0a, "", "", "", 3, 0)),
			C(bin(0x80, 0x00, "zz", "", "", 4, 0)), S(bin(0x81, 0x00, "", "", "Not found", 4, 1)),
			C(bin(0x80, 0x10, "", "", "", 5, 0)),
			S(bin(0x81, 0x10, "pid", "", "1", 5, 0) + bin(0x81, 0x10, "uptime", "", "9", 5, 0) + bin(0x81, 0x10, "", "", "", 5, 0)),
			C(bin(0x80, 0x17, "", "", "", 6, 0)),
		}},
		{"text: a gap in a data block keeps framing, one across a line resynchronises", []Step{
			C("set k 0 0 10\r\n01"), G(proto.FromClient, 5), C("789\r\n"), S("STORED\r\n"),
			C("get k\r\n"), S("VALUE k 0 10\r\n0123"), G(proto.FromServer, 10), S("\r\nEND\r\n"),
			C("get a\r\nget b\r\n"), S("END\r\nEND\r\n"),
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
	units, _ := run(t, []Step{C("get user:1 user:2\r\n"), S("VALUE user:2 0 1\r\nx\r\nEND\r\n")})
	if !HasTokens(units[0], "user:1", "user:2") || !HasTokens(units[1], "user:2") || units[1].Label != "hit" {
		t.Errorf("units:\n%s", Lines(units))
	}
}

func TestNoAllocs(t *testing.T) {
	d := NewDecoder(Config{})
	c := []byte("get user:1 user:2\r\nset k 0 0 3\r\nabc\r\n")
	s := []byte("VALUE user:2 0 1\r\nx\r\nEND\r\nSTORED\r\n")
	var off [2]int64
	step := func() {
		d.Feed(proto.FromClient, off[0], c)
		Drain(d)
		off[0] += int64(len(c))
		d.Feed(proto.FromServer, off[1], s)
		Drain(d)
		off[1] += int64(len(s))
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("%v allocations per exchange", n)
	}
}

func BenchmarkDecoder(b *testing.B) {
	c := []byte("get user:1001 user:1002\r\nset session:9 0 60 16\r\n0123456789abcdef\r\nincr hits 1\r\n")
	s := []byte("VALUE user:1001 0 5\r\nhello\r\nEND\r\nSTORED\r\n17\r\n")
	d := NewDecoder(Config{})
	var off [2]int64
	b.SetBytes(int64(len(c) + len(s)))
	b.ReportAllocs()
	for b.Loop() {
		d.Feed(proto.FromClient, off[0], c)
		Drain(d)
		off[0] += int64(len(c))
		d.Feed(proto.FromServer, off[1], s)
		Drain(d)
		off[1] += int64(len(s))
	}
	if st := d.Stats(); st.Requests != st.Responses || st.Unpaired != 0 {
		b.Fatalf("stats %+v", st)
	}
}
