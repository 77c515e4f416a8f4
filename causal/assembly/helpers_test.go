package assembly

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

var bgCtx = context.Background()

// tb builds small traces for tests: messages with both timestamps (the
// network delay is 0.1 ms), endpoints, nodes and kinds.
type tb struct{ t *trace.Trace }

func newTB() *tb { return &tb{t: &trace.Trace{}} }

const ms = 1e6

// msg appends a message sent at atMS milliseconds from endpoint src (of
// node srcNode) to dst and returns its index. A negative atMS leaves both
// timestamps unknown.
func (b *tb) msg(atMS float64, kind trace.Kind, srcNode, src, dstNode, dst, id string, bytes int64) int32 {
	t := b.t
	m := trace.Message{
		SendTS: trace.Timestamp(atMS * ms), RecvTS: trace.Timestamp(atMS*ms + 0.1*ms),
		Src: t.Intern(src), Dst: t.Intern(dst), SrcNode: t.Intern(srcNode), DstNode: t.Intern(dstNode),
		Kind: kind, Bytes: bytes, Proto: trace.ProtoTCP,
	}
	if atMS < 0 {
		m.SendTS, m.RecvTS = trace.NoTime, trace.NoTime
	}
	if id != "" {
		m.CallID = t.Intern(id)
	}
	t.Messages = append(t.Messages, m)
	return int32(len(t.Messages) - 1)
}

// rpc appends a CALL from caller (at endpoint from) to callee (at to)
// sent at callMS and its RETURN sent at retMS (a negative time: not seen,
// the message is left out), with call id id, and returns their indices.
func (b *tb) rpc(callMS, retMS float64, caller, from, callee, to, id string, reqBytes int64) (c, r int32) {
	c, r = -1, -1
	if callMS >= 0 {
		c = b.msg(callMS, trace.KindCall, caller, from, callee, to, id, reqBytes)
	}
	if retMS >= 0 {
		r = b.msg(retMS, trace.KindReturn, callee, to, caller, from, id, 50)
	}
	return c, r
}

// ev returns message i's evidence for a test to fill.
func (b *tb) ev(i int32) *trace.Evidence { return &b.t.Messages[i].Evidence }

// runOn runs the engine with opt on b's trace and returns the result and
// the run.
func runOn(t *testing.T, b *tb, opt Options) (*causal.Result, *run) {
	t.Helper()
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	res, r, err := e.infer(bgCtx, b.t)
	if err != nil {
		t.Fatal(err)
	}
	checkBalance(t, res)
	checkRequests(t, res, b.t)
	return res, r
}

