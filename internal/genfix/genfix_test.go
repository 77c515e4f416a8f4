package genfix

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestFixtures generates each fixture briefly and checks its shape: the
// trace has messages, every instance's true tree aggregates, and the
// options the tests rely on hold.
func TestFixtures(t *testing.T) {
	lanTr, lanTruth, err := Generate(LAN(20, 5*time.Second, 1))
	if err != nil {
		t.Fatal(err)
	}
	checkTrees(t, "lan", lanTr, lanTruth.Instances())
	if got := len(lanTruth.Instances()); got < 70 || got > 130 {
		t.Errorf("lan: %d requests in 5 s at 20/s", got)
	}
	for _, m := range lanTr.Messages {
		if m.CallID != 0 || !m.SendTS.Known() || !m.RecvTS.Known() {
			t.Fatal("lan: call ids or missing timestamps")
		}
	}

	cdnTr, cdnTruth, err := Generate(CDN(300, 2*time.Second, 1))
	if err != nil {
		t.Fatal(err)
	}
	checkTrees(t, "cdn", cdnTr, cdnTruth.Instances())
	oneTS := 0
	for _, m := range cdnTr.Messages {
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			oneTS++
		}
	}
	if oneTS < len(cdnTr.Messages)/2 {
		t.Errorf("cdn: %d of %d messages with one timestamp; clients, DNS and origins are untraced", oneTS, len(cdnTr.Messages))
	}

	c := RPC{Messages: 3000, Added: 200 * time.Millisecond, Seed: 1}.Config()
	rpcTr, rpcTruth, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	checkTrees(t, "rpc", rpcTr, rpcTruth.Instances())
	if n := len(rpcTr.Messages); n < 3000 || n > 3020 {
		t.Errorf("rpc: %d messages for 3000", n)
	}
	if got := MeanMessages(c); got < 6 || got > 8 {
		t.Errorf("rpc: %.2f messages per request", got)
	}
	// The added delay is at WS2 only.
	for i, m := range rpcTr.Messages {
		p := rpcTruth.Parent[i]
		if p < 0 || m.Kind != trace.KindCall || rpcTr.Messages[p].Kind != trace.KindReturn || rpcTr.Str(rpcTr.Messages[p].SrcNode) != "AUTH" {
			continue
		}
		d := time.Duration(m.SendTS - rpcTr.Messages[p].RecvTS)
		ws2 := rpcTr.Str(m.SrcNode) == "WS2"
		if ws2 && d < 190*time.Millisecond || !ws2 && d > 20*time.Millisecond {
			t.Fatalf("%s waits %v after AUTH", rpcTr.Str(m.SrcNode), d)
		}
	}
}

func checkTrees(t *testing.T, name string, tr *trace.Trace, insts []causal.Instance) {
	t.Helper()
	agg := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming()})
	n := 0
	for _, in := range insts {
		if len(in.Nodes) == 0 {
			continue
		}
		n += len(in.Nodes)
		if err := agg.Add(in); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n != len(tr.Messages) {
		t.Errorf("%s: the true instances hold %d of %d messages", name, n, len(tr.Messages))
	}
}
