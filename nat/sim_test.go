package nat

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"

	"github.com/wirepath/wirepath/pcapio"
)

// This file is a small network simulator for the tests: it builds the
// pcapio.Packets that sniffers on either side of a NAT would have recorded,
// with ground truth for every packet.

// seg is one packet as its sender wrote it.
type seg struct {
	proto    uint8
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8
	ipid     uint16
	payload  []byte
}

// bodyKey fingerprints what survives NAT, as pcapio's BodyKey does.
func bodyKey(s *seg) uint64 {
	h := fnv.New64a()
	var b [16]byte
	b[0] = s.proto
	binary.BigEndian.PutUint16(b[1:], s.ipid)
	binary.BigEndian.PutUint32(b[3:], s.seq)
	binary.BigEndian.PutUint32(b[7:], s.ack)
	b[11] = s.flags
	binary.BigEndian.PutUint32(b[12:], uint32(len(s.payload)))
	h.Write(b[:])
	h.Write(s.payload)
	return h.Sum64()
}

// sight is one sniffer's view of a packet.
type sight struct {
	sniffer pcapio.SnifferID
	iface   uint16
	ttl     uint8
	ts      int64
}

// mkPacket builds the record a sniffer (or several on one path) produced.
func mkPacket(s *seg, sights ...sight) pcapio.Packet {
	p := pcapio.Packet{
		Status:     pcapio.StatusOK,
		IPVersion:  4,
		Src:        s.src.Addr(),
		Dst:        s.dst.Addr(),
		Proto:      s.proto,
		IPID:       uint32(s.ipid),
		SrcPort:    s.src.Port(),
		DstPort:    s.dst.Port(),
		Seq:        s.seq,
		Ack:        s.ack,
		TCPFlags:   s.flags,
		Payload:    s.payload,
		PayloadLen: len(s.payload),
		BodyKey:    bodyKey(s),
	}
	if s.src.Addr().Is6() {
		p.IPVersion = 6
		p.IPID = 0
	}
	for _, o := range sights {
		p.Obs = append(p.Obs, pcapio.Observation{Sniffer: o.sniffer, Interface: o.iface, TTL: o.ttl, TS: o.ts, Corrected: o.ts})
	}
	slices.SortFunc(p.Obs, func(a, b pcapio.Observation) int { return int(a.Corrected - b.Corrected) })
	h := fnv.New64a()
	fmt.Fprint(h, p.Src, p.Dst, p.SrcPort, p.DstPort, p.BodyKey)
	p.WireKey = h.Sum64()
	return p
}

// conn is one connection across a translation. The client-side view is
// what a sniffer between the client and the NAT sees; the server-side view
// what one between the NAT and the server sees. Without translation both
// are the same.
type conn struct {
	proto uint8
	// Client-side view: the client's real name and the server's name as
	// the client uses it.
	client, serverOut netip.AddrPort
	// Server-side view: the client's name as the server sees it and the
	// server's real name.
	clientOut, server netip.AddrPort
}

// canonical is the 4-tuple both views become: the real names.
func (c *conn) canonical() (client, server netip.AddrPort) { return c.client, c.server }

// sim emits packets through a NAT box between sniffer 0 (client side) and
// sniffer 1 (server side).
type sim struct {
	rng  *rand.Rand
	pkts []pcapio.Packet
	// truth maps each emitted packet (by index) to its canonical tuple.
	truth []tuple
	ipid  map[netip.Addr]uint16
	// delay is the NAT's forwarding delay in ns.
	delay int64
	// clientTTL, serverTTL are the senders' initial TTLs; the NAT
	// decrements by one unless noDecrement.
	clientTTL, serverTTL uint8
	noDecrement          bool
	// snifferC, snifferS are the capture points of either side.
	snifferC, snifferS pcapio.SnifferID
	zeroIPID           bool
	fixedISN           bool
	// skewS is what clock correction left of the server-side sniffer's
	// offset: added to its timestamps.
	skewS int64
}

type tuple struct {
	proto    uint8
	src, dst netip.AddrPort
}

func newSim(seed uint64) *sim {
	return &sim{
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		ipid:      make(map[netip.Addr]uint16),
		delay:     40_000,
		clientTTL: 64,
		serverTTL: 64,
		snifferC:  0,
		snifferS:  1,
	}
}

func (s *sim) nextID(a netip.Addr) uint16 {
	if s.zeroIPID {
		return 0
	}
	id, ok := s.ipid[a]
	if !ok {
		id = uint16(s.rng.Uint32())
	}
	id++
	if id == 0 {
		id++
	}
	s.ipid[a] = id
	return id
}

