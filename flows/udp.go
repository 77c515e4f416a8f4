package flows

import (
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"

	farm "github.com/dgryski/go-farm"
)

// udp processes one UDP datagram: one datagram is one message, unless it
// is another capture point's copy of a datagram not yet emitted (the other
// side of a NAT), which only adds sightings.
func (a *Assembler) udp(pk *pkt) {
	key, d := keyOf(pk.src, pk.dst, pk.sport, pk.dport, pcapio.ProtoUDP)
	a.st.UDPBytes += int64(pk.n)
	c := a.conns[key]
	if c == nil {
		c = a.newConn(key, pcapio.ProtoUDP)
	}
	a.touch(c)
	c.half[d].packets++
	a.placeUDP(c)
	fpLen := min(a.cfg.FingerprintLen, len(pk.payload))
	fp := farm.Fingerprint64(pk.payload[:fpLen])

	// Another point's copy of a datagram still waiting to be emitted?
	for _, m := range c.unsealed.all() {
		if m.dir != d || m.Bytes != int64(pk.n) || m.Fingerprint != fp || m.FingerprintLen != fpLen {
			continue
		}
		disjoint := true
		for _, o := range pk.obs {
			for i := range m.Sightings {
				if m.Sightings[i].Point == o.pt {
					disjoint = false
				}
			}
		}
		if !disjoint {
			continue
		}
		for _, o := range pk.obs {
			s := m.sighting(o)
			s.FirstBytes, s.Bytes, s.Segments = int64(pk.n), int64(pk.n), 1
		}
		a.st.UDPCopies++
		a.st.UDPCopyBytes += int64(pk.n)
		return
	}

	a.st.UDPMessageBytes += int64(pk.n)
	c.half[d].bytes += int64(pk.n)
	m := a.newMsg(c, d)
	m.Proto = trace.ProtoUDP
	m.Bytes = int64(pk.n)
	m.Segments, m.Writes = 1, 1
	m.End = EndDatagram
	if len(pk.payload) < pk.n {
		m.TruncBytes = int64(pk.n - len(pk.payload))
	}
	m.prefixN = copy(m.prefix[:fpLen], pk.payload)
	for _, o := range pk.obs {
		s := m.sighting(o)
		s.FirstBytes, s.Bytes, s.Segments = int64(pk.n), int64(pk.n), 1
	}
	if a.cfg.Framing && (pk.sport == 53 || pk.dport == 53) {
		if hd, ok := parseDNSHeader(pk.payload); ok {
			m.App, m.dns, m.dnsOK = AppDNS, hd, true
			a.dnsLabel(m, pk.payload)
			if !c.callerDone {
				if hd.response {
					c.setCaller(1-d, callerDNS)
				} else {
					c.setCaller(d, callerDNS)
				}
			}
		}
	}
	a.assignKind(c, m)
	a.queueMsg(m)
}

// assignDatagram gives kinds to the datagrams of a UDP flow whose protocol
// flows does not decode, where the flow shows request and answer: a
// datagram from the callee is the RETURN of the caller's datagram just
// before it, which becomes its CALL, when it came within Config.Settle of
// it (so that the CALL is still waiting to be emitted). The caller is the side with the
// server's port (inferCaller) or else the one that sent first. A flow
// stops being taken for request and answer when the callee sends twice in
// a row (QUIC, RTP, streams both ways): the pairs still waiting are undone
// and its datagrams stay `-`, as do one-way flows (syslog, statsd) and
// answers that come after their request left.
func (a *Assembler) assignDatagram(c *conn, m *msg) {
	if c.notExchange {
		return
	}
	if c.caller < 0 {
		c.setCaller(m.dir, callerFirst)
	}
	prev, seen := c.dgramDir, c.dgramSeen
	c.dgramDir, c.dgramSeen = int8(m.dir), true
	switch {
	case m.dir == int(c.caller):
	case seen && int(prev) == m.dir:
		a.undoExchanges(c)
	default:
		if q := c.unsealed.before(m); q != nil && q.dir != m.dir && q.Kind == trace.KindUnknown && a.now-q.cutAt <= a.settle {
			q.Kind, q.Call = trace.KindCall, CallID{c.id, c.nextCall}
			m.Kind, m.Call = trace.KindReturn, q.Call
			c.nextCall++
		}
	}
}

// undoExchanges stops taking UDP flow c for request and answer: the pairs
// whose CALL came within Config.Settle are taken back (older CALLs left,
// or may have, whatever other traffic moved the clock, and keep their
// RETURNs).
func (a *Assembler) undoExchanges(c *conn) {
	c.notExchange = true
	a.st.UDPNotExchanges++
	undone := CallID{}
	for _, o := range c.unsealed.all() {
		switch {
		case o.Kind == trace.KindCall && a.now-o.cutAt <= a.settle:
			undone = o.Call
		case o.Kind == trace.KindReturn && o.Call == undone:
		default:
			continue
		}
		o.Kind, o.Call = trace.KindUnknown, CallID{}
		a.st.UDPPairsUndone++
	}
}
