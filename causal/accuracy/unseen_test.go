package accuracy

import (
	"math"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestUnseen runs a short version of the sweep on the systems the
// engines were not tuned on: every configuration generates, FCFS and the
// assembly engine score it without error, the assembly engine's
// accounting balances, its confidences are probabilities, and at 1
// request in flight it gets nearly every request right (the table's
// 1-in-flight rows; on background, with its health checks, refreshes and
// pings kept out by their rhythm).
func TestUnseen(t *testing.T) {
	pts, err := UnseenSweep(ctx, UnseenConfigs, []int{1, 4}, 150, map[string]Engine{"assembly": Assembly()}, []string{"assembly"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2*2*len(UnseenConfigs) {
		t.Fatalf("%d points, want %d", len(pts), 2*2*len(UnseenConfigs))
	}
	for _, p := range pts {
		if p.Err != "" || len(p.Unbalanced) > 0 {
			t.Errorf("%s %s at %d: error %q, accounting %v", p.Config, p.Method, p.Clients, p.Err, p.Unbalanced)
		}
		if p.Score.Requests+p.Score.Background != p.Stats.Instances {
			t.Errorf("%s %s at %d: %d requests and %d background, %d instances", p.Config, p.Method, p.Clients, p.Score.Requests, p.Score.Background, p.Stats.Instances)
		}
		if p.Method != "assembly" {
			continue
		}
		if c := p.Confidence; math.IsNaN(c) || c < 0 || c > 1 {
			t.Errorf("%s at %d: mean confidence %v", p.Config, p.Clients, c)
		}
		if p.Clients == 1 && p.Score.Share() < 0.95 {
			t.Errorf("%s at 1 in flight: %.1f %% of requests right", p.Config, 100*p.Score.Share())
		}
	}
}

// TestUnbalanced checks that the accounting identities are checked on the
// engine's own counters and only when all of them are there.
func TestUnbalanced(t *testing.T) {
	res := &causal.Result{Engine: "e"}
	add := func(stage, name string, v int64) {
		res.Accounting = append(res.Accounting, trace.Count{Stage: stage, Name: name, Value: v})
	}
	add("e", "messages", 10)
	add("e", "messages_in_requests", 9)
	add("other", "messages_no_timestamp", 1)
	if got := Unbalanced(res); len(got) != 0 {
		t.Errorf("a counter of another stage completed the identity: %v", got)
	}
	add("e", "messages_no_timestamp", 0)
	if got := Unbalanced(res); len(got) != 1 || !strings.HasPrefix(got[0], "messages 10 ≠") {
		t.Errorf("10 ≠ 9 + 0: %v", got)
	}
	res.Accounting[1].Value = 10
	if got := Unbalanced(res); len(got) != 0 {
		t.Errorf("10 = 10 + 0: %v", got)
	}
}

// TestUnseenQueue runs the worker pool at 16 in flight (300 instances):
// its worker serves 4 requests at once and the others queue, first come
// first served, which the assembly engine learns from the capture
// (causal/assembly's queues) to read their calls from the start of their
// service; without it no request was right (docs/accuracy.md).
func TestUnseenQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and assembles a 300-request trace")
	}
	pts, err := UnseenSweep(ctx, []string{"workerpool"}, []int{16}, 300, map[string]Engine{"assembly": Assembly()}, []string{"assembly"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		t.Logf("%s: %d of %d requests right", p.Method, p.Score.Right, p.Score.Requests)
		if p.Method == "assembly" && p.Score.Share() < 0.6 {
			t.Errorf("the assembly engine gets %.1f %% of the worker pool's requests right at 16 in flight, want at least 60 %%", 100*p.Score.Share())
		}
	}
}
