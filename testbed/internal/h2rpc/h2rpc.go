// Package h2rpc is the gRPC-shaped RPC of the wirepath testbed's second
// tier: unary calls (a length-prefixed message each way, grpc-status in
// the trailers) multiplexed over one HTTP/2 connection (h2c, prior
// knowledge) per server, as gRPC clients do.
//
// The Client is written on golang.org/x/net/http2's Framer rather than on
// net/http or grpc-go so that it can log, per call, what identifies its
// messages on the wire exactly: the stream id, the call's ordinal among the
// requests on the connection (the order of their HEADERS frames, which
// stream ids follow) and among the responses (the order in which their
// first frames arrived). The Server is net/http's HTTP/2 server with a
// handler that speaks the same framing.
package h2rpc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// CallInfo identifies one call's messages on its connection.
type CallInfo struct {
	Local, Remote string // the connection's endpoints, as the client sees them
	Stream        uint32
	ReqOrd        int   // the request's ordinal on the connection, from 0
	RespOrd       int   // the response's ordinal on the connection, from 0
	SendNS        int64 // just before the request's frames were written
	RecvNS        int64 // when the response's last frame was read
	Status        int   // grpc-status
}

// pending is a call waiting for its response.
type pending struct {
	info  CallInfo
	body  bytes.Buffer
	done  chan struct{}
	err   error
	begun bool
}

// Client is one HTTP/2 connection to a server.
type Client struct {
	conn      net.Conn
	authority string

	wmu  sync.Mutex // guards the writes, stream ids and the encoder
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	next uint32

	mu      sync.Mutex // guards calls, respOrd and err
	calls   map[uint32]*pending
	respOrd int
	err     error
}

// Dial connects to addr and starts the connection.
func Dial(addr string, timeout time.Duration) (*Client, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, authority: addr, next: 1, calls: map[uint32]*pending{}}
	c.fr = http2.NewFramer(conn, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	c.wmu.Lock()
	_, err = io.WriteString(conn, http2.ClientPreface)
	if err == nil {
		err = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20},
			http2.Setting{ID: http2.SettingEnablePush, Val: 0})
	}
	if err == nil {
		err = c.fr.WriteWindowUpdate(0, 1<<30)
	}
	c.wmu.Unlock()
	if err != nil {
		conn.Close()
		return nil, err
	}
	go c.read()
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Call makes one unary call of method (a path, "/pkg.Svc/Method") with the
// extra header fields hdr and the message msg, and returns the response's
// message.
func (c *Client) Call(method string, hdr [][2]string, msg []byte, timeout time.Duration) ([]byte, CallInfo, error) {
	p := &pending{done: make(chan struct{})}
	p.info.Local, p.info.Remote = c.conn.LocalAddr().String(), c.conn.RemoteAddr().String()
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	frame = append(frame, msg...)

	c.wmu.Lock()
	c.mu.Lock()
	err := c.err
	id := c.next
	if err == nil {
		c.next += 2
		c.calls[id] = p
	}
	c.mu.Unlock()
	if err != nil {
		c.wmu.Unlock()
		return nil, p.info, err
	}
	p.info.Stream, p.info.ReqOrd = id, int(id-1)/2
	c.hbuf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method},
		{":authority", c.authority}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for _, f := range hdr {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	p.info.SendNS = time.Now().UnixNano()
	err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true})
	if err == nil {
		err = c.fr.WriteData(id, true, frame)
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(err)
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		return nil, p.info, fmt.Errorf("h2rpc: call %s on stream %d timed out", method, id)
	}
	if p.err != nil {
		return nil, p.info, p.err
	}
	b := p.body.Bytes()
	if len(b) < 5 || int(binary.BigEndian.Uint32(b[1:])) != len(b)-5 {
		return nil, p.info, fmt.Errorf("h2rpc: malformed response message of %d bytes", len(b))
	}
	return b[5:], p.info, nil
}

// fail ends every call waiting with err.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for id, p := range c.calls {
		p.err = c.err
		close(p.done)
		delete(c.calls, id)
	}
}

// read reads the server's frames until the connection fails.
func (c *Client) read() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.fail(err)
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			c.headers(f)
		case *http2.DataFrame:
			c.data(f)
		case *http2.RSTStreamFrame:
			c.end(f.StreamID, fmt.Errorf("h2rpc: stream %d reset: %v", f.StreamID, f.ErrCode))
		case *http2.GoAwayFrame:
			c.fail(fmt.Errorf("h2rpc: GOAWAY %v", f.ErrCode))
			return
		}
	}
}

// write writes a frame of the reader's (an acknowledgement).
func (c *Client) write(fn func() error) {
	c.wmu.Lock()
	err := fn()
	c.wmu.Unlock()
	if err != nil {
		c.fail(err)
	}
}

// call returns the call waiting on stream id, numbering its response when
// its first frame arrives.
func (c *Client) call(id uint32) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.calls[id]
	if p != nil && !p.begun {
		p.begun = true
		p.info.RespOrd = c.respOrd
		c.respOrd++
	}
	return p
}

func (c *Client) headers(f *http2.MetaHeadersFrame) {
	p := c.call(f.StreamID)
	if p == nil {
		return
	}
	if s := f.PseudoValue("status"); s != "" && s != "200" {
		p.info.Status = -1
	}
	for _, hf := range f.RegularFields() {
		if hf.Name == "grpc-status" {
			p.info.Status, _ = strconv.Atoi(hf.Value)
		}
	}
	if f.StreamEnded() {
		c.end(f.StreamID, nil)
	}
}

func (c *Client) data(f *http2.DataFrame) {
	if n := len(f.Data()); n > 0 {
		c.write(func() error { return c.fr.WriteWindowUpdate(0, uint32(n)) })
	}
	p := c.call(f.StreamID)
	if p == nil {
		return
	}
	p.body.Write(f.Data())
	if f.StreamEnded() {
		c.end(f.StreamID, nil)
	}
}

// end completes the call on stream id.
func (c *Client) end(id uint32, err error) {
	c.mu.Lock()
	p := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if p == nil {
		return
	}
	p.info.RecvNS = time.Now().UnixNano()
	p.err = err
	close(p.done)
}

// Handler is a unary method: it gets the request (its header and
// message) and returns the response message and grpc-status.
type Handler func(r *http.Request, msg []byte) ([]byte, int)

// Serve returns an http.Handler that serves unary calls by method path
// with gRPC's framing, for net/http's server with unencrypted HTTP/2.
func Serve(methods map[string]Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := methods[r.URL.Path]
		if h == nil || r.ProtoMajor != 2 {
			http.Error(w, "no such method", http.StatusNotFound)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil || len(b) < 5 || int(binary.BigEndian.Uint32(b[1:])) != len(b)-5 {
			http.Error(w, "malformed request", http.StatusBadRequest)
			return
		}
		resp, status := h(r, b[5:])
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(http.StatusOK)
		out := make([]byte, 5, 5+len(resp))
		binary.BigEndian.PutUint32(out[1:], uint32(len(resp)))
		w.Write(append(out, resp...))
		w.Header().Set("Grpc-Status", strconv.Itoa(status))
	})
}

// NewServer returns net/http's server on addr speaking unencrypted HTTP/2
// (and HTTP/1.1) with h.
func NewServer(addr string, h http.Handler) *http.Server {
	s := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	s.Protocols.SetHTTP1(true)
	s.Protocols.SetUnencryptedHTTP2(true)
	return s
}
