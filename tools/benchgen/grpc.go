package benchgen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// GRPCOptions shape an all-gRPC capture.
type GRPCOptions struct {
	Conns   int    // HTTP/2 connections, open at once for the whole capture
	Batches int    // batches of concurrent calls per connection
	Batch   int    // calls in flight at once on a connection
	Seed    uint64 // random seed
	StartNS int64  // time of the first packet
	GapNS   int64  // time between packets
}

// DefaultGRPCOptions returns 8 connections, each with 400 batches of 32
// concurrent unary calls (102400 calls in all), packets 10 µs apart.
func DefaultGRPCOptions() GRPCOptions {
	return GRPCOptions{Conns: 8, Batches: 400, Batch: 32, Seed: 1, StartNS: 1_700_000_000e9, GapNS: 10_000}
}

// grpcSeg is one TCP segment of a generated connection.
type grpcSeg struct {
	fromCli bool
	flags   uint8
	data    []byte
}

// grpcConn generates one connection's segments a batch at a time.
type grpcConn struct {
	cli, srv   [4]byte
	cport      uint16
	cseq, sseq uint32
	segs       []grpcSeg
	pos        int
	batches    int
	stream     uint32
	reqEnc     *hpack.Encoder
	respEnc    *hpack.Encoder
	reqBlock   bytes.Buffer
	respBlock  bytes.Buffer
	cw, sw     bytes.Buffer
	cfr, sfr   *http2.Framer
	closed     bool
}

// WriteGRPC writes a classic pcap of gRPC traffic to w: each connection
// has a handshake, the HTTP/2 preface and SETTINGS exchange, then batches
// of concurrent unary calls (the client writes the batch's HEADERS and
// DATA frames, interleaved by stream, then the server answers each with
// HEADERS, DATA and trailers; HPACK-encoded with a fresh traceparent per
// call, as tracing clients send), cut into segments of at most 1448 bytes
// with an ACK every other segment, and a FIN exchange; connections
// interleave at random. It is deterministic for a seed. Stats.Requests and
// Stats.Responses count the calls.
func WriteGRPC(w io.Writer, o GRPCOptions) (Stats, error) {
	var st Stats
	bw := newPcap(w)
	r := rand.New(rand.NewPCG(o.Seed, 7))
	conns := make([]*grpcConn, o.Conns)
	for i := range conns {
		conns[i] = newGRPCConn(i+1, r)
		st.Conns++
	}
	var frame []byte
	ts := o.StartNS
	for live := len(conns); live > 0; {
		c := conns[r.IntN(len(conns))]
		if c.closed {
			continue
		}
		if c.pos == len(c.segs) {
			c.segs, c.pos = c.segs[:0], 0
			if c.batches < o.Batches {
				c.batch(r, o.Batch)
				st.Requests += o.Batch
				st.Responses += o.Batch
			} else {
				c.finish()
				c.closed = true
				live--
			}
		}
		for c.pos < len(c.segs) {
			s := c.segs[c.pos]
			c.pos++
			src, dst, sp, dp, seq, an := c.cli, c.srv, c.cport, uint16(50051), c.cseq, c.sseq
			if !s.fromCli {
				src, dst, sp, dp, seq, an = c.srv, c.cli, 50051, c.cport, c.sseq, c.cseq
			}
			if s.flags&ack == 0 {
				an = 0
			}
			var err error
			if frame, err = writeTCP(bw, frame, ts, uint16(st.Packets), src, dst, sp, dp, seq, an, s.flags, s.data); err != nil {
				return st, err
			}
			adv := uint32(len(s.data))
			if s.flags&(syn|fin) != 0 {
				adv++
			}
			if s.fromCli {
				c.cseq += adv
			} else {
				c.sseq += adv
			}
			st.Packets++
			st.Payload += int64(len(s.data))
			ts += o.GapNS
			if r.IntN(4) == 0 {
				break // let another connection send
			}
		}
	}
	return st, bw.Flush()
}

