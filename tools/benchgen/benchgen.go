// Package benchgen writes synthetic but well-formed captures of many
// concurrent HTTP-like TCP connections for the flows benchmarks: each
// connection has a handshake, one to five request/response exchanges
// (responses of one to eight segments, the client acknowledging every
// other segment) and a FIN exchange, and connections overlap in time. It
// is deterministic for a seed.
//
// It is a tool, not part of the product: flows' benchmarks import it, and
// its command (cmd/benchgen) writes the capture scripts/bench-flows.sh and
// scripts/bench-reconcile.sh time.
package benchgen

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
)

// Options shape the capture.
type Options struct {
	Packets    int    // packets to write
	Concurrent int    // connections open at once
	Seed       uint64 // random seed
	StartNS    int64  // time of the first packet
	GapNS      int64  // time between packets
}

// DefaultOptions returns a million packets over 200 concurrent
// connections, 10 µs apart (100000 packets/s for 10 s).
func DefaultOptions() Options {
	return Options{Packets: 1_000_000, Concurrent: 200, Seed: 1, StartNS: 1_700_000_000e9, GapNS: 10_000}
}

// step is one packet of a connection's script.
type step struct {
	fromCli bool
	flags   uint8
	n       int // payload bytes (-1: a request line)
}

// TCP flags.
const (
	fin = 0x01
	syn = 0x02
	psh = 0x08
	ack = 0x10
)

// conn is one generated connection.
type conn struct {
	cli, srv   [4]byte
	cport      uint16
	cseq, sseq uint32
	script     []step
	pos        int
}

// Stats describe what Write wrote.
type Stats struct {
	Packets   int   // packets written
	Payload   int64 // TCP payload bytes
	Conns     int   // connections started
	Requests  int   // requests written
	Responses int   // responses written completely
}

// Write writes a classic pcap (nanosecond timestamps, Ethernet) to w.
func Write(w io.Writer, o Options) (Stats, error) {
	var st Stats
	bw := newPcap(w)

	r := rand.New(rand.NewPCG(o.Seed, 99))
	newConn := func() *conn {
		st.Conns++
		k := st.Conns
		c := &conn{cli: [4]byte{10, 1, byte(k >> 8), byte(k)}, srv: [4]byte{10, 2, 0, byte(1 + k%50)},
			cport: uint16(10000 + k%50000), cseq: r.Uint32(), sseq: r.Uint32()}
		c.script = append(c.script, step{true, syn, 0}, step{false, syn | ack, 0}, step{true, ack, 0})
		for e := 1 + r.IntN(5); e > 0; e-- {
			c.script = append(c.script, step{true, psh | ack, -1})
			segs := 1 + r.IntN(8)
			last := 1 + r.IntN(1460)
			c.script = append(c.script, step{false, 0, -2 - ((segs-1)*1460 + last)}) // response headers
			for s := 1; s <= segs; s++ {
				if s == segs {
					c.script = append(c.script, step{false, psh | ack, last})
				} else {
					c.script = append(c.script, step{false, ack, 1460})
				}
				if s%2 == 0 || s == segs {
					c.script = append(c.script, step{true, ack, 0})
				}
			}
		}
		c.script = append(c.script, step{true, fin | ack, 0}, step{false, fin | ack, 0}, step{true, ack, 0})
		return c
	}
	conns := make([]*conn, o.Concurrent)
	for i := range conns {
		conns[i] = newConn()
	}
	frame := make([]byte, 0, 1600)
	body := make([]byte, 1600)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	ts := o.StartNS
	for st.Packets < o.Packets {
		i := r.IntN(len(conns))
		c := conns[i]
		s := c.script[c.pos]
		c.pos++
		var data []byte
		if s.n <= -2 {
			// The response's headers go in front of its first segment.
			data = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", -2-s.n)
			s = c.script[c.pos]
			c.pos++
			data = append(data, body[:s.n]...)
		}
		if c.pos == len(c.script) {
			conns[i] = newConn()
		}
		switch {
		case data != nil:
		case s.n < 0:
			data = fmt.Appendf(nil, "GET /item/%d HTTP/1.1\r\nHost: bench\r\n\r\n", r.IntN(1000))
		case s.n > 0:
			data = body[:s.n]
		}
		src, dst, sp, dp, seq, an := c.cli, c.srv, c.cport, uint16(80), c.cseq, c.sseq
		if !s.fromCli {
			src, dst, sp, dp, seq, an = c.srv, c.cli, 80, c.cport, c.sseq, c.cseq
		}
		if s.flags&ack == 0 {
			an = 0
		}
		var err error
		if frame, err = writeTCP(bw, frame, ts, uint16(st.Packets), src, dst, sp, dp, seq, an, s.flags, data); err != nil {
			return st, err
		}
		adv := uint32(len(data))
		if s.flags&(syn|fin) != 0 {
			adv++ // SYN and FIN take a sequence number
		}
		if s.fromCli {
			c.cseq += adv
		} else {
			c.sseq += adv
		}
		st.Packets++
		st.Payload += int64(len(data))
		switch {
		case s.fromCli && s.n < 0:
			st.Requests++
		case !s.fromCli && s.flags&psh != 0:
			st.Responses++
		}
		ts += o.GapNS
	}
	return st, bw.Flush()
}

// newPcap starts a classic pcap (nanosecond timestamps, Ethernet) on w.
func newPcap(w io.Writer) *bufio.Writer {
	bw := bufio.NewWriterSize(w, 1<<20)
	var hdr [24]byte
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b23c4d) // nanosecond pcap
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 65535)
	binary.LittleEndian.PutUint32(hdr[20:], 1) // Ethernet
	bw.Write(hdr[:])
	return bw
}

// writeTCP writes one IPv4 TCP packet record at ts, building it in frame
// (returned for reuse).
func writeTCP(bw *bufio.Writer, frame []byte, ts int64, id uint16, src, dst [4]byte, sp, dp uint16, seq, an uint32, flags uint8, data []byte) ([]byte, error) {
	frame = append(frame[:0], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00)
	ipLen := 20 + 20 + len(data)
	frame = append(frame, 0x45, 0, byte(ipLen>>8), byte(ipLen), byte(id>>8), byte(id), 0x40, 0, 64, 6, 0, 0)
	frame = append(frame, src[:]...)
	frame = append(frame, dst[:]...)
	frame = binary.BigEndian.AppendUint16(frame, sp)
	frame = binary.BigEndian.AppendUint16(frame, dp)
	frame = binary.BigEndian.AppendUint32(frame, seq)
	frame = binary.BigEndian.AppendUint32(frame, an)
	frame = append(frame, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0)
	frame = append(frame, data...)
	var rec [16]byte
	binary.LittleEndian.PutUint32(rec[0:], uint32(ts/1e9))
	binary.LittleEndian.PutUint32(rec[4:], uint32(ts%1e9))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
	bw.Write(rec[:])
	_, err := bw.Write(frame)
	return frame, err
}
