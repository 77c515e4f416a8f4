// Package synth generates message traces of multi-tier systems whose causal
// structure is known by construction, for the accuracy tests and benchmarks
// of the causal engines.
//
// A System has roles (a client population, web servers, proxies, DNS,
// databases, ...), each a set of hosts with one fixed port, and path
// templates: trees of hops, each hop a message from the role that received
// its parent to another role after a random node delay. Requests start as a
// Poisson process; every request picks a template by weight and a host per
// role, and expands into messages. Generate returns the trace, sorted by
// true send time, with every message's true parent and request. Options add
// per-host clock offsets (one clock per host, applied to every timestamp
// taken there) and untraced roles (their timestamps are unknown), so that
// tests can show what an engine does without synchronised clocks or with
// parts of the system unseen.
//
// This is a test fixture generator, not the user-facing `wirepath gen`.
package synth

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// Delay is a random duration: Fixed plus an exponential with mean Exp plus
// a normal with deviation Jitter, never below zero.
type Delay struct {
	Fixed, Exp, Jitter time.Duration
}

func (d Delay) draw(r *rand.Rand) int64 {
	v := float64(d.Fixed)
	if d.Exp > 0 {
		v += r.ExpFloat64() * float64(d.Exp)
	}
	if d.Jitter > 0 {
		v += r.NormFloat64() * float64(d.Jitter)
	}
	return max(0, int64(v))
}

// Role is a set of hosts doing one job.
type Role struct {
	Name string
	// Hosts is how many hosts fill the role; they are named
	// 10.<role index>.<i/250>.<i%250+1>.
	Hosts int
	// Port is the fixed port the role serves on (0 for pure clients, which
	// use only ephemeral ports).
	Port int
	// Untraced hides the role's timestamps: messages it sends have no send
	// time and messages it receives no receive time.
	Untraced bool
	// Like makes the role share the hosts of another role (Hosts, Port and
	// Untraced are then ignored); a request binds it to a different host
	// than that role when it can, as a proxy forwarding to a peer proxy.
	Like string
}

// Hop is one message of a template: from the receiver of its parent (the
// template's client role for the root) to role To, sent Delay after the
// parent's arrival (after the request's start for the root).
type Hop struct {
	To    string
	Kind  trace.Kind
	Delay Delay
	Bytes int64
	// Children are the messages this one's arrival causes.
	Children []Hop
}

// Template is one kind of request.
type Template struct {
	Name   string
	Weight float64
	// From is the role that starts it.
	From string
	Root Hop
}

// System is what Generate simulates.
type System struct {
	Roles     []Role
	Templates []Template
	// Net is the one-way network delay of every message.
	Net Delay
	// Rate is requests per second; Duration bounds the start times.
	Rate     float64
	Duration time.Duration
	// MaxRequests stops generation early (0 = no limit).
	MaxRequests int
	// ClockOffset gives every host a clock offset drawn uniformly from
	// [-ClockOffset, ClockOffset]; the trace's Meta does not record it.
	ClockOffset time.Duration
	// Start is the true time of the trace's start (ns since the epoch).
	Start int64
	Seed  uint64
}

// Truth is what generated a trace: for every message its parent (an index
// into the trace, -1 for a request's first message), its request and the
// request's template.
type Truth struct {
	Parent   []int32
	Request  []int32
	Template []int16
	// Names are the templates' names, indexed by Template.
	Names []string
	// Offsets are the hosts' clock offsets in ns, by node name.
	Offsets map[string]int64
}

type genMsg struct {
	send, recv int64 // true times
	src, dst   trace.Sym
	srcN, dstN trace.Sym
	srcH, dstH int32 // host index, for clocks and tracing
	bytes      int64
	kind       trace.Kind
	parent     int32 // index in the generation order
	req        int32
	tmpl       int16
}

type host struct {
	name     trace.Sym
	ip       string
	port     int
	untraced bool
	offset   int64
}

