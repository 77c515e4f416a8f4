package reconcile

import (
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/pcapio"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

const (
	hostA = "10.0.0.1:40000"
	hostB = "10.0.1.2:80"
)

// exchange is one call from A to B and its return, at time t (µs apart),
// as seen by the given sightings (sniffer, TTL of A's call, TTL of B's
// return; TTL 0: not seen).
type seen struct {
	sniffer        uint16
	callTTL, rtTTL uint8
	part           bool
}

func exchange(conn uint64, i uint32, t int64, ss ...seen) []*flows.Message {
	var call, ret []sn
	for k, s := range ss {
		d := int64(k) * 10 // farther sniffers later
		if s.callTTL > 0 {
			call = append(call, sn{s.sniffer, s.callTTL, t + d, t + d + 5, s.part})
		}
		if s.rtTTL > 0 {
			ret = append(ret, sn{s.sniffer, s.rtTTL, t + 1000 - d, t + 1005 - d, s.part})
		}
	}
	seq := 1000 + uint32(i)*100
	var out []*flows.Message
	if len(call) > 0 {
		out = append(out, fmsg(conn, 2*i, hostA, hostB, seq, 50, trace.KindCall, i, call...))
	}
	if len(ret) > 0 {
		out = append(out, fmsg(conn, 2*i+1, hostB, hostA, seq, 60, trace.KindReturn, i, ret...))
	}
	return out
}

func TestHomeChoice(t *testing.T) {
	tests := []struct {
		name         string
		rounds       [][]seen
		homeA, homeB string
	}{{
		name: "one switch sniffer sees everything; another sees half",
		rounds: [][]seen{
			{{0, 64, 64, false}, {1, 64, 64, false}},
			{{0, 64, 64, false}},
			{{0, 64, 64, false}, {1, 64, 64, false}},
			{{0, 64, 64, false}},
		},
		homeA: "s0", homeB: "s0",
	}, {
		name: "a router between: TTL says which side each sniffer is on",
		rounds: [][]seen{
			{{1, 63, 64, false}, {0, 64, 63, false}},
			{{1, 63, 64, false}, {0, 64, 63, false}},
		},
		homeA: "s0", homeB: "s1",
	}, {
		name: "nobody sees everything: the one that sees most",
		rounds: [][]seen{
			{{0, 64, 64, false}, {1, 64, 64, false}},
			{{0, 64, 64, false}},
			{{1, 64, 0, false}},
			{{0, 64, 64, false}},
		},
		homeA: "s0", homeB: "s0",
	}, {
		name: "a point that saw only part of the bytes is not near",
		rounds: [][]seen{
			{{0, 64, 64, true}, {1, 64, 64, false}},
			{{0, 64, 64, true}, {1, 64, 64, false}},
		},
		homeA: "s1", homeB: "s1",
	}, {
		// A tcpdump -i any on the router sees every packet, but flows
		// keeps the first sighting's TTL there: before the routing on
		// the way in. It is A's point for what A sends and B's for what
		// B sends, but not near for what they receive.
		name: "a sniffer on the router sees both sides",
		rounds: [][]seen{
			{{0, 64, 63, false}, {1, 63, 64, false}, {2, 64, 64, false}},
			{{0, 64, 63, false}, {1, 63, 64, false}, {2, 64, 64, false}},
		},
		homeA: "s0", homeB: "s1",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []*flows.Message
			for i, r := range tt.rounds {
				msgs = append(msgs, exchange(1, uint32(i), int64(i+1)*1e6, r...)...)
			}
			// Local clocks: the times are compared with the sightings.
			tr, rep := run(t, Options{Sniffers: sniffers(3), LocalClocks: true}, msgs)
			homes := map[string]string{}
			for _, h := range rep.Hosts {
				homes[h.Host] = h.Home
			}
			if homes["10.0.0.1"] != tt.homeA || homes["10.0.1.2"] != tt.homeB {
				t.Fatalf("homes %v, want A at %s and B at %s", homes, tt.homeA, tt.homeB)
			}
			// Each message's times are its ends' home sightings where the
			// home saw it whole, else another sighting of it.
			home := map[string]uint16{"s0": 0, "s1": 1, "s2": 2}
			if len(tr.Messages) != len(msgs) {
				t.Fatalf("%d messages, want %d", len(tr.Messages), len(msgs))
			}
			for i, fm := range msgs { // in time order, as the trace
				m := &tr.Messages[i]
				hs, hr := home[tt.homeA], home[tt.homeB]
				if fm.Src.String() == hostB {
					hs, hr = hr, hs
				}
				var wantS, wantR []int64
				for _, s := range fm.Sightings {
					if s.Point.Sniffer == pcapioID(hs) && s.Bytes == fm.Bytes {
						wantS = []int64{s.First}
					}
					if s.Point.Sniffer == pcapioID(hr) && s.Bytes == fm.Bytes {
						wantR = []int64{s.Last}
					}
				}
				if wantS != nil && int64(m.SendTS) != wantS[0] {
					t.Errorf("message %d: send %v, want the sender's home sighting %d", i, m.SendTS, wantS[0])
				}
				if wantR != nil && int64(m.RecvTS) != wantR[0] {
					t.Errorf("message %d: receive %v, want the receiver's home sighting %d", i, m.RecvTS, wantR[0])
				}
			}
		})
	}
}