func newGRPCConn(k int, r *rand.Rand) *grpcConn {
	c := &grpcConn{cli: [4]byte{10, 3, byte(k >> 8), byte(k)}, srv: [4]byte{10, 4, 0, byte(1 + k%20)},
		cport: uint16(20000 + k), cseq: r.Uint32(), sseq: r.Uint32(), stream: 1}
	c.reqEnc, c.respEnc = hpack.NewEncoder(&c.reqBlock), hpack.NewEncoder(&c.respBlock)
	c.cfr, c.sfr = http2.NewFramer(&c.cw, nil), http2.NewFramer(&c.sw, nil)
	c.segs = append(c.segs, grpcSeg{true, syn, nil}, grpcSeg{false, syn | ack, nil}, grpcSeg{true, ack, nil})
	c.cw.WriteString(http2.ClientPreface)
	c.cfr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	c.cfr.WriteWindowUpdate(0, 1<<24)
	c.flush(true)
	c.sfr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1000})
	c.sfr.WriteSettingsAck()
	c.sfr.WriteWindowUpdate(0, 1<<24)
	c.flush(false)
	c.cfr.WriteSettingsAck()
	c.flush(true)
	return c
}

// grpcMethods are the generated calls' methods.
var grpcMethods = []string{"/hotel.Search/Nearby", "/hotel.Geo/Near", "/hotel.Rate/GetRates", "/hotel.Profile/GetProfiles"}

// batch appends the segments of n concurrent unary calls.
func (c *grpcConn) batch(r *rand.Rand, n int) {
	c.batches++
	first := c.stream
	msg := make([]byte, 5+64)
	msg[4] = 64
	for i := range n {
		id := first + uint32(2*i)
		c.reqBlock.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"},
			{":path", grpcMethods[r.IntN(len(grpcMethods))]}, {":authority", "search:50051"},
			{"content-type", "application/grpc"}, {"te", "trailers"}, {"grpc-timeout", "1S"},
			{"traceparent", fmt.Sprintf("00-%016x%016x-%016x-01", r.Uint64(), r.Uint64(), r.Uint64())}} {
			c.reqEnc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		c.cfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.reqBlock.Bytes(), EndHeaders: true})
		binary.BigEndian.PutUint32(msg[1:], 64)
		c.cfr.WriteData(id, true, msg)
	}
	c.stream += uint32(2 * n)
	c.flush(true)
	resp := make([]byte, 5+180)
	binary.BigEndian.PutUint32(resp[1:], 180)
	for i := range n {
		id := first + uint32(2*i)
		c.respBlock.Reset()
		c.respEnc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		c.respEnc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
		c.sfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.respBlock.Bytes(), EndHeaders: true})
		c.sfr.WriteData(id, false, resp)
		c.respBlock.Reset()
		c.respEnc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
		c.sfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.respBlock.Bytes(), EndHeaders: true, EndStream: true})
	}
	c.flush(false)
}

// finish appends a GOAWAY and the FIN exchange.
func (c *grpcConn) finish() {
	c.cfr.WriteGoAway(0, http2.ErrCodeNo, nil)
	c.flush(true)
	c.segs = append(c.segs, grpcSeg{true, fin | ack, nil}, grpcSeg{false, fin | ack, nil}, grpcSeg{true, ack, nil})
}

// flush cuts what one side wrote into segments, the other side
// acknowledging every other one.
func (c *grpcConn) flush(fromCli bool) {
	buf := &c.sw
	if fromCli {
		buf = &c.cw
	}
	b := bytes.Clone(buf.Bytes())
	buf.Reset()
	for k := 0; len(b) > 0; k++ {
		n := min(len(b), 1448)
		fl := uint8(ack)
		if n == len(b) {
			fl |= psh
		}
		c.segs = append(c.segs, grpcSeg{fromCli, fl, b[:n]})
		b = b[n:]
		if k%2 == 1 || len(b) == 0 {
			c.segs = append(c.segs, grpcSeg{!fromCli, ack, nil})
		}
	}
}
