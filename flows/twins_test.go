package flows

import (
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// TestNATTwinsAreNotRetransmissions: one sniffer that sees both sides of
// a NAT (tcpdump -i any on a load balancer) sees every segment twice at
// one capture point, once as sent and once renamed (another NAT view,
// pcapio.Packet.Orig) or after a router (another TTL). Those copies are
// not retransmissions; the same segment seen again with the same view
// and TTL is. The demo counted 450 retransmitted segments and 450
// retransmitted SYNs where tshark finds none (issue 12).
func TestNATTwinsAreNotRetransmissions(t *testing.T) {
	cli, srv := "10.0.0.1:40000", "10.0.0.2:80"
	const view = 0x9e3779b97f4a7c15 // the Orig of a renamed copy
	twin := func(p *pcapio.Packet, orig uint64, ttl uint8) *pcapio.Packet {
		c := p.Clone()
		c.Orig = orig
		for i := range c.Obs {
			c.Obs[i].TTL = ttl
			c.Obs[i].TS += 5000 // 5 µs later
			c.Obs[i].Corrected += 5000
		}
		return c
	}
	tests := []struct {
		name          string
		orig          uint64
		ttl           uint8
		retx, synRetx int64
	}{
		{"renamed copy", view, 64, 0, 0},
		{"routed copy", 0, 63, 0, 0},
		{"renamed and routed", view, 63, 0, 0},
		{"same view and TTL: retransmissions", 0, 64, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syn := tcpP(cli, srv, fS, 100, 0, "", at(t0))
			synack := tcpP(srv, cli, fSA, 500, 101, "", at(t0+ms))
			ack := tcpP(cli, srv, fA, 101, 501, "", at(t0+2*ms))
			req := tcpP(cli, srv, fPA, 101, 501, "GET / HTTP/1.1\r\n\r\n", at(t0+3*ms))
			resp := tcpP(srv, cli, fPA, 501, 119, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", at(t0+4*ms))
			fin1 := tcpP(cli, srv, fFA, 119, 539, "", at(t0+5*ms))
			fin2 := tcpP(srv, cli, fFA, 539, 120, "", at(t0+6*ms))
			last := tcpP(cli, srv, fA, 120, 540, "", at(t0+7*ms))
			pkts := []*pcapio.Packet{
				syn, twin(syn, tt.orig, tt.ttl), synack, twin(synack, tt.orig, tt.ttl), ack,
				req, twin(req, tt.orig, tt.ttl), resp, twin(resp, tt.orig, tt.ttl), fin1, fin2, last,
			}
			msgs, _, st := run(t, DefaultConfig(), pkts...)
			if len(msgs) != 2 {
				t.Fatalf("%d messages, want 2", len(msgs))
			}
			if st.RetransSegments != tt.retx || st.SYNRetrans != tt.synRetx {
				t.Errorf("%d retransmitted segments, %d SYNs; want %d, %d", st.RetransSegments, st.SYNRetrans, tt.retx, tt.synRetx)
			}
			if tt.retx == 0 && st.CopySegments != 2 {
				t.Errorf("%d copies, want the 2 twins", st.CopySegments)
			}
		})
	}
}