// A message its ends' home points missed takes the time of another point
// on the same side, and none from a point on the far side of a router.
func TestSideFallback(t *testing.T) {
	msgs := exchange(1, 0, 1e6, seen{0, 64, 63, false}, seen{1, 63, 64, false})
	msgs = append(msgs, exchange(1, 1, 2e6, seen{0, 64, 63, false}, seen{1, 63, 64, false})...)
	// The third call: only the far (B) side saw it.
	msgs = append(msgs, exchange(1, 2, 3e6, seen{1, 63, 0, false})...)
	// The fourth: only a third sniffer at A's side.
	msgs = append(msgs, exchange(1, 3, 4e6, seen{2, 64, 0, false})...)
	tr, rep := run(t, Options{Sniffers: sniffers(3)}, msgs)
	calls := find(tr, hostA, hostB)
	if len(calls) != 4 {
		t.Fatalf("%d calls", len(calls))
	}
	if c := calls[2]; c.SendTS.Known() || !c.RecvTS.Known() {
		t.Errorf("call seen only at B's side: send %v recv %v, want only the receive", c.SendTS, c.RecvTS)
	}
	if c := calls[3]; !c.SendTS.Known() || c.RecvTS.Known() || c.SendTS != 4e6+0 {
		t.Errorf("call seen only at A's side by another sniffer: send %v recv %v, want send 4000000 only", c.SendTS, c.RecvTS)
	}
	if rep.SendOnly != 1 || rep.RecvOnly != 1 || rep.BothEnds != 4 {
		t.Errorf("report: %d both, %d send only, %d receive only", rep.BothEnds, rep.SendOnly, rep.RecvOnly)
	}
}

func pcapioID(i uint16) pcapio.SnifferID { return pcapio.SnifferID(i) }

// TestTraceOnOneClock: without LocalClocks the trace's timestamps are on
// the reference clock: the node offsets are applied (kept as applied_ns),
// and a receive still before its send (here the router's two sides, whose
// sightings are 5 ns apart the wrong way) is set to the send, counted.
func TestTraceOnOneClock(t *testing.T) {
	var msgs []*flows.Message
	for i, r := range [][]seen{
		{{1, 63, 64, false}, {0, 64, 63, false}},
		{{1, 63, 64, false}, {0, 64, 63, false}},
	} {
		msgs = append(msgs, exchange(1, uint32(i), int64(i+1)*1e6, r...)...)
	}
	local, _ := run(t, Options{Sniffers: sniffers(3), LocalClocks: true}, msgs)
	tr, rep := run(t, Options{Sniffers: sniffers(3)}, msgs)
	applied := map[string]int64{}
	for _, o := range tr.Meta.Offsets {
		if o.OffsetNS != 0 {
			t.Errorf("node %s: offset %d left", o.Node, o.OffsetNS)
		}
		applied[o.Node] = o.AppliedNS
	}
	moved, clamped, worst := 0, 0, trace.Timestamp(0)
	for i := range tr.Messages {
		m, l := &tr.Messages[i], &local.Messages[i]
		ws := l.SendTS - trace.Timestamp(applied[tr.Str(m.SrcNode)])
		wr := l.RecvTS - trace.Timestamp(applied[tr.Str(m.DstNode)])
		if ws != l.SendTS || wr != l.RecvTS {
			moved++
		}
		if wr < ws {
			clamped++
			worst = max(worst, ws-wr)
			wr = ws
		}
		if m.SendTS != ws || m.RecvTS != wr {
			t.Errorf("message %d: %d → %d, want %d → %d", i, m.SendTS, m.RecvTS, ws, wr)
		}
	}
	if clamped == 0 {
		t.Fatal("no receive before its send: the test means nothing")
	}
	if int64(moved) != rep.OnReference || int64(clamped) != rep.RecvClamped || int64(worst) != rep.RecvClampedMaxNS {
		t.Errorf("report: %d moved, %d clamped by up to %d; want %d, %d, %d", rep.OnReference, rep.RecvClamped, rep.RecvClampedMaxNS, moved, clamped, worst)
	}
	if !slices.ContainsFunc(tr.Meta.Warnings, func(w string) bool { return strings.Contains(w, "arrived before they were sent") }) {
		t.Errorf("no warning about the clamped receives: %q", tr.Meta.Warnings)
	}
}
