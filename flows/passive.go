package flows

import (
	"slices"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/pcapio"
)

// Passive round trips, windows and packet-pair dispersion, as tcptrace and
// MSHN measure them from a capture point: a round trip measured at a point
// goes from the point to one end of the connection and back, so each point
// measures each end's half of the end-to-end round trip, and the two
// halves add up to it wherever the point is. Three sources:
//
//   - the handshake: SYN to SYN-ACK is the server's half, SYN-ACK to the
//     ACK the client's;
//   - a data segment to the acknowledgement of exactly its last byte (Karn's
//     rule: none after a retransmission seen at that point, until new data
//     passes it);
//   - a timestamp value (RFC 7323) to its first echo, when the value was
//     seen in exactly one segment (the echo then names that segment).
//
// Delayed acknowledgements and answers that carry the acknowledgement
// make samples longer than the network's round trip, never shorter, so the
// minimum is the estimate of the network's round trip and the quantiles
// show the spread. The sampler runs only when Config.OnConn is set.

// Bounds of what the sampler keeps per connection and capture point.
const (
	maxPassivePoints = 4  // capture points per connection
	passiveSegs      = 8  // data segments waiting for their ACK, per direction
	passiveTS        = 4  // timestamp values waiting for their echo, per direction
	maxHalfSamples   = 32 // samples kept per half (the counts and the minimum go on)
	// minPairBytes is the smallest payload of both segments of a packet
	// pair: smaller ones say more about the sender's timing than the path.
	minPairBytes = 500
	// tcpHeaderBytes is the IP and TCP header of a segment with the
	// timestamp option, counted with its payload for packet-pair rates.
	tcpHeaderBytes = 52
)

// outSeg is a data segment waiting for the acknowledgement of its last byte.
type outSeg struct {
	end seqnum.Value
	ts  int64
}

// tsSeen is a timestamp value waiting for its echo: when it was first seen
// and in how many segments.
type tsSeen struct {
	val uint32
	ts  int64
	n   int32
}

// halfAcc accumulates the round trips from a capture point to one end of
// a connection and back.
type halfAcc struct {
	n, syn, acks, echoes int64
	min                  int64
	samples              []int64
}

func (h *halfAcc) add(ns int64, src *int64) {
	if ns < 0 {
		return
	}
	if h.n == 0 || ns < h.min {
		h.min = ns
	}
	h.n++
	*src++
	if len(h.samples) < maxHalfSamples {
		h.samples = append(h.samples, ns)
	}
}

// pairAcc accumulates packet-pair rates of one direction at one point.
type pairAcc struct {
	lastEnd seqnum.Value
	lastTS  int64
	lastN   int
	valid   bool
	rates   []float64
	n       int64
}

// passivePoint is what one capture point saw of a connection's segments.
// Directions are the connection's (data from ep[d]); half[e] holds the
// round trips from the point to ep[e] and back.
type passivePoint struct {
	pt     Point
	ttl    [2]uint8
	segs   [2][passiveSegs]outSeg
	nsegs  [2]int
	maxEnd [2]seqnum.Value
	sent   [2]bool // maxEnd is set
	tsv    [2][passiveTS]tsSeen
	ntsv   [2]int
	half   [2]halfAcc
	pairs  [2]pairAcc
}

// passiveState is a connection's sampler state: its points, and per
// direction the window scale, the largest advertised window and the MSS.
type passiveState struct {
	pts    []passivePoint
	wscale [2]int8 // -1 until the SYN says
	winMax [2]uint32
	winSet [2]bool
	mss    [2]uint16
}

func (s *passiveState) reset() {
	for i := range s.pts {
		p := &s.pts[i]
		h0, h1 := p.half[0].samples[:0], p.half[1].samples[:0]
		r0, r1 := p.pairs[0].rates[:0], p.pairs[1].rates[:0]
		*p = passivePoint{}
		p.half[0].samples, p.half[1].samples = h0, h1
		p.pairs[0].rates, p.pairs[1].rates = r0, r1
	}
	s.pts = s.pts[:0]
	s.wscale = [2]int8{-1, -1}
	s.winMax, s.winSet, s.mss = [2]uint32{}, [2]bool{}, [2]uint16{}
}

