// Package pgc is the PostgreSQL client of the wirepath testbed's backends:
// the simple query protocol over persistent connections (trust
// authentication), and a pool that lends each query one connection, so
// that concurrent queries share a few connections as application pools
// do. It logs nothing itself: Query returns what identifies the
// query's messages on the wire (the connection's endpoints and the
// query's ordinal on it: PostgreSQL answers a connection's queries in
// order).
package pgc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Conn is one connection, past its start-up.
type Conn struct {
	c   net.Conn
	br  *bufio.Reader
	ord int // queries sent so far
}

// Dial connects to addr and starts a session of user on database db.
func Dial(addr, user, db string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	body := binary.BigEndian.AppendUint32(nil, 196608)
	for _, s := range []string{"user", user, "database", db, "application_name", "tbtier"} {
		body = append(append(body, s...), 0)
	}
	body = append(body, 0)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	if _, err := c.Write(append(msg, body...)); err != nil {
		c.Close()
		return nil, err
	}
	pc := &Conn{c: c, br: bufio.NewReader(c)}
	if _, err := pc.until(); err != nil {
		c.Close()
		return nil, err
	}
	return pc, nil
}

// Result is what a query's messages were.
type Result struct {
	Local, Remote string
	Ord           int    // the query's ordinal on its connection, from 0
	SendNS        int64  // just before the Query message was written
	RecvNS        int64  // when ReadyForQuery was read
	Value         string // the first column of the first row, if any
}

// Query sends q with the simple query protocol and reads its response up
// to ReadyForQuery.
func (c *Conn) Query(q string) (Result, error) {
	r := Result{Local: c.c.LocalAddr().String(), Remote: c.c.RemoteAddr().String(), Ord: c.ord}
	c.ord++
	msg := []byte{'Q', 0, 0, 0, 0}
	msg = append(append(msg, q...), 0)
	binary.BigEndian.PutUint32(msg[1:], uint32(len(msg)-1))
	r.SendNS = time.Now().UnixNano()
	if _, err := c.c.Write(msg); err != nil {
		return r, err
	}
	v, err := c.until()
	r.RecvNS, r.Value = time.Now().UnixNano(), v
	return r, err
}

// until reads messages up to ReadyForQuery and returns the first column
// of the first DataRow; an ErrorResponse or an authentication request
// other than AuthenticationOk is an error (after ReadyForQuery).
func (c *Conn) until() (string, error) {
	var value string
	var failed error
	rows := 0
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
			return "", err
		}
		n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
		if n < 0 || n > 1<<24 {
			return "", fmt.Errorf("pgc: message %q of %d bytes", hdr[0], n)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c.br, body); err != nil {
			return "", err
		}
		switch hdr[0] {
		case 'R':
			if n < 4 || binary.BigEndian.Uint32(body) != 0 {
				return "", errors.New("pgc: the server asks for authentication (trust is needed)")
			}
		case 'E':
			failed = fmt.Errorf("pgc: %s", body)
		case 'D':
			if rows == 0 && n >= 6 && int32(binary.BigEndian.Uint32(body[2:])) >= 0 {
				l := int(binary.BigEndian.Uint32(body[2:]))
				if 6+l <= n {
					value = string(body[6 : 6+l])
				}
			}
			rows++
		case 'Z':
			return value, failed
		}
	}
}

// Close ends the session.
func (c *Conn) Close() error {
	c.c.Write([]byte{'X', 0, 0, 0, 4})
	return c.c.Close()
}

// Pool lends connections, one query at a time each.
type Pool struct {
	free chan *Conn
	all  []*Conn
}

// NewPool opens n connections.
func NewPool(addr, user, db string, n int) (*Pool, error) {
	p := &Pool{free: make(chan *Conn, n)}
	for range n {
		c, err := Dial(addr, user, db, 5*time.Second)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.all = append(p.all, c)
		p.free <- c
	}
	return p, nil
}

// Query runs q on a free connection.
func (p *Pool) Query(q string) (Result, error) {
	c := <-p.free
	defer func() { p.free <- c }()
	return c.Query(q)
}

// Close closes every connection.
func (p *Pool) Close() {
	for _, c := range p.all {
		c.Close()
	}
}
