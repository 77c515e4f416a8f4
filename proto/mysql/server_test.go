package mysql

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/internal/dectest"
	"github.com/wirepath/wirepath/proto/internal/servertest"
)

// TestMariaDBClient runs a batch of statements through the mariadb client
// against a real MariaDB: each is one COM_QUERY paired with its response,
// labelled by its SQL; the duplicate key's response carries error 1062.
func TestMariaDBClient(t *testing.T) {
	srv := servertest.MariaDB(t)
	px := servertest.NewProxy(t, srv.Addr)
	var script strings.Builder
	var want []string
	add := func(q, label string) {
		script.WriteString(q + ";\n")
		want = append(want, label)
	}
	add("CREATE DATABASE shop", "CREATE DATABASE shop")
	add("CREATE TABLE shop.users (id INT PRIMARY KEY, name VARCHAR(20))", "CREATE TABLE shop.users")
	for i := range 30 {
		add("INSERT INTO shop.users VALUES ("+strconv.Itoa(i)+", 'user"+strconv.Itoa(i)+"')", "INSERT shop.users")
		add("SELECT name FROM shop.users WHERE id = "+strconv.Itoa(i), "SELECT shop.users")
	}
	script.WriteString("DELIMITER //\nCREATE PROCEDURE shop.p() BEGIN SELECT 1; SELECT 2; END//\nDELIMITER ;\n")
	want = append(want, "CREATE PROCEDURE shop.p")
	add("CALL shop.p()", "CALL") // two result sets and an OK: one response
	host, port := px.Host()
	out, err := servertest.Output(t, []byte(script.String()+"INSERT INTO shop.users VALUES (1, 'again');\n"),
		"mariadb", "--no-defaults", "--protocol=TCP", "-h", host, "-P", port, "-u", "root", "--skip-ssl", "--batch")
	if err == nil || !strings.Contains(string(out), "1062") {
		t.Fatalf("mariadb: %v %s", err, out)
	}
	want = append(want, "INSERT shop.users")
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
	if len(reqs) != len(want) || len(resps) != len(want) || st.Unpaired != 0 || st.Malformed != 0 || st.SeqErrors != 0 {
		t.Fatalf("%d statements, stats %+v\n%s", len(want), st, servertest.Tally(units))
	}
	for i := range want {
		if reqs[i].Label != want[i] || resps[i].Key != reqs[i].Key {
			t.Errorf("statement %d: %+v / %+v, want %s", i+1, reqs[i], resps[i], want[i])
		}
	}
	if r := resps[len(resps)-1]; r.Label != "ERROR 1062" || r.Status != 1062 {
		t.Errorf("duplicate key answered %+v", r)
	}
}

// TestMariaDBPrepared speaks the binary protocol by hand to a real
// MariaDB (without CLIENT_DEPRECATE_EOF, so result sets have EOF packets):
// prepared statements, 20 pipelined executes (types sent once),
// a SELECT execute with a result set, closes and a ping.
func TestMariaDBPrepared(t *testing.T) {
	srv := servertest.MariaDB(t)
	px := servertest.NewProxy(t, srv.Addr)
	c := dial(t, px.Addr)
	c.query("CREATE DATABASE d", 1)
	c.query("CREATE TABLE d.t (id INT PRIMARY KEY, name VARCHAR(20))", 1)
	ins := c.prepare("INSERT INTO d.t VALUES (?, ?)", 2, 0)
	for i := range 20 {
		c.execute(ins, i == 0, int32(100+i), "user"+strconv.Itoa(i))
	}
	c.read(20)
	sel := c.prepare("SELECT name FROM d.t WHERE id = ? AND name = ?", 2, 1)
	c.execute(sel, true, 107, "user7")
	c.readEOFs(2)
	c.send(0, []byte{comStmtClose, byte(ins), 0, 0, 0})
	c.send(0, []byte{comStmtClose, byte(sel), 0, 0, 0})
	c.send(0, []byte{0x0e}) // COM_PING
	c.read(1)
	c.send(0, []byte{comQuit})
	c.close()
	d := NewDecoder(Config{})
	units := servertest.Decode(t, d, px.Conns(t)[0], true)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	if st.Requests != 26 || st.Responses != 26 || st.OneWay != 2 || st.Unpaired != 0 || st.Malformed != 0 || st.SeqErrors != 0 {
		t.Fatalf("stats %+v\n%s", st, servertest.Tally(units))
	}
	n := servertest.Tally(units).Labels
	if n["INSERT d.t"] != 21 || n["SELECT d.t"] != 2 || n["STMT_CLOSE"] != 2 || n["PING"] != 1 {
		t.Errorf("labels %v", n)
	}
	for _, u := range units {
		if u.Kind == proto.KindRequest && u.Label == "SELECT d.t" && u.Key == 25 && !dectest.HasTokens(u, "107", "user7") {
			t.Errorf("execute's parameters are not its tokens: %+v", u)
		}
	}
}

// client is a minimal MySQL client for the test, independent of the
// decoder.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	c := &client{t: t, c: nc, r: bufio.NewReader(nc)}
	c.packet() // the greeting
	caps := uint32(capLongPassword | capProtocol41 | 0x8000 | 0x80000 | 0x2000 | 0x20000)
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, 33)
	b = append(b, make([]byte, 23)...)
	b = append(b, "root\x00\x00mysql_native_password\x00"...)
	c.send(1, b)
	if p := c.packet(); p[0] != 0 {
		t.Fatalf("authentication: %q", p)
	}
	return c
}

func (c *client) send(seq byte, payload []byte) {
	h := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	if _, err := c.c.Write(append(h, payload...)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) packet() []byte {
	var h [4]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		c.t.Fatal(err)
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err := io.ReadFull(c.r, p); err != nil {
		c.t.Fatal(err)
	}
	if p[0] == 0xff {
		c.t.Fatalf("server error: %q", p)
	}
	return p
}

// read reads n one-packet responses.
func (c *client) read(n int) {
	for range n {
		c.packet()
	}
}

// readEOFs reads packets up to the n-th EOF.
func (c *client) readEOFs(n int) {
	for n > 0 {
		if p := c.packet(); p[0] == 0xfe && len(p) < 9 {
			n--
		}
	}
}

func (c *client) query(q string, packets int) {
	c.send(0, append([]byte{comQuery}, q...))
	c.read(packets)
}

// prepare prepares q and reads its definitions; it returns the statement id.
func (c *client) prepare(q string, params, cols int) uint32 {
	c.send(0, append([]byte{comStmtPrepare}, q...))
	p := c.packet()
	id := binary.LittleEndian.Uint32(p[1:])
	if int(binary.LittleEndian.Uint16(p[7:])) != params || int(binary.LittleEndian.Uint16(p[5:])) != cols {
		c.t.Fatalf("prepare %q: %q", q, p)
	}
	eofs := 0
	if params > 0 {
		eofs++
	}
	if cols > 0 {
		eofs++
	}
	c.readEOFs(eofs)
	return id
}

// execute sends COM_STMT_EXECUTE with an INT and a VARCHAR parameter.
func (c *client) execute(id uint32, types bool, n int32, s string) {
	b := []byte{comStmtExecute}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, 0, 1, 0, 0, 0, 0) // no cursor, iteration count 1, null bitmap
	if types {
		b = append(b, 1, 0x03, 0, 0xfd, 0) // new params bound: LONG, VAR_STRING
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, byte(len(s)))
	b = append(b, s...)
	c.send(0, b)
}

func (c *client) close() {
	c.c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c.r)
	c.c.Close()
}