// point returns the state of capture point pt, nil when the connection
// already has maxPassivePoints others.
func (s *passiveState) point(pt Point) *passivePoint {
	for i := range s.pts {
		if s.pts[i].pt == pt {
			return &s.pts[i]
		}
	}
	if len(s.pts) == maxPassivePoints {
		return nil
	}
	if len(s.pts) < cap(s.pts) {
		s.pts = s.pts[:len(s.pts)+1]
	} else {
		s.pts = append(s.pts, passivePoint{})
	}
	p := &s.pts[len(s.pts)-1]
	p.pt = pt
	return p
}

// passive feeds one TCP segment from direction d, whose data starts at
// dataSeq, to the connection's sampler.
func (a *Assembler) passive(c *conn, d int, pk *pkt, dataSeq seqnum.Value) {
	if a.cfg.OnConn == nil {
		return
	}
	s := &c.ps
	syn := pk.flags&pcapio.FlagSYN != 0
	ack := pk.flags&pcapio.FlagACK != 0
	s.window(d, pk, syn)
	for _, o := range pk.obs {
		p := s.point(o.pt)
		if p == nil {
			continue
		}
		p.ttl[d] = o.ttl
		if ack && !syn {
			p.ack(d, seqnum.Value(pk.ack), o.first)
		}
		if pk.n > 0 && !syn {
			p.data(d, dataSeq, pk.n, o.first)
		}
		if pk.opts.HasTS {
			p.timestamp(d, pk.opts.TSVal, pk.opts.TSEcr, ack, o.first)
		}
	}
}

// window notes the MSS and window scale of a SYN and the largest window
// advertised in the other segments.
func (s *passiveState) window(d int, pk *pkt, syn bool) {
	if syn {
		if pk.opts.MSS > 0 {
			s.mss[d] = pk.opts.MSS
		}
		s.wscale[d] = -2 // the SYN was seen: no scaling unless it says
		if pk.opts.HasWScale {
			s.wscale[d] = int8(pk.opts.WScale)
		}
		return
	}
	if w := uint32(pk.win); !s.winSet[d] || w > s.winMax[d] {
		s.winMax[d], s.winSet[d] = w, true
	}
}

// ack takes the acknowledgement ackNo from direction d, seen at time t:
// the round trip of the newest of the other direction's data segments it
// acknowledges exactly, reaching ep[d].
func (p *passivePoint) ack(d int, ackNo seqnum.Value, t int64) {
	o := 1 - d
	if p.nsegs[o] == 0 || !p.segs[o][0].end.LessThanEq(ackNo) {
		return
	}
	k := 0
	for k < p.nsegs[o] && p.segs[o][k].end.LessThanEq(ackNo) {
		k++
	}
	if newest := p.segs[o][k-1]; newest.end == ackNo {
		p.half[d].add(t-newest.ts, &p.half[d].acks)
	}
	copy(p.segs[o][:], p.segs[o][k:p.nsegs[o]])
	p.nsegs[o] -= k
}

// data takes a data segment of n bytes at seq from direction d, seen at
// time t: new data waits for its acknowledgement, a retransmission (data
// not beyond what this point saw before) voids every segment waiting.
func (p *passivePoint) data(d int, seq seqnum.Value, n int, t int64) {
	end := seq.Add(seqnum.Size(n))
	if p.sent[d] && !p.maxEnd[d].LessThan(end) {
		p.nsegs[d] = 0
		p.pairs[d].valid = false
		return
	}
	if p.sent[d] && seq.LessThan(p.maxEnd[d]) {
		// Overlaps data sent before: a retransmission that carries more.
		p.nsegs[d] = 0
		p.pairs[d].valid = false
	} else {
		if p.nsegs[d] == passiveSegs {
			copy(p.segs[d][:], p.segs[d][1:])
			p.nsegs[d]--
		}
		p.segs[d][p.nsegs[d]] = outSeg{end: end, ts: t}
		p.nsegs[d]++
		p.pair(d, seq, n, t)
	}
	p.maxEnd[d], p.sent[d] = end, true
}

