package flows

import (
	"net/netip"
	"slices"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// maxSamples bounds the round-trip and throughput samples kept per
// connection (the counts go on).
const maxSamples = 1024

// connAcc accumulates a connection's loss counters.
type connAcc struct {
	gaps, gapBytes      int64
	retxSegs, retxBytes int64
}

// connFigs are a connection's figures from its messages: the calls
// waiting for their returns, the round-trip and throughput samples. A
// connection gets them with its first call or multi-segment message
// (conn.fig), so that one that never carries any (a half-open one of a
// SYN flood) does not pay their 700 bytes.
type connFigs struct {
	calls     [8]callRec
	rtt       []int64
	rttN      int64
	tput      [2][]float64 // bytes/s per message, by direction
	tputN     [2]int64
	tputBytes [2]int64
	tputNS    [2]int64
}

// noFigs stands for the figures of a connection that has none.
var noFigs connFigs

// fig returns c's figures, made on first use.
func (c *conn) fig() *connFigs {
	if c.figs == nil {
		c.figs = new(connFigs)
	}
	return c.figs
}

// reset prepares f for a new connection, keeping its sample buffers.
func (f *connFigs) reset() {
	rtt, tp0, tp1 := f.rtt[:0], f.tput[0][:0], f.tput[1][:0]
	*f = connFigs{rtt: rtt, tput: [2][]float64{tp0, tp1}}
}

// accountMessage feeds an emitted message into its connection's figures:
// a round-trip sample for a RETURN whose CALL was seen at the same point,
// and a throughput sample for a message of several segments.
func (a *Assembler) accountMessage(c *conn, m *msg) {
	switch m.Kind {
	case trace.KindCall:
		c.noteCall(m)
	case trace.KindReturn:
		c.sampleRTT(m)
	}
	c.sampleThroughput(m)
}

// noteCall remembers where and when a CALL was seen, for its RETURN.
func (c *conn) noteCall(m *msg) {
	f := c.fig()
	r := &f.calls[m.Call.Index%uint32(len(f.calls))]
	*r = callRec{idx: m.Call.Index, valid: true}
	for i := range m.Sightings {
		if int(r.n) == len(r.pts) {
			break
		}
		s := &m.Sightings[i]
		r.pts[r.n], r.ttl[r.n], r.last[r.n] = s.Point, s.TTL, s.Last
		r.n++
	}
}

// sampleRTT takes a round trip from a RETURN and its CALL, at the point
// nearest the caller that saw both: from the last byte of the call to the
// first byte of the return.
func (c *conn) sampleRTT(m *msg) {
	f := c.figs
	if f == nil {
		return // no call noted
	}
	r := &f.calls[m.Call.Index%uint32(len(f.calls))]
	if !r.valid || r.idx != m.Call.Index {
		return
	}
	r.valid = false
	best := -1
	var sample int64
	for i := 0; i < int(r.n); i++ {
		for j := range m.Sightings {
			s := &m.Sightings[j]
			if s.Point != r.pts[i] {
				continue
			}
			if best < 0 || r.ttl[i] > r.ttl[best] {
				best, sample = i, s.First-r.last[i]
			}
		}
	}
	if best >= 0 && sample >= 0 {
		f.rttN++
		if len(f.rtt) < maxSamples {
			f.rtt = append(f.rtt, sample)
		}
	}
}

// sampleThroughput takes MSHN's throughput of a message: the bytes after
// the first segment over the time from the first segment to the last, at
// the point nearest the receiver that saw at least two segments.
func (c *conn) sampleThroughput(m *msg) {
	var rs *Sighting
	for i := range m.Sightings {
		s := &m.Sightings[i]
		if s.Segments < 2 || s.Last <= s.First || s.Bytes <= s.FirstBytes {
			continue
		}
		if rs == nil || s.TTL < rs.TTL || (s.TTL == rs.TTL && s.Last > rs.Last) {
			rs = s
		}
	}
	if rs == nil {
		return
	}
	acc := c.fig()
	d := m.dir
	if c.caller >= 0 && int(c.caller) != 0 {
		d = 1 - d // index by client/server direction
	}
	b, ns := rs.Bytes-rs.FirstBytes, rs.Last-rs.First
	acc.tputN[d]++
	acc.tputBytes[d] += b
	acc.tputNS[d] += ns
	if len(acc.tput[d]) < maxSamples {
		acc.tput[d] = append(acc.tput[d], float64(b)*1e9/float64(ns))
	}
}

// ConnStats is the passive figures of one connection (or UDP flow), in
// the spirit of MSHN: round trips from the handshake and from call/return
// pairs, and throughput of multi-segment messages measured from the first
// segment to the last (so the wait for a late writer is not counted).
// "Client" is the caller side when it is known, else the lower endpoint.
type ConnStats struct {
	Conn      uint64         `json:"conn"`
	Proto     string         `json:"proto"`
	Client    netip.AddrPort `json:"client"`
	Server    netip.AddrPort `json:"server"`
	Caller    string         `json:"caller"`
	MidStream bool           `json:"mid_stream"`
	StartNS   int64          `json:"start_ns"`
	EndNS     int64          `json:"end_ns"`
	End       string         `json:"end"`

	ClientPackets  int64 `json:"client_packets"`
	ServerPackets  int64 `json:"server_packets"`
	ClientBytes    int64 `json:"client_bytes"`
	ServerBytes    int64 `json:"server_bytes"`
	ClientMessages int64 `json:"client_messages"`
	ServerMessages int64 `json:"server_messages"`
	Gaps           int64 `json:"gaps"`
	GapBytes       int64 `json:"gap_bytes"`
	RetransSegs    int64 `json:"retrans_segments"`
	RetransBytes   int64 `json:"retrans_bytes"`

	// Handshake has one entry per capture point that saw SYN, SYN-ACK and
	// the ACK completing the handshake, none of them retransmitted.
	Handshake []HandshakeRTT `json:"handshake"`
	// RTT summarises call-to-return times (last byte of the CALL to the
	// first byte of its RETURN) at the point nearest the caller.
	RTT Summary `json:"rtt"`
	// ClientThroughput is the rate of the client's multi-segment messages,
	// ServerThroughput that of the server's, in bytes per second.
	ClientThroughput Rate `json:"client_throughput"`
	ServerThroughput Rate `json:"server_throughput"`

	// Points are the passive round trips each capture point measured of
	// a TCP connection (handshake, data and acknowledgement, timestamp
	// echoes: see PointRTT), and the packet-pair rates there.
	Points []PointRTT `json:"points"`
	// ClientWindow and ServerWindow are what each side's segments said
	// about its receiving: MSS and the largest window it advertised.
	ClientWindow Window `json:"client_window"`
	ServerWindow Window `json:"server_window"`
}

// HandshakeRTT is the handshake as one capture point saw it. ToServerNS
// (SYN to SYN-ACK) is the round trip between the point and the server,
// ToClientNS (SYN-ACK to ACK) that between the point and the client; their
// sum is the end-to-end round trip wherever the point is.
type HandshakeRTT struct {
	Point      string `json:"point"`
	ToServerNS int64  `json:"to_server_ns"`
	ToClientNS int64  `json:"to_client_ns"`
	RTTNS      int64  `json:"rtt_ns"`
}

// Summary summarises duration samples in nanoseconds. N counts every
// sample; the quantiles use the first 1024.
type Summary struct {
	N     int64 `json:"n"`
	MinNS int64 `json:"min_ns"`
	P50NS int64 `json:"p50_ns"`
	MaxNS int64 `json:"max_ns"`
}

// Rate summarises throughput samples in bytes per second; Aggregate is
// all their bytes over all their durations.
type Rate struct {
	N         int64   `json:"n"`
	P50       float64 `json:"p50_bps"`
	Max       float64 `json:"max_bps"`
	Aggregate float64 `json:"aggregate_bps"`
}

// connStats fills cs with c's figures.
func (a *Assembler) connStats(c *conn, cs *ConnStats) {
	hs, pts := cs.Handshake[:0], cs.Points[:0]
	*cs = ConnStats{Points: pts, Conn: c.id, Proto: traceProto(c.proto).String(), Caller: c.callerFrom.String(),
		MidStream: c.midStream, StartNS: c.first, EndNS: c.last, End: c.end.String()}
	cli := 0
	if c.caller >= 0 {
		cli = int(c.caller)
	}
	srv := 1 - cli
	cs.Client, cs.Server = c.ep[cli], c.ep[srv]
	cs.ClientPackets, cs.ServerPackets = c.half[cli].packets, c.half[srv].packets
	cs.ClientBytes, cs.ServerBytes = c.half[cli].bytes, c.half[srv].bytes
	cs.ClientMessages, cs.ServerMessages = c.half[cli].msgs, c.half[srv].msgs
	cs.Gaps, cs.GapBytes = c.acc.gaps, c.acc.gapBytes
	cs.RetransSegs, cs.RetransBytes = c.acc.retxSegs, c.acc.retxBytes
	if c.proto == pcapio.ProtoTCP && c.callerFrom == callerSYN {
		for _, p := range c.hs {
			if p.syn == 0 || p.synack == 0 || p.ack == 0 || p.synRetx || p.ackRetx || p.synack < p.syn || p.ack < p.synack {
				continue
			}
			hs = append(hs, HandshakeRTT{Point: p.pt.String(), ToServerNS: p.synack - p.syn, ToClientNS: p.ack - p.synack, RTTNS: p.ack - p.syn})
		}
	}
	cs.Handshake = hs
	if len(hs) == 0 {
		cs.Handshake = hs[:0]
	}
	a.passiveStats(c, cs, cli)
	f := c.figs
	if f == nil {
		f = &noFigs
	}
	cs.RTT = summarize(f.rtt, f.rttN)
	// tput is indexed by direction relative to the client (0 = client's).
	cs.ClientThroughput = rate(f.tput[0], f.tputN[0], f.tputBytes[0], f.tputNS[0])
	cs.ServerThroughput = rate(f.tput[1], f.tputN[1], f.tputBytes[1], f.tputNS[1])
}

func summarize(s []int64, n int64) Summary {
	if len(s) == 0 {
		return Summary{N: n}
	}
	slices.Sort(s)
	return Summary{N: n, MinNS: s[0], P50NS: s[len(s)/2], MaxNS: s[len(s)-1]}
}

func rate(s []float64, n, bytes, ns int64) Rate {
	if len(s) == 0 {
		return Rate{N: n}
	}
	slices.Sort(s)
	r := Rate{N: n, P50: s[len(s)/2], Max: s[len(s)-1]}
	if ns > 0 {
		r.Aggregate = float64(bytes) * 1e9 / float64(ns)
	}
	return r
}
