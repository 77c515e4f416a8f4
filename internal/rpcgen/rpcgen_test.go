package rpcgen

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

func TestGenerateTruthIsConsistent(t *testing.T) {
	tr, truth, err := Generate(Config{
		Tracelets: MultiTier(200 * time.Millisecond),
		Clients:   8, ThinkMin: 50 * time.Millisecond, ThinkMax: 150 * time.Millisecond,
		Messages: 5000, Net: 100 * time.Microsecond, CallIDs: true, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) < 5000 || len(truth.Parent) != len(tr.Messages) {
		t.Fatalf("%d messages, %d truth entries", len(tr.Messages), len(truth.Parent))
	}
	roots := map[int32]int{}
	calls, rets := 0, 0
	for i, m := range tr.Messages {
		if i > 0 && m.SendTS < tr.Messages[i-1].SendTS {
			t.Fatalf("message %d out of time order", i)
		}
		switch m.Kind {
		case trace.KindCall:
			calls++
		case trace.KindReturn:
			rets++
		}
		p := truth.Parent[i]
		if p < 0 {
			roots[truth.Request[i]]++
			if m.Kind != trace.KindCall {
				t.Errorf("message %d is a root but not a call", i)
			}
			continue
		}
		pm := tr.Messages[p]
		if pm.DstNode != m.SrcNode {
			t.Errorf("message %d sent by %s has parent %d received by %s", i, tr.Str(m.SrcNode), p, tr.Str(pm.DstNode))
		}
		if pm.RecvTS > m.SendTS || int(p) >= i {
			t.Errorf("message %d sent at %d before its parent %d arrived at %d", i, m.SendTS, p, pm.RecvTS)
		}
		if truth.Request[p] != truth.Request[i] {
			t.Errorf("message %d and its parent belong to different requests", i)
		}
	}
	if calls != rets {
		t.Errorf("%d calls, %d returns", calls, rets)
	}
	for req, n := range roots {
		if n != 1 {
			t.Errorf("request %d has %d roots", req, n)
		}
	}
	if len(roots) != len(truth.Tracelet) {
		t.Errorf("%d requests with messages, %d requests", len(roots), len(truth.Tracelet))
	}
}

// TestAddedDelay checks that WS2's added delay sits between its call to
// AUTH returning and its next call, and nowhere else.
func TestAddedDelay(t *testing.T) {
	tr, truth, err := Generate(Config{
		Tracelets: MultiTier(200 * time.Millisecond), Clients: 4,
		ThinkMin: 10 * time.Millisecond, ThinkMax: 20 * time.Millisecond,
		Duration: 20 * time.Second, Net: 50 * time.Microsecond, Seed: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := tr.Syms.Lookup("AUTH")
	ws2, _ := tr.Syms.Lookup("WS2")
	ws1, _ := tr.Syms.Lookup("WS1")
	var n2, n1 int
	for i, m := range tr.Messages {
		p := truth.Parent[i]
		if p < 0 || tr.Messages[p].SrcNode != auth {
			continue
		}
		gap := time.Duration(m.SendTS - tr.Messages[p].RecvTS)
		switch m.SrcNode {
		case ws2:
			n2++
			if gap < 150*time.Millisecond {
				t.Errorf("WS2 waited %v after AUTH", gap)
			}
		case ws1:
			n1++
			if gap > 30*time.Millisecond {
				t.Errorf("WS1 waited %v after AUTH", gap)
			}
		}
	}
	if n1 == 0 || n2 == 0 {
		t.Errorf("no AUTH calls seen (%d at WS1, %d at WS2)", n1, n2)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	cfg := Config{Tracelets: MultiTier(0), Clients: 3, ThinkMax: time.Millisecond, Messages: 300, Seed: 9, OneTimestamp: true}
	a, _, _ := Generate(cfg)
	b, _, _ := Generate(cfg)
	if len(a.Messages) != len(b.Messages) {
		t.Fatal("lengths differ")
	}
	for i := range a.Messages {
		if a.Messages[i] != b.Messages[i] {
			t.Fatalf("message %d differs", i)
		}
		if a.Messages[i].RecvTS.Known() {
			t.Fatalf("OneTimestamp left a receive time")
		}
	}
}

func TestGenerateRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Tracelets: MultiTier(0)},
		{Tracelets: MultiTier(0), Clients: 1},
		{Tracelets: MultiTier(0), Clients: 1, Messages: 1, ThinkMin: 2, ThinkMax: 1},
		{Tracelets: []Tracelet{{Weight: 0}}, Clients: 1, Messages: 1},
	} {
		if _, _, err := Generate(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}