// pair takes a packet-pair sample from two consecutive large segments of
// direction d: the second's bytes over the time between the two.
func (p *passivePoint) pair(d int, seq seqnum.Value, n int, t int64) {
	pa := &p.pairs[d]
	if pa.valid && pa.lastEnd == seq && pa.lastN >= minPairBytes && n >= minPairBytes && t > pa.lastTS {
		pa.n++
		if len(pa.rates) < maxHalfSamples {
			pa.rates = append(pa.rates, float64(n+tcpHeaderBytes)*1e9/float64(t-pa.lastTS))
		}
	}
	*pa = pairAcc{lastEnd: seq.Add(seqnum.Size(n)), lastTS: t, lastN: n, valid: true, rates: pa.rates, n: pa.n}
}

// timestamp takes a segment's timestamp option from direction d: its value
// waits for an echo, its echo reply answers a value of the other
// direction (a round trip reaching ep[d]).
func (p *passivePoint) timestamp(d int, val, ecr uint32, ack bool, t int64) {
	o := 1 - d
	if ack && ecr != 0 {
		for i := 0; i < p.ntsv[o]; i++ {
			e := &p.tsv[o][i]
			if e.val != ecr {
				continue
			}
			if e.n == 1 {
				p.half[d].add(t-e.ts, &p.half[d].echoes)
			}
			copy(p.tsv[o][:], p.tsv[o][i+1:p.ntsv[o]])
			p.ntsv[o] -= i + 1
			break
		}
	}
	if n := p.ntsv[d]; n > 0 && p.tsv[d][n-1].val == val {
		p.tsv[d][n-1].n++
		return
	}
	if p.ntsv[d] == passiveTS {
		copy(p.tsv[d][:], p.tsv[d][1:])
		p.ntsv[d]--
	}
	p.tsv[d][p.ntsv[d]] = tsSeen{val: val, ts: t, n: 1}
	p.ntsv[d]++
}

// handshakeHalves adds the handshake's two halves at each point that saw
// it whole to the points' samples (cli is the client's direction).
func (s *passiveState) handshakeHalves(hs []hsPoint, cli int) {
	for _, h := range hs {
		if h.syn == 0 || h.synack == 0 || h.ack == 0 || h.synRetx || h.ackRetx || h.synack < h.syn || h.ack < h.synack {
			continue
		}
		p := s.point(h.pt)
		if p == nil {
			continue
		}
		p.half[1-cli].add(h.synack-h.syn, &p.half[1-cli].syn)
		p.half[cli].add(h.ack-h.synack, &p.half[cli].syn)
	}
}

// HalfRTT summarises the round trips from a capture point to one end of a
// connection and back, in nanoseconds: N samples, of which Handshake from
// the handshake, Acks from data segments and their acknowledgements,
// Echoes from timestamp echoes. MinNS is over every sample, the
// quantiles and MaxNS over the first 32.
type HalfRTT struct {
	N         int64 `json:"n"`
	Handshake int64 `json:"handshake"`
	Acks      int64 `json:"acks"`
	Echoes    int64 `json:"echoes"`
	MinNS     int64 `json:"min_ns"`
	P50NS     int64 `json:"p50_ns"`
	P90NS     int64 `json:"p90_ns"`
	MaxNS     int64 `json:"max_ns"`
	// Samples are the samples the quantiles come from, sorted; they are
	// owned by the Assembler and valid only during Config.OnConn.
	Samples []int64 `json:"-"`
}

// PointRTT is what one capture point measured of a TCP connection: the
// round trips from the point to the client and back (ToClient) and to the
// server and back (ToServer) — their sum is the end-to-end round trip, and
// the smaller says which end the point is near — the TTLs of either side's
// packets there, and the packet-pair rates of either side's data (bytes
// per second, wire headers included).
type PointRTT struct {
	Point string `json:"point"`
	// At is the capture point Point names.
	At          Point   `json:"-"`
	ClientTTL   uint8   `json:"client_ttl"`
	ServerTTL   uint8   `json:"server_ttl"`
	ToClient    HalfRTT `json:"to_client"`
	ToServer    HalfRTT `json:"to_server"`
	ClientPairs Rate    `json:"client_pairs"`
	ServerPairs Rate    `json:"server_pairs"`
}