// send emits one packet of c at time ts from the client (fromClient) or
// the server, as both sniffers see it.
func (s *sim) send(c *conn, fromClient bool, ts int64, seq, ack uint32, flags uint8, payload []byte) {
	sg := seg{proto: c.proto, seq: seq, ack: ack, flags: flags, payload: payload}
	var first, second seg
	dec := uint8(1)
	if s.noDecrement {
		dec = 0
	}
	cl, sv := c.canonical()
	if c.client == c.clientOut && c.server == c.serverOut {
		// No translation: one wire packet seen by both sniffers.
		if fromClient {
			sg.ipid = s.nextID(c.client.Addr())
			sg.src, sg.dst = c.client, c.server
			s.emit2(&sg, tuple{c.proto, cl, sv}, sight{sniffer: s.snifferC, ttl: s.clientTTL, ts: ts},
				sight{sniffer: s.snifferS, ttl: s.clientTTL - dec, ts: ts + s.delay})
		} else {
			sg.ipid = s.nextID(c.server.Addr())
			sg.src, sg.dst = c.server, c.client
			s.emit2(&sg, tuple{c.proto, sv, cl}, sight{sniffer: s.snifferS, ttl: s.serverTTL, ts: ts},
				sight{sniffer: s.snifferC, ttl: s.serverTTL - dec, ts: ts + s.delay})
		}
		return
	}
	if fromClient {
		sg.ipid = s.nextID(c.client.Addr())
		first, second = sg, sg
		first.src, first.dst = c.client, c.serverOut
		second.src, second.dst = c.clientOut, c.server
		s.emit(&first, sight{sniffer: s.snifferC, ttl: s.clientTTL, ts: ts}, tuple{c.proto, cl, sv})
		s.emit(&second, sight{sniffer: s.snifferS, ttl: s.clientTTL - dec, ts: ts + s.delay + s.skewS}, tuple{c.proto, cl, sv})
	} else {
		sg.ipid = s.nextID(c.server.Addr())
		first, second = sg, sg
		first.src, first.dst = c.server, c.clientOut
		second.src, second.dst = c.serverOut, c.client
		s.emit(&first, sight{sniffer: s.snifferS, ttl: s.serverTTL, ts: ts + s.skewS}, tuple{c.proto, sv, cl})
		s.emit(&second, sight{sniffer: s.snifferC, ttl: s.serverTTL - dec, ts: ts + s.delay}, tuple{c.proto, sv, cl})
	}
}

func (s *sim) emit(sg *seg, o sight, truth tuple) { s.emit2(sg, truth, o) }

func (s *sim) emit2(sg *seg, truth tuple, o ...sight) {
	s.pkts = append(s.pkts, mkPacket(sg, o...))
	s.truth = append(s.truth, truth)
}

// tcpConn emits a whole HTTP-like TCP connection starting at ts and
// returns the time it ended.
func (s *sim) tcpConn(c *conn, ts int64, reqLen, respSegs int) int64 {
	isnC, isnS := s.rng.Uint32(), s.rng.Uint32()
	if s.fixedISN {
		isnC, isnS = 0, 0
	}
	rtt := int64(200_000 + s.rng.IntN(300_000))
	step := func() int64 { ts += rtt/2 + int64(s.rng.IntN(20_000)); return ts }
	const (
		syn = pcapio.FlagSYN
		ack = pcapio.FlagACK
		psh = pcapio.FlagPSH
		fin = pcapio.FlagFIN
	)
	s.send(c, true, step(), isnC, 0, syn, nil)
	s.send(c, false, step(), isnS, isnC+1, syn|ack, nil)
	s.send(c, true, step(), isnC+1, isnS+1, ack, nil)
	req := s.payload(reqLen)
	s.send(c, true, step(), isnC+1, isnS+1, psh|ack, req)
	cseq := isnC + 1 + uint32(len(req))
	sseq := isnS + 1
	s.send(c, false, step(), sseq, cseq, ack, nil)
	for i := 0; i < respSegs; i++ {
		body := s.payload(200 + s.rng.IntN(1200))
		s.send(c, false, step(), sseq, cseq, psh|ack, body)
		sseq += uint32(len(body))
	}
	s.send(c, true, step(), cseq, sseq, ack, nil)
	s.send(c, true, step(), cseq, sseq, fin|ack, nil)
	s.send(c, false, step(), sseq, cseq+1, fin|ack, nil)
	s.send(c, true, step(), cseq+1, sseq+1, ack, nil)
	return ts
}

// udpExchange emits n request/response datagram pairs.
func (s *sim) udpExchange(c *conn, ts int64, n int) int64 {
	for i := 0; i < n; i++ {
		ts += int64(1_000_000 + s.rng.IntN(1_000_000))
		s.send(c, true, ts, 0, 0, 0, s.payload(40+s.rng.IntN(60)))
		ts += int64(300_000 + s.rng.IntN(100_000))
		s.send(c, false, ts, 0, 0, 0, s.payload(80+s.rng.IntN(200)))
	}
	return ts
}

func (s *sim) payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(s.rng.Uint32())
	}
	return b
}

// sorted returns the packets in corrected time order, with their truth.
func (s *sim) sorted() ([]pcapio.Packet, []tuple) {
	idx := make([]int, len(s.pkts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.pkts[idx[a]].TS() < s.pkts[idx[b]].TS() })
	ps := make([]pcapio.Packet, len(idx))
	ts := make([]tuple, len(idx))
	for i, j := range idx {
		ps[i], ts[i] = s.pkts[j], s.truth[j]
	}
	return ps, ts
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// learn runs a Learner over pkts.
func learn(pkts []pcapio.Packet, opts Options) *Table {
	l := NewLearner(opts)
	for i := range pkts {
		l.Observe(&pkts[i])
	}
	return l.Finish()
}
