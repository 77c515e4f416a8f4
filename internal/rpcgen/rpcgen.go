// Package rpcgen generates synthetic RPC message traces whose causality is
// known by construction, for the tests and benchmarks of the nesting and
// convolution engines.
//
// A Config lists call templates (Project 5's tracelets, section 7.1.1): a
// tree of RPCs with Gaussian delays at each callee, children called in
// series or in parallel, and alternative callees picked at random (load
// balancing). Clients run requests one after another with a uniformly random
// think time, many clients in parallel. Generate returns the trace, sorted by
// send time, and the ground truth: each message's causal parent (the latest
// message that reached its sender before it was sent, as docs/causal-nesting.md
// defines it) and the request it belongs to.
//
// It is a test fixture, not the user-facing generator (wirepath gen).
package rpcgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// Delay is a Gaussian delay, truncated at MinDelay.
type Delay struct {
	Mean, SD time.Duration
}

// MinDelay is the smallest delay Delay draws.
const MinDelay = 10 * time.Microsecond

// Call is a template of one RPC and the calls it makes.
type Call struct {
	// To is the callee; when Alt is not empty one of Alt is picked instead,
	// uniformly at random.
	To  string
	Alt []string
	// Pre is the time at the callee from the call's arrival to its first
	// child call (or to its return when it has no children).
	Pre Delay
	// Gap is the time from a child's return reaching the callee to its next
	// child call, or to its own return after the last child. Gaps[i], when
	// present, replaces Gap after child i.
	Gap  Delay
	Gaps []Delay
	// Parallel calls all children at once (20 µs apart) instead of in
	// series; the return follows Gap after the last child's return.
	Parallel bool
	Kids     []Call
}

// Tracelet is one kind of request, chosen with probability proportional to
// Weight.
type Tracelet struct {
	Name   string
	Weight float64
	Root   Call
}

// Config describes a generated trace.
type Config struct {
	Tracelets []Tracelet
	// Clients run in parallel; each runs one request at a time.
	Clients int
	// ThinkMin and ThinkMax bound the uniform think time between a
	// client's requests.
	ThinkMin, ThinkMax time.Duration
	// Messages stops the clients once this many messages were generated
	// (the last requests are completed); Duration stops them at that time.
	// At least one of them must be set.
	Messages int
	Duration time.Duration
	// Net is the one-way network delay of every message.
	Net time.Duration
	// CallIDs gives every call and its return a call id, unique on its
	// connection: a 16-bit counter per connection, as RPC transaction ids
	// are.
	CallIDs bool
	// OneTimestamp leaves RecvTS unknown, as Project 5's traces are.
	OneTimestamp bool
	// Skew adds a clock offset to every timestamp taken at a node.
	Skew map[string]time.Duration
	// Seed seeds the random generator.
	Seed uint64
	// Start is the time of the trace's start (default 2024-01-01).
	Start time.Time
}

// Truth is the ground truth of a generated trace, by message index.
type Truth struct {
	// Parent is each message's causal parent, -1 for a request's first
	// message.
	Parent []int32
	// Request is the request each message belongs to, numbered from 0 in
	// order of their start.
	Request []int32
	// Tracelet is the index of each request's tracelet.
	Tracelet []int32
}

type rawMsg struct {
	m      trace.Message
	parent int32 // index in raw
	req    int32
}

type gen struct {
	cfg   Config
	rng   *rand.Rand
	t     *trace.Trace
	raw   []rawMsg
	base  int64
	ids   map[[2]string]int
	ip    map[string]string
	total float64
}

