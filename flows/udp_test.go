package flows

import (
	"fmt"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// TestUDPExchanges: datagrams of a protocol flows does not decode are
// CALL and RETURN while the flow alternates request and answer, and `-`
// otherwise.
func TestUDPExchanges(t *testing.T) {
	const c, s = "10.0.0.1:40000", "10.0.0.2:8080" // the server's port is the lower one
	type dg struct {
		fromCaller bool
		at         int64 // ms
	}
	tests := []struct {
		name          string
		cli, srv      string
		dgs           []dg
		want          string // each datagram's kind and call id
		notEx, undone int64
		callerFrom    string
	}{
		{"echo", c, s, []dg{{true, 0}, {false, 1}, {true, 2}, {false, 3}},
			"[CALL c1.0 RETURN c1.0 CALL c1.1 RETURN c1.1]", 0, 0, "ports"},
		{"a retry, then the answer", c, s, []dg{{true, 0}, {true, 200}, {false, 201}},
			"[- - CALL c1.0 RETURN c1.0]", 0, 0, "ports"},
		{"one way", c, s, []dg{{true, 0}, {true, 1}, {true, 2}},
			"[- - - - - -]", 0, 0, "ports"},
		{"the answer after its request left", c, s, []dg{{true, 0}, {false, 1500}},
			"[- - - -]", 0, 0, "ports"},
		{"the callee twice in a row", c, s, []dg{{true, 0}, {false, 1}, {false, 2}, {true, 3}, {false, 4}},
			"[- - - - - - - - - -]", 1, 2, "ports"},
		{"the callee twice, after the pairs left", c, s, []dg{{true, 0}, {false, 1}, {false, 2000}, {false, 2001}, {true, 2002}, {false, 2003}},
			"[CALL c1.0 RETURN c1.0 - - - - - - - -]", 1, 0, "ports"},
		{"the callee twice, a pair on the edge of the settle time", c, s, []dg{{true, 0}, {false, 1}, {false, 1001}, {false, 1002}},
			"[CALL c1.0 RETURN c1.0 - - - -]", 1, 0, "ports"},
		{"the server first", c, s, []dg{{false, 0}, {true, 1}, {false, 2}},
			"[- - CALL c1.0 RETURN c1.0]", 0, 0, "ports"},
		{"ports that do not tell: the first sender calls", "10.0.0.1:50000", "10.0.0.2:40000", []dg{{true, 0}, {false, 1}},
			"[CALL c1.0 RETURN c1.0]", 0, 0, "first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pkts []*pcapio.Packet
			for i, d := range tc.dgs {
				src, dst := tc.cli, tc.srv
				if !d.fromCaller {
					src, dst = dst, src
				}
				pkts = append(pkts, udpP(src, dst, []byte(fmt.Sprintf("datagram %d", i)), at(t0+d.at*ms)))
			}
			msgs, conns, st := run(t, DefaultConfig(), pkts...)
			var got []string
			for _, m := range msgs {
				got = append(got, m.Kind.String(), m.Call.String())
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("kinds %v, want %s", got, tc.want)
			}
			if st.UDPNotExchanges != tc.notEx || st.UDPPairsUndone != tc.undone {
				t.Errorf("flows not exchanges %d, pairs undone %d; want %d, %d", st.UDPNotExchanges, st.UDPPairsUndone, tc.notEx, tc.undone)
			}
			if len(conns) != 1 || conns[0].Caller != tc.callerFrom || conns[0].Client.String() != tc.cli {
				t.Errorf("flow %+v, want the caller %s by %s", conns, tc.cli, tc.callerFrom)
			}
		})
	}
}