// Generate builds the trace of s and its truth.
func Generate(s System) (*trace.Trace, *Truth, error) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	t := &trace.Trace{Meta: trace.Meta{Source: "synth"}}
	roleIdx := make(map[string]int)
	var flat []*host
	base := make([]int32, len(s.Roles)) // first host of each role in flat
	count := make([]int32, len(s.Roles))
	like := make([]int, len(s.Roles))
	for i, ro := range s.Roles {
		if _, dup := roleIdx[ro.Name]; dup {
			return nil, nil, fmt.Errorf("synth: role %s named twice", ro.Name)
		}
		roleIdx[ro.Name] = i
		like[i] = -1
		if ro.Like != "" {
			k, ok := roleIdx[ro.Like]
			if !ok || s.Roles[k].Like != "" {
				return nil, nil, fmt.Errorf("synth: role %s is like unknown or derived role %q", ro.Name, ro.Like)
			}
			base[i], count[i], like[i] = base[k], count[k], k
			continue
		}
		if ro.Hosts <= 0 {
			return nil, nil, fmt.Errorf("synth: role %s has no hosts", ro.Name)
		}
		base[i], count[i] = int32(len(flat)), int32(ro.Hosts)
		for j := 0; j < ro.Hosts; j++ {
			ip := fmt.Sprintf("10.%d.%d.%d", i+1, j/250, j%250+1)
			h := &host{name: t.Intern(ip), ip: ip, port: ro.Port, untraced: ro.Untraced}
			if s.ClockOffset > 0 {
				h.offset = int64((r.Float64()*2 - 1) * float64(s.ClockOffset))
			}
			flat = append(flat, h)
		}
	}
	var check func(h *Hop) error
	check = func(h *Hop) error {
		if _, ok := roleIdx[h.To]; !ok {
			return fmt.Errorf("synth: unknown role %q", h.To)
		}
		for i := range h.Children {
			if err := check(&h.Children[i]); err != nil {
				return err
			}
		}
		return nil
	}
	totalW := 0.0
	for i := range s.Templates {
		tp := &s.Templates[i]
		if _, ok := roleIdx[tp.From]; !ok {
			return nil, nil, fmt.Errorf("synth: template %s: unknown role %q", tp.Name, tp.From)
		}
		if err := check(&tp.Root); err != nil {
			return nil, nil, err
		}
		totalW += tp.Weight
	}
	if totalW <= 0 || s.Rate <= 0 {
		return nil, nil, fmt.Errorf("synth: no templates or no rate")
	}

	truth := &Truth{Offsets: make(map[string]int64)}
	for _, tp := range s.Templates {
		truth.Names = append(truth.Names, tp.Name)
	}
	var gen []genMsg
	type conn struct {
		from, to int32 // global host ids
		ep       trace.Sym
	}
	epCache := make(map[string]trace.Sym)
	ep := func(ip string, port int) trace.Sym {
		k := ip + ":" + fmt.Sprint(port)
		if s, ok := epCache[k]; ok {
			return s
		}
		sym := t.Intern(k)
		epCache[k] = sym
		return sym
	}

	now := float64(s.Start)
	end := float64(s.Start) + float64(s.Duration)
	bound := make([]int32, len(s.Roles))
	var conns []conn
	for req := int32(0); ; req++ {
		if s.MaxRequests > 0 && int(req) >= s.MaxRequests {
			break
		}
		now += r.ExpFloat64() / s.Rate * 1e9
		if s.Duration > 0 && now > end {
			break
		}
		// Pick a template.
		x := r.Float64() * totalW
		ti := 0
		for ti = range s.Templates {
			x -= s.Templates[ti].Weight
			if x < 0 {
				break
			}
		}
		tp := &s.Templates[ti]
		for i := range bound {
			bound[i] = -1
		}
		var hostOf func(role int) int32
		hostOf = func(k int) int32 {
			if bound[k] < 0 {
				h := base[k] + int32(r.IntN(int(count[k])))
				if l := like[k]; l >= 0 && count[k] > 1 {
					other := hostOf(l)
					for h == other {
						h = base[k] + int32(r.IntN(int(count[k])))
					}
				}
				bound[k] = h
			}
			return bound[k]
		}
		conns = conns[:0]
		var expand func(h *Hop, from int32, at int64, parent int32)
		expand = func(h *Hop, from int32, at int64, parent int32) {
			to := hostOf(roleIdx[h.To])
			send := at + h.Delay.draw(r)
			recv := send + s.Net.draw(r)
			fh, th := flat[from], flat[to]
			var src, dst trace.Sym
			// A call opens a connection from an ephemeral port (reused
			// for the answer); other messages go to the fixed port.
			found := false
			for _, c := range conns {
				if c.from == to && c.to == from {
					src, dst = ep(fh.ip, fh.port), c.ep
					found = true
					break
				}
			}
			if !found {
				e := ep(fh.ip, 32768+r.IntN(28000))
				conns = append(conns, conn{from: from, to: to, ep: e})
				src = e
				dst = ep(th.ip, th.port)
				if th.port == 0 {
					dst = ep(th.ip, 32768+r.IntN(28000))
				}
			}
			gen = append(gen, genMsg{
				send: send, recv: recv,
				src: src, dst: dst, srcN: fh.name, dstN: th.name,
				srcH: from, dstH: to,
				bytes: max(1, h.Bytes), kind: h.Kind,
				parent: parent, req: req, tmpl: int16(ti),
			})
			me := int32(len(gen) - 1)
			for i := range h.Children {
				expand(&h.Children[i], to, recv, me)
			}
		}
		expand(&tp.Root, hostOf(roleIdx[tp.From]), int64(now), -1)
	}

	// Sort by true send time; map parents to the new indices.
	order := make([]int32, len(gen))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(gen[a].send, gen[b].send) })
	pos := make([]int32, len(gen))
	for i, o := range order {
		pos[o] = int32(i)
	}
	t.Messages = make([]trace.Message, len(gen))
	truth.Parent = make([]int32, len(gen))
	truth.Request = make([]int32, len(gen))
	truth.Template = make([]int16, len(gen))
	for i, o := range order {
		g := &gen[o]
		fh, th := flat[g.srcH], flat[g.dstH]
		m := trace.Message{
			SendTS: trace.Timestamp(g.send + fh.offset),
			RecvTS: trace.Timestamp(g.recv + th.offset),
			Src:    g.src, Dst: g.dst, SrcNode: g.srcN, DstNode: g.dstN,
			Bytes: g.bytes, Kind: g.kind, Proto: trace.ProtoTCP,
		}
		if fh.untraced {
			m.SendTS = trace.NoTime
		}
		if th.untraced {
			m.RecvTS = trace.NoTime
		}
		t.Messages[i] = m
		truth.Parent[i] = -1
		if g.parent >= 0 {
			truth.Parent[i] = pos[g.parent]
		}
		truth.Request[i] = g.req
		truth.Template[i] = g.tmpl
	}
	for _, h := range flat {
		if h.offset != 0 {
			truth.Offsets[h.ip] = h.offset
		}
	}
	return t, truth, nil
}