// Generate builds the trace and its ground truth.
func Generate(cfg Config) (*trace.Trace, *Truth, error) {
	if len(cfg.Tracelets) == 0 {
		return nil, nil, fmt.Errorf("rpcgen: no tracelets")
	}
	if cfg.Clients <= 0 {
		return nil, nil, fmt.Errorf("rpcgen: need at least one client")
	}
	if cfg.Messages <= 0 && cfg.Duration <= 0 {
		return nil, nil, fmt.Errorf("rpcgen: set Messages or Duration")
	}
	if cfg.ThinkMax < cfg.ThinkMin {
		return nil, nil, fmt.Errorf("rpcgen: ThinkMax below ThinkMin")
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	g := &gen{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		t:    &trace.Trace{Meta: trace.Meta{Source: "rpcgen"}},
		base: cfg.Start.UnixNano(),
		ip:   make(map[string]string),
		ids:  make(map[[2]string]int),
	}
	for _, tl := range cfg.Tracelets {
		g.total += tl.Weight
	}
	if !(g.total > 0) {
		return nil, nil, fmt.Errorf("rpcgen: tracelet weights must add up to more than 0")
	}
	// Each client's next request start; run the earliest one each time so
	// that Messages cuts the trace at a time, not at a client.
	next := make([]int64, cfg.Clients)
	for c := range next {
		next[c] = g.think()
	}
	var reqTracelet []int32
	for {
		c := 0
		for i := range next {
			if next[i] < next[c] {
				c = i
			}
		}
		if cfg.Duration > 0 && next[c] >= int64(cfg.Duration) {
			break
		}
		if cfg.Messages > 0 && len(g.raw) >= cfg.Messages {
			break
		}
		req := int32(len(reqTracelet))
		ti := g.pickTracelet()
		reqTracelet = append(reqTracelet, int32(ti))
		client := fmt.Sprintf("client%d", c+1)
		end, _ := g.call(&cfg.Tracelets[ti].Root, client, c, 0, next[c], -1, req)
		next[c] = end + g.think()
	}
	return g.finish(reqTracelet)
}

func (g *gen) think() int64 {
	lo, hi := int64(g.cfg.ThinkMin), int64(g.cfg.ThinkMax)
	if hi <= lo {
		return lo
	}
	return lo + g.rng.Int64N(hi-lo)
}

func (g *gen) pickTracelet() int {
	x := g.rng.Float64() * g.total
	for i, tl := range g.cfg.Tracelets {
		x -= tl.Weight
		if x < 0 {
			return i
		}
	}
	return len(g.cfg.Tracelets) - 1
}

func (g *gen) draw(d Delay) int64 {
	v := float64(d.Mean) + g.rng.NormFloat64()*float64(d.SD)
	if v < float64(MinDelay) {
		v = float64(MinDelay)
	}
	return int64(v)
}

// addr returns the IP address of a node: servers in 10.0.0.0/24, clients
// in 10.0.1.0/24 (then 10.0.2.0/24 ...), in order of first use.
func (g *gen) addr(node string, client bool) string {
	if a, ok := g.ip[node]; ok {
		return a
	}
	n := len(g.ip)
	var a string
	if client {
		a = fmt.Sprintf("10.0.%d.%d", 1+n/250, 1+n%250)
	} else {
		a = fmt.Sprintf("10.1.%d.%d", n/250, 1+n%250)
	}
	g.ip[node] = a
	return a
}

// call generates the RPC c from caller, sent at time at, caused by message
// parent. It returns when the return reaches the caller and the return's
// raw index. slot numbers the caller's connections so that calls in flight
// at once never share one.
func (g *gen) call(c *Call, caller string, client, slot int, at int64, parent, req int32) (int64, int32) {
	callee := c.To
	if len(c.Alt) > 0 {
		callee = c.Alt[g.rng.IntN(len(c.Alt))]
	}
	isClient := parent < 0
	src := trace.JoinEndpoint(g.addr(caller, isClient), fmt.Sprint(20000+(client*16+slot%16)%45000))
	dst := trace.JoinEndpoint(g.addr(callee, false), "80")
	var id string
	if g.cfg.CallIDs {
		conn := [2]string{src, dst}
		id = fmt.Sprintf("x%d", g.ids[conn])
		g.ids[conn] = (g.ids[conn] + 1) % 65536
	}
	callMsg := g.emit(at, caller, callee, src, dst, id, trace.KindCall, parent, req)
	arrive := at + int64(g.cfg.Net)
	t := arrive + g.draw(c.Pre)
	latest := callMsg
	if c.Parallel {
		latestArr := int64(math.MinInt64)
		for i := range c.Kids {
			ra, rm := g.call(&c.Kids[i], callee, client, i, t+int64(i)*20e3, callMsg, req)
			if ra > latestArr {
				latestArr, latest = ra, rm
			}
		}
		if len(c.Kids) > 0 {
			t = latestArr + g.draw(c.Gap)
		}
	} else {
		for i := range c.Kids {
			ra, rm := g.call(&c.Kids[i], callee, client, i, t, latest, req)
			latest = rm
			gap := c.Gap
			if i < len(c.Gaps) {
				gap = c.Gaps[i]
			}
			t = ra + g.draw(gap)
		}
	}
	retMsg := g.emit(t, callee, caller, dst, src, id, trace.KindReturn, latest, req)
	return t + int64(g.cfg.Net), retMsg
}

func (g *gen) emit(at int64, from, to, src, dst, id string, k trace.Kind, parent, req int32) int32 {
	t := g.t
	send := trace.Timestamp(g.base + at + int64(g.cfg.Skew[from]))
	recv := trace.Timestamp(g.base + at + int64(g.cfg.Net) + int64(g.cfg.Skew[to]))
	if g.cfg.OneTimestamp {
		recv = trace.NoTime
	}
	g.raw = append(g.raw, rawMsg{
		m: trace.Message{
			SendTS: send, RecvTS: recv, Bytes: 200,
			Src: t.Intern(src), Dst: t.Intern(dst),
			SrcNode: t.Intern(from), DstNode: t.Intern(to),
			CallID: t.Intern(id), Kind: k, Proto: trace.ProtoTCP,
		},
		parent: parent, req: req,
	})
	return int32(len(g.raw) - 1)
}

func (g *gen) finish(reqTracelet []int32) (*trace.Trace, *Truth, error) {
	order := make([]int32, len(g.raw))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := g.raw[a].m.SendTS, g.raw[b].m.SendTS
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	pos := make([]int32, len(g.raw))
	for i, r := range order {
		pos[r] = int32(i)
	}
	tr := &Truth{Parent: make([]int32, len(g.raw)), Request: make([]int32, len(g.raw)), Tracelet: reqTracelet}
	g.t.Messages = make([]trace.Message, len(g.raw))
	for i, r := range order {
		rm := &g.raw[r]
		g.t.Messages[i] = rm.m
		tr.Request[i] = rm.req
		tr.Parent[i] = -1
		if rm.parent >= 0 {
			tr.Parent[i] = pos[rm.parent]
		}
	}
	g.raw = nil
	return g.t, tr, nil
}

// ms is shorthand for a Gaussian delay in milliseconds.
func ms(mean, sd float64) Delay {
	return Delay{Mean: time.Duration(mean * 1e6), SD: time.Duration(sd * 1e6)}
}

// MultiTier returns the tracelets of the multi-tier system of Project 5
// Figure 10: clients call one of two web servers (WS1, WS2); a web server
// calls the authentication server AUTH and then one of two application
// servers (AP1, AP2), which call the database DB. Some requests are served
// by the web server alone, some skip authentication, some query the
// database twice. As in the paper's trace (section 7.5.6), a node waits
// 50 ms (SD 5 ms) after a call before calling on or returning, and 10 ms
// (SD 1 ms) after a return. addedDelay is inserted at WS2 between its calls
// to AUTH and to the application server (200 ms in the paper's
// "added-delay" trace).
func MultiTier(addedDelay time.Duration) []Tracelet {
	call, gap := ms(50, 5), ms(10, 1)
	db := Call{To: "DB", Pre: call}
	ap := func(kids ...Call) Call {
		return Call{Alt: []string{"AP1", "AP2"}, Pre: call, Gap: gap, Kids: kids}
	}
	auth := Call{To: "AUTH", Pre: call}
	ws := func(to string, added time.Duration, kids ...Call) Call {
		c := Call{To: to, Pre: call, Gap: gap, Kids: kids}
		if added > 0 && len(kids) > 1 {
			c.Gaps = []Delay{{Mean: gap.Mean + added, SD: gap.SD}}
		}
		return c
	}
	var tls []Tracelet
	for _, w := range []struct {
		name  string
		added time.Duration
	}{{"WS1", 0}, {"WS2", addedDelay}} {
		tls = append(tls,
			Tracelet{Name: w.name + " full", Weight: 4, Root: ws(w.name, w.added, auth, ap(db))},
			Tracelet{Name: w.name + " two queries", Weight: 2, Root: ws(w.name, w.added, auth, ap(db, db))},
			Tracelet{Name: w.name + " no auth", Weight: 2, Root: ws(w.name, 0, ap(db))},
			Tracelet{Name: w.name + " static", Weight: 2, Root: Call{To: w.name, Pre: call}},
		)
	}
	return tls
}
