package pgwire

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/internal/dectest"
	"github.com/wirepath/wirepath/proto/internal/servertest"
)

// TestPostgresPsql runs a script of simple queries through psql against a
// real PostgreSQL: each statement is one Query and one response, paired in
// order, labelled by its SQL, with the failing one's SQLSTATE class.
func TestPostgresPsql(t *testing.T) {
	srv := servertest.Postgres(t)
	px := servertest.NewProxy(t, srv.Addr)
	var script strings.Builder
	var want []string
	add := func(q, label string) {
		script.WriteString(q + ";\n")
		want = append(want, label)
	}
	add("CREATE TABLE users (id int PRIMARY KEY, name text)", "CREATE TABLE users")
	for i := range 40 {
		add("INSERT INTO users VALUES ("+strconv.Itoa(i)+", 'user"+strconv.Itoa(i)+"')", "INSERT users")
		add("SELECT name FROM users WHERE id = "+strconv.Itoa(i), "SELECT users")
	}
	add("INSERT INTO users VALUES (1, 'again')", "INSERT users") // a unique violation: 23505
	add("UPDATE users SET name = 'x' WHERE id < 5", "UPDATE users")
	host, port := px.Host()
	servertest.Command(t, []byte(script.String()), "psql", "-X", "-q", "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-f", "-")
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
	var reqs, resps []proto.Unit
	for _, u := range units {
		switch u.Kind {
		case proto.KindRequest:
			reqs = append(reqs, u)
		case proto.KindResponse:
			resps = append(resps, u)
		}
	}
	if len(reqs) != len(want) || len(resps) != len(want) || st.Unpaired != 0 || st.Malformed != 0 {
		t.Fatalf("%d statements, stats %+v\n%s", len(want), st, servertest.Tally(units))
	}
	for i := range want {
		if reqs[i].Label != want[i] || reqs[i].Key != uint64(i+1) || resps[i].Key != uint64(i+1) {
			t.Errorf("statement %d: %+v / %+v, want %s", i+1, reqs[i], resps[i], want[i])
		}
	}
	if r := resps[len(want)-2]; r.Label != "ERROR 23505" || r.Status != 23 {
		t.Errorf("unique violation answered %+v", r)
	}
	if st.Control < 3 || st.Encrypted != 0 {
		t.Errorf("start-up: stats %+v", st)
	}
}

// TestPostgresExtended drives the extended protocol by hand against a
// real PostgreSQL: a Parse/Describe/Flush exchange, then 50 pipelined
// Bind/Execute/Sync requests before reading any response.
func TestPostgresExtended(t *testing.T) {
	srv := servertest.Postgres(t)
	px := servertest.NewProxy(t, srv.Addr)
	c, err := net.Dial("tcp", px.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	write := func(s string) {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	// readUntil reads messages up to one of type typ, n times.
	readUntil := func(typ byte, n int) {
		for n > 0 {
			var h [5]byte
			if _, err := io.ReadFull(r, h[:]); err != nil {
				t.Fatal(err)
			}
			body := make([]byte, binary.BigEndian.Uint32(h[1:])-4)
			if _, err := io.ReadFull(r, body); err != nil {
				t.Fatal(err)
			}
			if h[0] == typ {
				n--
			}
		}
	}
	write(startup(196608, "user\x00postgres\x00database\x00postgres\x00\x00"))
	readUntil('Z', 1)
	write(msg('P', "byid\x00SELECT $1::int + 1, 'k' || $1\x00", u16(0)) + msg('D', "S", "byid\x00") + msg('H'))
	readUntil('T', 1) // ParseComplete, ParameterDescription, RowDescription
	var batch strings.Builder
	for i := range 50 {
		v := strconv.Itoa(1000 + i)
		batch.WriteString(msg('B', "\x00byid\x00", u16(0), u16(1), u32(len(v)), v, u16(0)) + msg('E', "\x00", u32(0)) + msg('S'))
	}
	write(msg('S')) // ends the Parse/Describe request
	write(batch.String())
	readUntil('Z', 51)
	write(msg('X'))
	c.Close()
	d := NewDecoder(Config{})
	units := servertest.Decode(t, d, px.Conns(t)[0], true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	if st.Requests != 51 || st.Responses != 51 || st.Unpaired != 0 || st.Unanswered != 0 || st.Malformed != 0 {
		t.Fatalf("stats %+v\n%s", st, servertest.Tally(units))
	}
	n := 0
	for _, u := range units {
		if u.Kind != proto.KindRequest {
			continue
		}
		if n++; u.Label != "SELECT" || (n > 1 && !hasToken(u, strconv.Itoa(1000+n-2))) {
			t.Errorf("request %d: %+v", n, u)
		}
	}
}

func hasToken(u proto.Unit, w string) bool { return dectest.HasTokens(u, w) }
