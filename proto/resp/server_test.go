package resp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/internal/servertest"
)

// TestRedisPipe pipes 1500 commands through redis-cli --pipe to a real
// redis-server and checks that every command and reply is found and
// paired, in order: the i-th request is the i-th command sent, and the
// error replies answer exactly the commands that fail.
func TestRedisPipe(t *testing.T) {
	srv := servertest.Redis(t)
	px := servertest.NewProxy(t, srv.Addr)
	var in strings.Builder
	var sent []string // labels, in order
	var failing []int // ordinals (from 1) of commands that fail
	add := func(args ...string) {
		in.WriteString(cmd(args...))
		sent = append(sent, "redis "+strings.ToUpper(args[0]))
	}
	for i := range 300 {
		k := "item:" + strconv.Itoa(i)
		add("SET", k, strings.Repeat("v", i%50))
		add("GET", k)
		add("MGET", k, "item:x", "item:"+strconv.Itoa(i+1))
		add("HSET", "h:"+strconv.Itoa(i%7), "f", strconv.Itoa(i))
		if i%10 == 0 {
			add("INCR", k) // not an integer: an error reply
			failing = append(failing, len(sent))
		} else {
			add("LPUSH", "l", k)
		}
	}
	host, port := px.Host()
	// redis-cli exits 1 when a reply was an error, as 30 are.
	out, _ := servertest.Output(t, []byte(in.String()), "redis-cli", "-h", host, "-p", port, "--pipe")
	if !strings.Contains(string(out), "replies: "+strconv.Itoa(len(sent))) {
		t.Fatalf("redis-cli: %s", out)
	}
	sent = append(sent, "redis ECHO") // redis-cli --pipe's end marker
	conns := px.Conns(t)
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	d := NewDecoder(Config{})
	units := servertest.Decode(t, d, conns[0], true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	var reqs []proto.Unit
	errs := map[uint64]bool{}
	for _, u := range units {
		switch u.Kind {
		case proto.KindRequest:
			reqs = append(reqs, u)
		case proto.KindResponse:
			if u.Label == "ERR" {
				errs[u.Key] = true
			}
		}
	}
	if len(reqs) != len(sent) || st.Responses != int64(len(sent)) || st.Unpaired != 0 || st.Unanswered != 0 || st.Malformed != 0 {
		t.Fatalf("%d commands sent, stats %+v", len(sent), st)
	}
	for i, u := range reqs {
		if u.Key != uint64(i+1) || u.Label != sent[i] {
			t.Fatalf("request %d: %+v, sent %s", i+1, u, sent[i])
		}
	}
	if len(errs) != len(failing) {
		t.Fatalf("%d error replies, %d failing commands", len(errs), len(failing))
	}
	for _, k := range failing {
		if !errs[uint64(k)] {
			t.Errorf("command %d failed but its reply is not an error", k)
		}
	}
}

// TestRedisRESP3Push speaks RESP3 to a real server with client-side
// caching on, so that the server pushes an invalidation: the push is
// one-way and the four commands pair with their four replies.
func TestRedisRESP3Push(t *testing.T) {
	srv := servertest.Redis(t)
	px := servertest.NewProxy(t, srv.Addr)
	c, err := net.Dial("tcp", px.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	exchange := func(args ...string) string {
		t.Helper()
		if _, err := c.Write([]byte(cmd(args...))); err != nil {
			t.Fatal(err)
		}
		return readValue(t, r)
	}
	exchange("HELLO", "3")
	exchange("CLIENT", "TRACKING", "on")
	exchange("GET", "k")
	// Another connection changes the key: the server pushes to c.
	other, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	other.Write([]byte(cmd("SET", "k", "v")))
	other.Read(make([]byte, 16))
	other.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if v := readValue(t, r); !strings.HasPrefix(v, ">") {
		t.Fatalf("expected a push, got %q", v)
	}
	exchange("PING")
	c.Close()
	d := NewDecoder(Config{})
	units := servertest.Decode(t, d, px.Conns(t)[0], true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	if st.Requests != 4 || st.Responses != 4 || st.OneWay != 1 || st.Pushes != 1 || st.Unpaired != 0 {
		t.Errorf("stats %+v\n%v", st, units)
	}
}

// readValue reads one RESP value and returns its type byte and line; it is
// the test client's own small reader, independent of the decoder.
func readValue(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		t.Fatalf("read: %q %v", line, err)
	}
	typ, body := line[0], strings.TrimRight(line[1:], "\r\n")
	switch typ {
	case '$', '!', '=':
		n, _ := strconv.Atoi(body)
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				t.Fatal(err)
			}
		}
	case '*', '~', '>', '%', '|':
		n, _ := strconv.Atoi(body)
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for range max(n, 0) {
			readValue(t, r)
		}
		if typ == '|' {
			return readValue(t, r)
		}
	}
	return fmt.Sprintf("%c%s", typ, body)
}
