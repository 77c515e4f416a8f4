package resp

import (
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	. "github.com/wirepath/wirepath/proto/internal/dectest"
)

// cmd encodes a command as an array of bulk strings, as clients send it.
func cmd(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func run(t *testing.T, steps []Step) ([]proto.Unit, Stats) {
	t.Helper()
	d := NewDecoder(Config{})
	units := Run(d, steps, nil)
	Check(t, units, true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	// The same stream cut into single bytes and at random points gives
	// the same Units.
	for i, cut := range []func(int) []int{Bytewise, Random(1), Random(2)} {
		d2 := NewDecoder(Config{})
		if u2 := Run(d2, steps, cut); !Same(units, u2) {
			t.Fatalf("cut %d gives other units:\n%s\nwant:\n%s", i, Lines(u2), Lines(units))
		}
	}
	return units, st
}

func TestDecoder(t *testing.T) {
	get, set := cmd("GET", "user:42"), cmd("SET", "k", "v")
	tests := []struct {
		name  string
		steps []Step
	}{
		{
			name:  "pipelined commands, replies in order",
			steps: []Step{C(get + set + cmd("MGET", "a", "b")), S("$5\r\nhello\r\n+OK\r\n*2\r\n$1\r\nx\r\n$-1\r\n")},
		},
		{
			name:  "inline command and an empty line",
			steps: []Step{C("\r\nPING\r\n"), S("+PONG\r\n")},
		},
		{
			name:  "error reply labelled with its code",
			steps: []Step{C(cmd("INCR", "s")), S("-WRONGTYPE Operation against a key\r\n")},
		},
		{
			name: "RESP2 pub/sub: two confirmations, a message, unsubscribe all",
			steps: []Step{
				C(cmd("SUBSCRIBE", "a", "b")),
				S("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"),
				S("*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nhi\r\n"),
				C(cmd("UNSUBSCRIBE")),
				S("*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n"),
				C(cmd("PING")), S("+PONG\r\n"),
			},
		},
		{
			name: "RESP3: HELLO 3, an attribute before a reply, a push",
			steps: []Step{
				C(cmd("HELLO", "3")), S("%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n"),
				C(cmd("GET", "k")), S("|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"),
				S(">3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n_\r\n"),
				C(cmd("SUBSCRIBE", "c")), S(">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"),
			},
		},
		{
			name: "CLIENT REPLY OFF, SKIP and ON",
			steps: []Step{
				C(cmd("CLIENT", "REPLY", "OFF") + cmd("SET", "a", "1") + cmd("CLIENT", "REPLY", "ON")), S("+OK\r\n"),
				C(cmd("CLIENT", "REPLY", "SKIP") + cmd("DEL", "a") + cmd("GET", "a")), S("$-1\r\n"),
			},
		},
		{
			name:  "MONITOR: its reply, then a feed",
			steps: []Step{C(cmd("MONITOR")), S("+OK\r\n+1700000000.1 [0 127.0.0.1:5] \"GET\" \"k\"\r\n")},
		},
		{
			name: "a gap inside a bulk string keeps the framing",
			steps: []Step{
				C("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n01"), G(proto.FromClient, 6), C("89\r\n"),
				S("+OK\r\n"),
			},
		},
		{
			name: "a gap across a header: resynchronised, pairing resumes at a quiet request",
			steps: []Step{
				C(get), S("$1\r\na\r\n"),
				C(get[:5]), G(proto.FromClient, 10), C(get[15:]), S("$1\r\nb\r\n"),
				C(set), S("+OK\r\n"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, _ := run(t, tt.steps)
			Golden(t, strings.ReplaceAll(t.Name(), "/", "-"), Lines(units))
		})
	}
}

func TestEvidence(t *testing.T) {
	units, _ := run(t, []Step{
		C(cmd("MSET", "user:1", "ann", "user:2", "bob") + cmd("AUTH", "secret") + cmd("EVAL", "return 1", "2", "k1", "k2", "arg")),
		S("+OK\r\n+OK\r\n$3\r\nann\r\n"),
	})
	if len(units) != 6 {
		t.Fatalf("units:\n%s", Lines(units))
	}
	if !HasTokens(units[0], "user:1", "user:2") || HasTokens(units[0], "ann") {
		t.Error("MSET: keys are tokens, values are not")
	}
	if len(units[1].Evidence.Tokens) != 0 {
		t.Error("AUTH: arguments taken")
	}
	if !HasTokens(units[2], "k1", "k2") || HasTokens(units[2], "arg") {
		t.Error("EVAL: numkeys keys")
	}
	if !HasTokens(units[5], "ann") {
		t.Error("reply value")
	}
}

func TestReplication(t *testing.T) {
	units, st := run(t, []Step{C(cmd("PSYNC", "?", "-1")), S("+FULLRESYNC abc 0\r\n$3\r\nRDB*1\r\n$4\r\nPING\r\n")})
	if len(units) != 1 || units[0].Kind != proto.KindControl || st.Replication != 1 {
		t.Errorf("units:\n%s stats %+v", Lines(units), st)
	}
}

func TestMalformed(t *testing.T) {
	// A server stream that is no RESP loses framing and skips its bytes.
	units, st := run(t, []Step{C(cmd("GET", "k")), S("HTTP/1.1 200 OK\r\n\r\n")})
	if st.Malformed == 0 || st.Dir[1].Skipped == 0 || len(units) != 1 {
		t.Errorf("units:\n%s stats %+v", Lines(units), st)
	}
}

func TestNoAllocs(t *testing.T) {
	d := NewDecoder(Config{})
	c := []byte(cmd("GET", "user:42") + cmd("SET", "k", "v"))
	s := []byte("$5\r\nhello\r\n+OK\r\n")
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
	var c, s strings.Builder
	for i := range 16 {
		c.WriteString(cmd("GET", "user:"+itoa(1000+i)))
		s.WriteString("$16\r\n{\"name\":\"ann\"}  \r\n")
	}
	cb, sb := []byte(c.String()), []byte(s.String())
	d := NewDecoder(Config{})
	var off [2]int64
	b.SetBytes(int64(len(cb) + len(sb)))
	b.ReportAllocs()
	for b.Loop() {
		d.Feed(proto.FromClient, off[0], cb)
		Drain(d)
		off[0] += int64(len(cb))
		d.Feed(proto.FromServer, off[1], sb)
		Drain(d)
		off[1] += int64(len(sb))
	}
	if st := d.Stats(); st.Requests != st.Responses || st.Unpaired != 0 {
		b.Fatalf("stats %+v", st)
	}
}