// Instances returns the true path instance of every request, parents
// before children, as (message, parent position) lists.
func (tr *Truth) Instances() [][][2]int32 {
	byReq := make(map[int32][]int32)
	var reqs []int32
	for i, q := range tr.Request {
		if _, ok := byReq[q]; !ok {
			reqs = append(reqs, q)
		}
		byReq[q] = append(byReq[q], int32(i))
	}
	out := make([][][2]int32, 0, len(reqs))
	for _, q := range reqs {
		msgs := byReq[q]
		// Breadth-first from the root so parents come first.
		pos := make(map[int32]int32)
		var inst [][2]int32
		kids := make(map[int32][]int32)
		root := int32(-1)
		for _, m := range msgs {
			if tr.Parent[m] < 0 {
				root = m
			} else {
				kids[tr.Parent[m]] = append(kids[tr.Parent[m]], m)
			}
		}
		queue := []int32{root}
		inst = append(inst, [2]int32{root, -1})
		pos[root] = 0
		for len(queue) > 0 {
			m := queue[0]
			queue = queue[1:]
			for _, c := range kids[m] {
				pos[c] = int32(len(inst))
				inst = append(inst, [2]int32{c, pos[m]})
				queue = append(queue, c)
			}
		}
		out = append(out, inst)
	}
	return out
}

// MeanMessages returns the mean number of messages per request the
// templates of s produce, weighted by template weight.
func (s *System) MeanMessages() float64 {
	var size func(h *Hop) int
	size = func(h *Hop) int {
		n := 1
		for i := range h.Children {
			n += size(&h.Children[i])
		}
		return n
	}
	tot, w := 0.0, 0.0
	for i := range s.Templates {
		tot += s.Templates[i].Weight * float64(size(&s.Templates[i].Root))
		w += s.Templates[i].Weight
	}
	if w == 0 {
		return math.NaN()
	}
	return tot / w
}
