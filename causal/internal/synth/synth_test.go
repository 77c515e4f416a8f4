package synth

import (
	"testing"
	"time"
)

// TestTruthIsConsistent checks what the generated truth promises: every
// message's parent was received by its sender before it was sent (on the
// sender's clock, which is the parent receiver's), requests are trees,
// untraced roles have no timestamps, and the trace is in true send order.
func TestTruthIsConsistent(t *testing.T) {
	for _, sys := range []System{MultiTier(50, 10*time.Second, 1), CDN(200, 10*time.Second, 2)} {
		tr, truth, err := Generate(sys)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Messages) < 500 {
			t.Fatalf("only %d messages", len(tr.Messages))
		}
		untraced := map[string]bool{}
		for i, ro := range sys.Roles {
			if ro.Untraced {
				untraced[hostPrefix(i)] = true
			}
		}
		roots := map[int32]int{}
		for i, m := range tr.Messages {
			p := truth.Parent[i]
			src, dst := tr.Str(m.SrcNode), tr.Str(m.DstNode)
			if untraced[src[:5]] == m.SendTS.Known() || untraced[dst[:5]] == m.RecvTS.Known() {
				t.Fatalf("message %d %s→%s: timestamps %v %v do not match tracing", i, src, dst, m.SendTS, m.RecvTS)
			}
			if p < 0 {
				roots[truth.Request[i]]++
				continue
			}
			pm := tr.Messages[p]
			if pm.DstNode != m.SrcNode || truth.Request[p] != truth.Request[i] {
				t.Fatalf("message %d: parent %d goes to %s, not %s", i, p, tr.Str(pm.DstNode), src)
			}
			if pm.RecvTS.Known() && m.SendTS.Known() && pm.RecvTS > m.SendTS {
				t.Fatalf("message %d sent at %v before its parent arrived at %v", i, m.SendTS, pm.RecvTS)
			}
		}
		for q, n := range roots {
			if n != 1 {
				t.Fatalf("request %d has %d roots", q, n)
			}
		}
		inst := truth.Instances()
		total := 0
		for _, in := range inst {
			total += len(in)
		}
		if len(inst) != len(roots) || total != len(tr.Messages) {
			t.Errorf("%d instances of %d messages, want %d and %d", len(inst), total, len(roots), len(tr.Messages))
		}
	}
}

// TestClockOffsets checks that a host's clock offset moves every
// timestamp taken there, and nothing else.
func TestClockOffsets(t *testing.T) {
	sys := MultiTier(50, 5*time.Second, 4)
	sys.ClockOffset = time.Hour
	skewed, truth, err := Generate(sys)
	if err != nil {
		t.Fatal(err)
	}
	if len(truth.Offsets) == 0 {
		t.Fatal("no offsets")
	}
	for i, m := range skewed.Messages {
		if m.SendTS.Known() && m.RecvTS.Known() {
			net := int64(m.RecvTS-m.SendTS) - (truth.Offsets[skewed.Str(m.DstNode)] - truth.Offsets[skewed.Str(m.SrcNode)])
			if net < 0 || net > int64(time.Millisecond) {
				t.Fatalf("message %d: network delay %v after removing the offsets", i, time.Duration(net))
			}
		}
	}
}

// hostPrefix is the first five characters of the names of role number
// role's hosts (10.<role+1>.), for the fewer than nine roles of the
// systems tested.
func hostPrefix(role int) string { return "10." + string(rune('1'+role)) + "." }