// Window is what a TCP connection's segments said about one side's
// receiving: its maximum segment size (0 unless its SYN was seen with the
// option) and the largest receive window it advertised, in bytes, with
// the window scale applied when both SYNs were seen (Scaled), else the raw
// 16-bit value (a lower bound). MaxBytes is -1 when it advertised none.
type Window struct {
	MSS      int   `json:"mss"`
	MaxBytes int64 `json:"max_bytes"`
	Scaled   bool  `json:"scaled"`
}

// passiveStats fills the passive figures of cs from c (cli is the client's
// direction).
func (a *Assembler) passiveStats(c *conn, cs *ConnStats, cli int) {
	pts := cs.Points[:0]
	cs.ClientWindow, cs.ServerWindow = Window{MaxBytes: -1}, Window{MaxBytes: -1}
	if c.proto != pcapio.ProtoTCP || a.cfg.OnConn == nil {
		cs.Points = pts
		return
	}
	s := &c.ps
	if c.callerFrom == callerSYN {
		s.handshakeHalves(c.hs, cli)
	}
	srv := 1 - cli
	for i := range s.pts {
		p := &s.pts[i]
		if p.half[0].n == 0 && p.half[1].n == 0 && p.pairs[0].n == 0 && p.pairs[1].n == 0 {
			continue
		}
		pts = append(pts, PointRTT{Point: p.pt.String(), At: p.pt, ClientTTL: p.ttl[cli], ServerTTL: p.ttl[srv],
			ToClient: halfSummary(&p.half[cli]), ToServer: halfSummary(&p.half[srv]),
			ClientPairs: pairRate(&p.pairs[cli]), ServerPairs: pairRate(&p.pairs[srv])})
	}
	cs.Points = pts
	cs.ClientWindow, cs.ServerWindow = s.windowOf(cli), s.windowOf(srv)
}

// windowOf is direction d's Window.
func (s *passiveState) windowOf(d int) Window {
	w := Window{MSS: int(s.mss[d]), MaxBytes: -1}
	if !s.winSet[d] {
		return w
	}
	w.MaxBytes = int64(s.winMax[d])
	if s.wscale[0] != -1 && s.wscale[1] != -1 {
		// Both SYNs seen: scaling applies when both carried the option.
		w.Scaled = true
		if s.wscale[0] >= 0 && s.wscale[1] >= 0 {
			w.MaxBytes <<= uint(s.wscale[d])
		}
	}
	return w
}

// RTT returns the end-to-end round trip the point measured, the sum of
// the smallest samples of both halves, and whether both were measured.
func (p *PointRTT) RTT() (int64, bool) {
	if p.ToClient.N == 0 || p.ToServer.N == 0 {
		return 0, false
	}
	return p.ToClient.MinNS + p.ToServer.MinNS, true
}

// BestPoint returns the point that measured both halves with the most
// samples, or if none measured both, the one with the most samples; nil
// for none.
func BestPoint(pts []PointRTT) *PointRTT {
	var best *PointRTT
	score := func(p *PointRTT) (bool, int64) {
		_, both := p.RTT()
		return both, p.ToClient.N + p.ToServer.N
	}
	for i := range pts {
		p := &pts[i]
		if best == nil {
			best = p
			continue
		}
		b1, n1 := score(p)
		b0, n0 := score(best)
		if b1 && !b0 || b1 == b0 && n1 > n0 {
			best = p
		}
	}
	return best
}

func halfSummary(h *halfAcc) HalfRTT {
	out := HalfRTT{N: h.n, Handshake: h.syn, Acks: h.acks, Echoes: h.echoes, MinNS: h.min, Samples: h.samples}
	if len(h.samples) > 0 {
		slices.Sort(h.samples)
		out.P50NS = h.samples[len(h.samples)/2]
		out.P90NS = h.samples[len(h.samples)*9/10]
		out.MaxNS = h.samples[len(h.samples)-1]
	}
	return out
}

func pairRate(p *pairAcc) Rate {
	if len(p.rates) == 0 {
		return Rate{N: p.n}
	}
	slices.Sort(p.rates)
	return Rate{N: p.n, P50: p.rates[len(p.rates)/2], Max: p.rates[len(p.rates)-1]}
}