// poolConfigOf returns the generator configuration config (a YAML file's
// path when it ends in .yaml, else a format taking the pool size 5 and
// the clients) with that many clients.
func poolConfigOf(t *testing.T, config string, clients int) *gen.Config {
	t.Helper()
	src := fmt.Sprintf(config, 5, clients)
	if strings.HasSuffix(config, ".yaml") {
		b, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		src = string(b)
	}
	cfg, err := gen.ParseConfig(strings.NewReader(src), "pool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clients = clients
	return cfg
}

// inferGenerated generates cfg's trace and runs the engine with its
// defaults on it.
func inferGenerated(t *testing.T, cfg *gen.Config) (*gen.Output, *causal.Result, *run) {
	t.Helper()
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	res, r, err := e.infer(bgCtx, out.Trace)
	if err != nil {
		t.Fatal(err)
	}
	return out, res, r
}

// callOf returns the call whose CALL (or, without one, RETURN) is message i.
func (r *run) callOf(i int32) int32 {
	for c := range r.calls {
		if r.calls[c].callMsg == i || r.calls[c].callMsg < 0 && r.calls[c].retMsg == i {
			return int32(c)
		}
	}
	return -1
}

// parentMsg returns the CALL message of the request call of message i's
// call was assigned to (-1: none).
func (r *run) parentMsg(i int32) int32 {
	c := r.callOf(i)
	if c < 0 || r.parent[c] < 0 {
		return -1
	}
	return r.calls[r.parent[c]].callMsg
}

// checkBalance checks the engine's accounting: every message is in a
// request or had no timestamp; every call is a root, background or linked.
func checkBalance(t *testing.T, res *causal.Result) {
	t.Helper()
	n := func(name string) int64 { return enginetest.Count(res, name) }
	if in, out := n("messages"), n("messages_in_requests")+n("messages_no_timestamp"); in != out {
		t.Errorf("accounting: %d messages, %d in requests + %d without timestamp", in, n("messages_in_requests"), n("messages_no_timestamp"))
	}
	paired := n("paired_by_call_id") + n("paired_by_stream") + n("paired_by_ordinal") + n("paired_by_order")
	if c := n("calls"); c != paired+n("unpaired_calls")+n("unpaired_returns")+n("one_way_messages") {
		t.Errorf("accounting: %d calls, %d paired + %d unpaired calls + %d unpaired returns + %d one-way", c, paired, n("unpaired_calls"), n("unpaired_returns"), n("one_way_messages"))
	}
	if c, sum := n("calls"), n("calls_root")+n("calls_background")+n("links_exact_id")+n("links_thread")+n("links_only_candidate")+n("links_joint"); c != sum {
		t.Errorf("accounting: %d calls, %d roots, background or linked", c, sum)
	}
}

// checkRequests checks that the requests are trees of the trace's
// messages, parents first, every message with a timestamp in exactly one,
// each message's call and call parent consistent.
func checkRequests(t *testing.T, res *causal.Result, tr *trace.Trace) {
	t.Helper()
	seen := make([]int, len(tr.Messages))
	for _, q := range res.Requests {
		if len(q.Messages) == 0 {
			t.Fatalf("request %d has no messages", q.ID)
		}
		for i, m := range q.Messages {
			if m.Msg >= 0 {
				seen[m.Msg]++
			}
			if i == 0 && m.Parent != -1 || i > 0 && (m.Parent < 0 || m.Parent >= i) {
				t.Fatalf("request %d message %d: parent %d", q.ID, i, m.Parent)
			}
			if m.Call < 0 || m.Call > i || q.Messages[m.Call].Kind == trace.KindReturn.String() {
				t.Fatalf("request %d message %d: call %d", q.ID, i, m.Call)
			}
			if m.Call != i && m.CallParent != q.Messages[m.Call].CallParent {
				t.Fatalf("request %d message %d: call parent %d, its call's %d", q.ID, i, m.CallParent, q.Messages[m.Call].CallParent)
			}
			if m.Confidence < 0 || m.Confidence > 1.0000001 {
				t.Fatalf("request %d message %d: confidence %v", q.ID, i, m.Confidence)
			}
		}
	}
	for i, m := range tr.Messages {
		want := 1
		if !m.SendTS.Known() && !m.RecvTS.Known() {
			want = 0
		}
		if seen[i] != want {
			t.Errorf("message %d is in %d requests, want %d", i, seen[i], want)
		}
	}
}

// evidenceOf returns the evidence res's requests give for message i.
func evidenceOf(res *causal.Result, i int32) string {
	for _, q := range res.Requests {
		for _, m := range q.Messages {
			if m.Msg == int(i) {
				return m.Evidence
			}
		}
	}
	return ""
}

// callKid is a call and the child call its request makes.
type callKid struct{ call, kid int32 }

// rightParents counts the kids given their call as parent.
func (r *run) rightParents(pairs []callKid) int {
	right := 0
	for _, q := range pairs {
		if r.parentMsg(q.kid) == q.call {
			right++
		}
	}
	return right
}

// skipLongAccuracy skips a test that generates and assembles full-size
// traces to check accuracy under -short and under the race detector: `make
// test` runs it once without -race, and the engine's goroutines are raced
// by TestWorkersAgree (under load the race run of such a test took minutes
// and the package hit the 10-minute test timeout).
func skipLongAccuracy(t *testing.T) {
	t.Helper()
	if testing.Short() || raceEnabled {
		t.Skip("generates and assembles full-size traces (not under -short or -race)")
	}
}
