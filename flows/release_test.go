package flows

import (
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// TestEarlyRelease checks when a decoded message leaves the queue: on a
// single-point capture as soon as it is whole and its receiver
// acknowledged it (a retransmission before the acknowledgement still
// counts in its Repeats), otherwise after the settle time.
func TestEarlyRelease(t *testing.T) {
	const cli, srv = "10.0.0.1:40000", "10.0.0.2:6379"
	get := resp3("GET", "k")
	// conversation returns the packets: handshake, a GET (the packet at
	// index 3), an optional retransmission of it, the server's ACK and
	// its reply, 10 ms apart, and the index of the ACK.
	conversation := func(retx bool, obs func(int64) []sniff) ([]*pcapio.Packet, int) {
		c := newConv(cli, srv, 1000, 5000)
		c.step = 10 * ms
		c.obs = obs
		c.handshake().send(true, get, 1460)
		if retx {
			p := *c.pkts[3]
			p.Obs = []pcapio.Observation{{Sniffer: 0, TTL: 64, TS: c.tick(), Corrected: c.t}}
			c.pkts = append(c.pkts, &p)
		}
		c.ack(false)
		ackAt := len(c.pkts) - 1
		c.send(false, "$1\r\nv\r\n", 1460).ack(true)
		return c.pkts, ackAt
	}
	twoPoints := func(ts int64) []sniff { return []sniff{{0, 64, ts}, {1, 63, ts}} }
	for _, tc := range []struct {
		name    string
		retx    bool
		obs     func(int64) []sniff
		early   bool  // the GET leaves at the server's ACK
		repeats int32 // its sighting's Repeats
	}{
		{name: "one point: at the acknowledgement", obs: at, early: true},
		{name: "a retransmission before the acknowledgement counts", retx: true, obs: at, early: true, repeats: 1},
		{name: "two points: after the settle time", obs: twoPoints},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkts, ackAt := conversation(tc.retx, tc.obs)
			a, err := NewAssembler(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			left := -1 // the packet after which the GET left
			var m Message
			for i, p := range pkts {
				a.Add(p)
				for a.Next(&m) {
					if m.Label == "redis GET" {
						left = i
						if m.Sightings[0].Repeats != tc.repeats {
							t.Errorf("repeats %d, want %d", m.Sightings[0].Repeats, tc.repeats)
						}
					}
				}
			}
			a.Flush()
			for a.Next(&m) {
				if m.Label == "redis GET" {
					left = len(pkts)
				}
			}
			switch {
			case tc.early && left != ackAt:
				t.Errorf("the GET left after packet %d, want %d (the acknowledgement)", left, ackAt)
			case !tc.early && left != len(pkts):
				t.Errorf("the GET left after packet %d, want at the flush (after the settle time)", left)
			}
			if err := a.Stats().Check(); err != nil {
				t.Error(err)
			}
		})
	}
}
