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
