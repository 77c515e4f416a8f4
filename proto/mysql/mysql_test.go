package mysql

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	. "github.com/wirepath/wirepath/proto/internal/dectest"
)

// pkt encodes a packet with a sequence id.
func pkt(seq byte, payload ...string) string {
	p := strings.Join(payload, "")
	return string([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}) + p
}

// greeting encodes a protocol-10 greeting announcing caps.
func greeting(caps uint32) string {
	b := []byte("\x0a10.11.0-MariaDB\x00\x07\x00\x00\x0012345678\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 33, 2, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)
	b = append(b, make([]byte, 10)...)
	b = append(b, "123456789012\x00mysql_native_password\x00"...)
	return pkt(0, string(b))
}

// login encodes the client's handshake response with caps.
func login(caps uint32) string {
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = append(b, 0, 0, 0, 1, 33)
	b = append(b, make([]byte, 23)...)
	b = append(b, "app\x00\x00"...)
	return pkt(1, string(b))
}

const (
	caps    = capLongPassword | capProtocol41 | 0x8000 | 0x80000
	ok      = "\x00\x00\x00\x02\x00\x00\x00"
	okMore  = "\x00\x00\x00\x0a\x00\x00\x00" // SERVER_MORE_RESULTS_EXISTS
	eof     = "\xfe\x00\x00\x02\x00"
	eofMore = "\xfe\x00\x00\x0a\x00"
	colDef  = "\x03def\x00\x00\x00\x01a\x00\x0c\x21\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00"
)

var hello = []Step{C(""), S(greeting(caps | capDeprecateEOF)), C(login(caps)), S(pkt(2, ok))}

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
	query := func(q string) string { return pkt(0, "\x03", q) }
	result := pkt(1, "\x01") + pkt(2, colDef) + pkt(3, eof) + pkt(4, "\x01x") + pkt(5, "\x02yy") + pkt(6, eof)
	tests := []struct {
		name  string
		steps []Step
	}{
		{"queries with EOF packets: OK, result set, error", append(hello[1:2:2],
			C(login(caps)), S(pkt(2, ok)),
			C(query("INSERT INTO t VALUES (1)")), S(pkt(1, ok)),
			C(query("SELECT a FROM t WHERE b = 'x'")), S(result),
			C(query("SELECT nope")), S(pkt(1, "\xff\x7a\x04#42S22Unknown column")),
		)},
		{"multiple result sets, pipelined queries", append(hello[1:2:2],
			C(login(caps)), S(pkt(2, ok)),
			C(query("CALL p()")+query("DO 1")),
			S(pkt(1, "\x01")+pkt(2, colDef)+pkt(3, eof)+pkt(4, "\x011")+pkt(5, eofMore)+pkt(6, okMore)+pkt(7, ok)+pkt(1, ok)),
		)},
		{"CLIENT_DEPRECATE_EOF: results end with an OK", append(hello[1:2:2],
			C(login(caps|capDeprecateEOF)), S(pkt(2, ok)),
			C(query("SELECT a FROM t")), S(pkt(1, "\x01")+pkt(2, colDef)+pkt(3, "\x01x")+pkt(4, "\xfe"+ok[1:])),
		)},
		{"prepare, execute with types, close", append(hello[1:2:2],
			C(login(caps)), S(pkt(2, ok)),
			C(pkt(0, "\x16SELECT a FROM t WHERE id = ?")),
			S(pkt(1, "\x00\x05\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00")+pkt(2, colDef)+pkt(3, eof)+pkt(4, colDef)+pkt(5, eof)),
			C(pkt(0, "\x17\x05\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x08\x00\x2a\x00\x00\x00\x00\x00\x00\x00")),
			S(pkt(1, "\x01")+pkt(2, colDef)+pkt(3, eof)+pkt(4, "\x00\x00\x01x")+pkt(5, eof)),
			C(pkt(0, "\x19\x05\x00\x00\x00")+pkt(0, "\x0e")), S(pkt(1, ok)),
		)},
		{"a payload over 16 MiB in two packets", append(hello[1:2:2],
			C(login(caps)), S(pkt(2, ok)),
			C("\xff\xff\xff\x00\x03SELECT '"), G(proto.FromClient, 0xffffff-9), C("\x05\x00\x00\x01abc';"),
			S(pkt(1, ok)),
		)},
		{"SSLRequest: TLS follows", []Step{S(greeting(caps | capSSL)), C(pkt(1, string(binary.LittleEndian.AppendUint32(nil, caps|capSSL)), "\x00\x00\x00\x01\x21", strings.Repeat("\x00", 23))), C("\x16\x03\x01"), S("\x16\x03\x03")}},
		{"LOCAL INFILE", append(hello[1:2:2],
			C(login(caps)), S(pkt(2, ok)),
			C(query("LOAD DATA LOCAL INFILE 'f' INTO TABLE t")), S(pkt(1, "\xfbf")),
			C(pkt(2, "1\n2\n")+pkt(3, "")), S(pkt(4, ok)),
		)},
		{"a gap across a header: resynchronised", append(hello[1:2:2],
			C(login(caps)), S(pkt(2, ok)),
			C(query("SELECT 1")[:2]), G(proto.FromClient, 8), S(pkt(1, ok)),
			C(query("SELECT 2")), S(pkt(1, ok)),
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, _ := run(t, tt.steps)
			Golden(t, t.Name(), Lines(units))
		})
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
	feed(proto.FromServer, []byte(greeting(caps)))
	feed(proto.FromClient, []byte(login(caps)))
	feed(proto.FromServer, []byte(pkt(2, ok)))
	q := []byte(pkt(0, "\x03SELECT a FROM t WHERE id = 42"))
	r := []byte(pkt(1, "\x01") + pkt(2, colDef) + pkt(3, eof) + pkt(4, "\x01x") + pkt(5, eof))
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
	q := []byte(pkt(0, "\x03SELECT name, email FROM users WHERE id = 1234"))
	r := []byte(pkt(1, "\x02") + pkt(2, colDef) + pkt(3, colDef) + pkt(4, eof) + pkt(5, "\x03ann\x0bann@example") + pkt(6, eof))
	d := NewDecoder(Config{})
	var off [2]int64
	for _, p := range []struct {
		dir proto.Dir
		b   string
	}{{proto.FromServer, greeting(caps)}, {proto.FromClient, login(caps)}, {proto.FromServer, pkt(2, ok)}} {
		d.Feed(p.dir, off[p.dir], []byte(p.b))
		Drain(d)
		off[p.dir] += int64(len(p.b))
	}
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
