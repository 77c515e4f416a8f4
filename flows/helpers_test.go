package flows

import (
	"io"
	"net/netip"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// Flag shorthands for the synthetic packets.
const (
	fS  = pcapio.FlagSYN
	fA  = pcapio.FlagACK
	fF  = pcapio.FlagFIN
	fR  = pcapio.FlagRST
	fP  = pcapio.FlagPSH
	fSA = fS | fA
	fPA = fP | fA
	fFA = fF | fA
)

// ms is a millisecond in nanoseconds; t0 a base time.
const (
	ms = int64(1e6)
	t0 = int64(1_700_000_000) * 1e9
)

// sniff is one observation of a synthetic packet: sniffer, TTL and time.
type sniff struct {
	sniffer pcapio.SnifferID
	ttl     uint8
	ts      int64
}

// at is the common case: sniffer 0, TTL 64.
func at(ts int64) []sniff { return []sniff{{0, 64, ts}} }

// tcpP builds a TCP packet from "addr:port" strings.
func tcpP(src, dst string, flags uint8, seq, ack uint32, payload string, obs []sniff) *pcapio.Packet {
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	p := &pcapio.Packet{Status: pcapio.StatusOK, IPVersion: 4, Src: s.Addr(), Dst: d.Addr(), Proto: pcapio.ProtoTCP,
		SrcPort: s.Port(), DstPort: d.Port(), Seq: seq, Ack: ack, TCPFlags: flags,
		Payload: []byte(payload), PayloadLen: len(payload)}
	for _, o := range obs {
		p.Obs = append(p.Obs, pcapio.Observation{Sniffer: o.sniffer, TTL: o.ttl, TS: o.ts, Corrected: o.ts})
	}
	if !s.Addr().Is4() {
		p.IPVersion = 6
	}
	return p
}

// udpP builds a UDP packet.
func udpP(src, dst string, payload []byte, obs []sniff) *pcapio.Packet {
	p := tcpP(src, dst, 0, 0, 0, string(payload), obs)
	p.Proto, p.Seq, p.Ack, p.TCPFlags = pcapio.ProtoUDP, 0, 0, 0
	return p
}

// run feeds packets through a Reader and returns the messages (cloned),
// the connection figures and the stats; it fails the test if the
// accounting does not balance.
func run(t testing.TB, cfg Config, pkts ...*pcapio.Packet) ([]*Message, []ConnStats, *Stats) {
	t.Helper()
	var conns []ConnStats
	cfg.OnConn = func(cs *ConnStats) {
		c := *cs
		c.Handshake = append([]HandshakeRTT(nil), cs.Handshake...)
		c.Points = append([]PointRTT(nil), cs.Points...)
		conns = append(conns, c)
	}
	r, err := NewReader(&SliceSource{Packets: pkts}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, r)
	st := r.Stats()
	if err := st.Check(); err != nil {
		t.Errorf("accounting: %v\n%+v", err, *st)
	}
	if st.OpenMessages != 0 || st.BufferedBytes != 0 || st.FragPending != 0 || st.ConnsOpen != 0 {
		t.Errorf("after the end: open %d, buffered %d, fragments %d, conns %d", st.OpenMessages, st.BufferedBytes, st.FragPending, st.ConnsOpen)
	}
	return msgs, conns, st
}

// drain reads every message from r, cloned.
func drain(t testing.TB, r *Reader) []*Message {
	t.Helper()
	var msgs []*Message
	for {
		m, err := r.Next()
		if err == io.EOF {
			return msgs
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m.Clone())
	}
}

// conv builds a TCP conversation between a client and a server with a
// handshake, tracking sequence numbers.
type conv struct {
	cli, srv   string
	cseq, sseq uint32
	t          int64
	step       int64
	pkts       []*pcapio.Packet
	obs        func(ts int64) []sniff
}

func newConv(cli, srv string, cisn, sisn uint32) *conv {
	return &conv{cli: cli, srv: srv, cseq: cisn, sseq: sisn, t: t0, step: ms, obs: at}
}

func (c *conv) tick() int64 { c.t += c.step; return c.t }

func (c *conv) handshake() *conv {
	c.pkts = append(c.pkts, tcpP(c.cli, c.srv, fS, c.cseq, 0, "", c.obs(c.tick())))
	c.cseq++
	c.pkts = append(c.pkts, tcpP(c.srv, c.cli, fSA, c.sseq, c.cseq, "", c.obs(c.tick())))
	c.sseq++
	c.pkts = append(c.pkts, tcpP(c.cli, c.srv, fA, c.cseq, c.sseq, "", c.obs(c.tick())))
	return c
}

// send sends data from the client (or the server) in segments of at most
// mss bytes, PSH on the last.
func (c *conv) send(fromClient bool, data string, mss int) *conv {
	for len(data) > 0 {
		k := min(mss, len(data))
		fl := uint8(fA)
		if k == len(data) {
			fl |= fP
		}
		if fromClient {
			c.pkts = append(c.pkts, tcpP(c.cli, c.srv, fl, c.cseq, c.sseq, data[:k], c.obs(c.tick())))
			c.cseq += uint32(k)
		} else {
			c.pkts = append(c.pkts, tcpP(c.srv, c.cli, fl, c.sseq, c.cseq, data[:k], c.obs(c.tick())))
			c.sseq += uint32(k)
		}
		data = data[k:]
	}
	return c
}

// lose sends data as send does, but no capture point sees it: the
// sequence numbers move on and no packet is added.
func (c *conv) lose(fromClient bool, data string) *conv {
	c.tick()
	if fromClient {
		c.cseq += uint32(len(data))
	} else {
		c.sseq += uint32(len(data))
	}
	return c
}

// ack sends a pure ACK.
func (c *conv) ack(fromClient bool) *conv {
	if fromClient {
		c.pkts = append(c.pkts, tcpP(c.cli, c.srv, fA, c.cseq, c.sseq, "", c.obs(c.tick())))
	} else {
		c.pkts = append(c.pkts, tcpP(c.srv, c.cli, fA, c.sseq, c.cseq, "", c.obs(c.tick())))
	}
	return c
}

// close sends FIN from both sides and the last ACK.
func (c *conv) close() *conv {
	c.pkts = append(c.pkts, tcpP(c.cli, c.srv, fFA, c.cseq, c.sseq, "", c.obs(c.tick())))
	c.cseq++
	c.pkts = append(c.pkts, tcpP(c.srv, c.cli, fFA, c.sseq, c.cseq, "", c.obs(c.tick())))
	c.sseq++
	c.pkts = append(c.pkts, tcpP(c.cli, c.srv, fA, c.cseq, c.sseq, "", c.obs(c.tick())))
	return c
}

// ipv4Frame builds a raw IPv4 packet (no options) around payload, which
// holds the transport header and data (or a fragment of them).
func ipv4Frame(src, dst string, id uint16, offset int, more bool, proto uint8, ttl uint8, payload []byte) []byte {
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	h := make([]byte, 20, 20+len(payload))
	h[0] = 0x45
	total := 20 + len(payload)
	h[2], h[3] = byte(total>>8), byte(total)
	h[4], h[5] = byte(id>>8), byte(id)
	ff := uint16(offset / 8)
	if more {
		ff |= 0x2000
	}
	h[6], h[7] = byte(ff>>8), byte(ff)
	h[8], h[9] = ttl, proto
	copy(h[12:16], s[:])
	copy(h[16:20], d[:])
	return append(h, payload...)
}

// decodeRaw decodes a raw IPv4 frame the way pcapio does and gives it the
// observations.
func decodeRaw(frame []byte, obs []sniff) *pcapio.Packet {
	p := &pcapio.Packet{}
	pcapio.Decode(p, pcapio.LinkTypeIPv4, frame, len(frame))
	p.Obs = p.Obs[:0]
	for _, o := range obs {
		p.Obs = append(p.Obs, pcapio.Observation{Sniffer: o.sniffer, TTL: o.ttl, TS: o.ts, Corrected: o.ts})
	}
	return p
}
