package memcache

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/internal/servertest"
)

// exchange sends a pipelined batch on a new connection through the proxy
// and reads until the server's answer ends with end.
func exchange(t *testing.T, addr, batch string, end []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(batch)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 64<<10)
	for !bytes.HasSuffix(got, end) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("read: %v after %d bytes", err, len(got))
		}
	}
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
}

// TestMemcachedText pipelines 400 text commands (storage, multi-key gets,
// noreply deletes, incr, quiet meta gets with k flags) to a real memcached
// and checks every response is found and paired, and no noreply or quiet
// command is given one.
func TestMemcachedText(t *testing.T) {
	srv := servertest.Memcached(t)
	px := servertest.NewProxy(t, srv.Addr)
	var b strings.Builder
	requests, oneway, responses := 0, 0, 0
	for i := range 80 {
		k := "user:" + strconv.Itoa(i)
		v := strings.Repeat("x", i)
		b.WriteString("set " + k + " 0 0 " + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
		b.WriteString("get " + k + " user:none " + k + "\r\n")
		b.WriteString("delete gone:" + strconv.Itoa(i) + " noreply\r\n")
		b.WriteString("incr " + k + " 1\r\n") // not a number: CLIENT_ERROR
		b.WriteString("mg " + k + " v k q\r\nmg miss:" + strconv.Itoa(i) + " v k q\r\n")
		requests += 5
		oneway++
		responses += 4 // set, get, incr, the hit; the quiet miss has none
	}
	b.WriteString("mn\r\n")
	requests++
	responses++
	exchange(t, px.Addr, b.String(), []byte("MN\r\n"))
	d := NewDecoder(Config{})
	units := servertest.Decode(t, d, px.Conns(t)[0], true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	if st.Requests != int64(requests) || st.OneWay != int64(oneway) || st.Responses != int64(responses) ||
		st.Unpaired != 0 || st.QuietDone != 80 || st.Unanswered != 0 || st.Malformed != 0 {
		t.Fatalf("want %d requests, %d one-way, %d responses; stats %+v\n%s", requests, oneway, responses, st, servertest.Tally(units))
	}
	if c := servertest.Tally(units); c.Labels["memcache get"] != 80 || c.Labels["memcache mg"] != 160 {
		t.Errorf("labels %v", c.Labels)
	}
}

// TestMemcachedBinary pipelines binary requests, quiet ones among them, up
// to a Noop, then a Stat request, to a real memcached.
func TestMemcachedBinary(t *testing.T) {
	srv := servertest.Memcached(t)
	px := servertest.NewProxy(t, srv.Addr)
	var b strings.Builder
	extras := string(make([]byte, 8)) // flags and expiry of a set
	op := uint32(0)
	next := func() uint32 { op++; return op }
	for i := range 50 {
		k := "k" + strconv.Itoa(i)
		b.WriteString(bin(0x80, 0x11, k, extras, "value", next(), 0)) // SetQ: no response
		b.WriteString(bin(0x80, 0x0d, k, "", "", next(), 0))          // GetKQ, a hit: a response
		b.WriteString(bin(0x80, 0x09, "no"+k, "", "", next(), 0))     // GetQ, a miss: none
		b.WriteString(bin(0x80, 0x00, "no"+k, "", "", next(), 0))     // Get, a miss: KEY_ENOENT
	}
	noop := next()
	b.WriteString(bin(0x80, 0x0a, "", "", "", noop, 0))
	exchange(t, px.Addr, b.String(), []byte(bin(0x81, 0x0a, "", "", "", noop, 0)))
	d := NewDecoder(Config{})
	units := servertest.Decode(t, d, px.Conns(t)[0], true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	if st.Binary != 1 || st.Requests != 201 || st.Responses != 101 || st.QuietDone != 100 || st.Unpaired != 0 || st.Malformed != 0 {
		t.Fatalf("stats %+v\n%s", st, servertest.Tally(units))
	}
	misses := 0
	for _, u := range units {
		if u.Kind == proto.KindResponse && u.Status == 1 {
			misses++
		}
	}
	if misses != 50 {
		t.Errorf("%d KEY_ENOENT responses, want 50", misses)
	}
}
