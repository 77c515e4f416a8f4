package http2

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	xhttp2 "golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
)

// event is one write of one direction, in the order both happened.
type event struct {
	dir  proto.Dir
	data []byte
}

// conv writes an HTTP/2 conversation with x/net's own Framer and HPACK
// Encoder, one event per frame, so that tests can interleave, split and
// cut it.
type conv struct {
	buf    [2]bytes.Buffer
	fr     [2]*xhttp2.Framer
	hbuf   [2]bytes.Buffer
	enc    [2]*hpack.Encoder
	events []event
}

func newConv(preface bool) *conv {
	c := &conv{}
	for i := range c.fr {
		c.fr[i] = xhttp2.NewFramer(&c.buf[i], nil)
		c.enc[i] = hpack.NewEncoder(&c.hbuf[i])
	}
	if preface {
		c.raw(proto.FromClient, []byte(xhttp2.ClientPreface))
	}
	return c
}

// raw appends bytes as one event.
func (c *conv) raw(dir proto.Dir, b []byte) {
	c.events = append(c.events, event{dir, append([]byte(nil), b...)})
}

// flush turns what dir's Framer wrote into one event.
func (c *conv) flush(dir proto.Dir) {
	if c.buf[dir].Len() > 0 {
		c.raw(dir, c.buf[dir].Bytes())
		c.buf[dir].Reset()
	}
}

// block encodes header fields "name: value" with dir's encoder.
func (c *conv) block(dir proto.Dir, fields ...string) []byte {
	c.hbuf[dir].Reset()
	for _, f := range fields {
		name, value, _ := strings.Cut(f, ": ")
		if err := c.enc[dir].WriteField(hpack.HeaderField{Name: name, Value: value}); err != nil {
			panic(err)
		}
	}
	return append([]byte(nil), c.hbuf[dir].Bytes()...)
}

func (c *conv) settings(dir proto.Dir, s ...xhttp2.Setting) {
	must(c.fr[dir].WriteSettings(s...))
	c.flush(dir)
}

func (c *conv) headers(dir proto.Dir, id uint32, end bool, fields ...string) {
	must(c.fr[dir].WriteHeaders(xhttp2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.block(dir, fields...), EndStream: end, EndHeaders: true}))
	c.flush(dir)
}

func (c *conv) data(dir proto.Dir, id uint32, end bool, n int) {
	must(c.fr[dir].WriteData(id, end, bytes.Repeat([]byte{'x'}, n)))
	c.flush(dir)
}

func (c *conv) request(id uint32, path string, end bool) {
	c.headers(proto.FromClient, id, end, ":method: POST", ":scheme: http", ":authority: svc",
		":path: "+path, "content-type: application/grpc", "te: trailers")
}

// unary writes one whole gRPC call on stream id.
func (c *conv) unary(id uint32, path string, status int) {
	c.request(id, path, false)
	c.data(proto.FromClient, id, true, 12)
	c.headers(proto.FromServer, id, false, ":status: 200", "content-type: application/grpc")
	c.data(proto.FromServer, id, false, 20)
	c.headers(proto.FromServer, id, true, fmt.Sprintf("grpc-status: %d", status))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// feedEvent feeds event e to d in pieces of at most chunk bytes (0:
// whole), at the offsets off of its direction, which it advances.
func feedEvent(d *Decoder, off *[2]int64, e event, chunk int) {
	for b := e.data; len(b) > 0; {
		n := len(b)
		if chunk > 0 {
			n = min(n, chunk)
		}
		d.Feed(e.dir, off[e.dir], b[:n])
		off[e.dir] += int64(n)
		b = b[n:]
	}
}

// decode feeds events to a new Decoder, each split into pieces of at
// most chunk bytes (0: whole), closes it and returns its Units.
func decode(t testing.TB, cfg Config, events []event, chunk int) ([]proto.Unit, Stats) {
	t.Helper()
	d := New(cfg)
	var off [2]int64
	var units []proto.Unit
	for _, e := range events {
		feedEvent(d, &off, e, chunk)
		units = drain(d, units)
		if err := d.Stats().Check(); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	units = drain(d, units)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	return units, st
}

func drain(d *Decoder, units []proto.Unit) []proto.Unit {
	var u proto.Unit
	for d.Next(&u) {
		units = append(units, keep(u))
	}
	return units
}

// appUnits returns the Units that are not control Units.
func appUnits(units []proto.Unit) []proto.Unit {
	var out []proto.Unit
	for _, u := range units {
		if u.Kind != proto.KindControl {
			out = append(out, keep(u))
		}
	}
	return out
}

// format prints Units one a line, for golden files and failures.
func format(units []proto.Unit) string {
	var b strings.Builder
	for _, u := range units {
		fmt.Fprintf(&b, "%s %-8s key=%d [%d,%d) bytes=%d status=%d %q", u.Dir, u.Kind, u.Key, u.Start, u.End, u.Bytes, u.Status, u.Label)
		if u.Evidence != nil {
			for _, id := range u.Evidence.IDs {
				fmt.Fprintf(&b, " %s=%s", id.Source, id.Value)
			}
			fmt.Fprintf(&b, " tokens=%d", len(u.Evidence.Tokens))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// brief prints an application Unit as "dir kind key label status".
func brief(u proto.Unit) string {
	return fmt.Sprintf("%s %s %d %q %d", u.Dir, u.Kind, u.Key, u.Label, u.Status)
}

// keep returns u with a copy of its Evidence: a decoder reuses the
// Evidence of the Units taken once it is fed again.
func keep(u proto.Unit) proto.Unit {
	u.Evidence = evidence.Clone(u.Evidence)
	return u
}
