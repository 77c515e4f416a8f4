package whatif

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// Model is what a prediction starts from: the requests of a result, each
// with its timeline and its profile on every link (κ, ν), the links' round
// trips and bandwidths (γ, ω) as the captures showed them, and every
// node's service time and utilisation. Build makes one.
type Model struct {
	// Requests are the result's requests: one per instance when the
	// result lists its instances and the trace was given (PerRequest),
	// else one per pattern with the pattern's mean values and its count
	// as weight.
	Requests   []Request
	PerRequest bool
	// Links are the links the requests use, by pattern node names.
	Links []*Link
	// Nodes are the nodes that send messages in the requests.
	Nodes []*Node
	// Hosts are the machines several nodes share (Place); empty, every
	// node is its own dedicated server.
	Hosts []*Host
	// SpanS is the time the requests span, in seconds; RateRPS the
	// requests (roots of patterns that do not start at a server... every
	// request counted) per second over it.
	SpanS   float64
	RateRPS float64
	// Notes say what the model had to assume or could not measure.
	Notes []string
	// Discipline is how a node serves concurrent requests (FCFS by
	// default, the paper's; PS for processor sharing).
	Discipline Discipline

	links map[[2]string]*Link
	nodes map[string]*Node
	hosts map[string]*Host
}

// Request is one request (or, without the trace, one pattern standing for
// its count of requests): its timeline and what it does on each link.
type Request struct {
	// Pattern is the rank of its pattern, Type its request type: the
	// root message's label where the trace has labels, else the
	// pattern's signature.
	Pattern   int
	Signature string
	Type      string
	// Weight is the instance's probability for a request (alternative
	// instances of one request share it), the count for a pattern's
	// means.
	Weight float64
	// Root is the trace index of its root message (-1 for a pattern's
	// means).
	Root int
	// StartNS is the root's send on the reference clock (a pattern's
	// means have none: Root < 0); LatencyUS its measured latency.
	StartNS   int64
	LatencyUS float64
	// Hops are its messages, parents first.
	Hops []Hop
	// Profile is what it does on each link it uses (κ, ν, messages).
	Profile []LinkProfile
}

// Hop is one message of a request: times in µs from the root's send.
type Hop struct {
	Parent   int // -1 for the root
	From, To string
	Kind     string
	Send     float64 // the send, or the receive when the send was not seen
	Net      float64 // the network delay, when NetKnown
	NetKnown bool
	// Node is the time at From between the parent's arrival and this
	// send (one clock), when NodeKnown.
	Node      float64
	NodeKnown bool
	Bytes     float64
}

// arrive is the hop's arrival at its receiver.
func (h *Hop) arrive() float64 {
	if h.NetKnown {
		return h.Send + h.Net
	}
	return h.Send
}

// Discipline is the queueing discipline of the model's M/G/1 servers.
type Discipline string

// The disciplines. FCFS is Stewart and Shen's M/G/1: a visit waits
// ρ·E[S]·(1+C²) / 2(1−ρ) on top of its service, whatever its size. PS is
// processor sharing (threads sharing a processor): a visit of service s
// takes s / (1−ρ), its own slowdown, whatever the distribution.
const (
	FCFS Discipline = "fcfs"
	PS   Discipline = "ps"
)

// ErrNoPatterns is returned by Build for a result without patterns.
var ErrNoPatterns = errors.New("the result has no patterns")

// BuildOptions configure Build.
type BuildOptions struct {
	// Trace is the trace the result was inferred from. With it and a
	// result that lists its instances (--instances -1), the model works
	// request by request; without, from the patterns' means.
	Trace *trace.Trace
	// Naming is the naming the engine used (causal.DefaultNaming when
	// zero).
	Naming *causal.Naming
}

// Build builds the model of result res.
func Build(res *causal.Result, o BuildOptions) (*Model, error) {
	if len(res.Patterns) == 0 {
		return nil, ErrNoPatterns
	}
	m := &Model{links: map[[2]string]*Link{}, nodes: map[string]*Node{}, hosts: map[string]*Host{}}
	naming := causal.DefaultNaming()
	if o.Naming != nil {
		naming = *o.Naming
	}
	var name func(string) string
	if tr := o.Trace; tr != nil {
		namer := causal.NewNamer(tr, naming)
		name = func(s string) string {
			if sym, ok := tr.Syms.Lookup(s); ok {
				return namer.Node(sym)
			}
			return ""
		}
		if err := m.requestsFromInstances(res, tr); err != nil {
			return nil, err
		}
	}
	if !m.PerRequest {
		m.requestsFromPatterns(res)
	}
	m.span(res)
	for i := range m.Requests {
		r := &m.Requests[i]
		r.Profile = requestProfile(r)
	}
	m.buildLinks(res.Trace.Links, name)
	m.buildNodes()
	return m, nil
}

// requestsFromInstances makes one request per instance of every pattern
// that lists them, from the trace's messages. It leaves m.PerRequest false
// when no pattern lists its instances.
func (m *Model) requestsFromInstances(res *causal.Result, tr *trace.Trace) error {
	agg := causal.NewAggregator(tr, causal.AggregateOptions{})
	n := len(tr.Messages)
	listed := 0
	for pi := range res.Patterns {
		p := &res.Patterns[pi]
		if len(p.Instances) == 0 {
			continue
		}
		listed++
		for _, in := range p.Instances {
			if len(in.Messages) != len(p.Hops) {
				return fmt.Errorf("pattern #%d: an instance of %d messages for %d hops", p.Rank, len(in.Messages), len(p.Hops))
			}
			for _, mi := range in.Messages {
				if mi < 0 || mi >= n {
					return fmt.Errorf("pattern #%d: message %d is not in the trace (%d messages): is it the trace the result was inferred from?", p.Rank, mi, n)
				}
			}
			r := instanceRequest(p, in.Messages, tr, agg)
			// Alternative instances of one request share it by their
			// probabilities.
			if in.Probability > 0 && in.Probability < 1 {
				r.Weight = in.Probability
			}
			m.Requests = append(m.Requests, r)
		}
	}
	if listed > 0 && listed < len(res.Patterns) {
		m.Notes = append(m.Notes, fmt.Sprintf("%d of %d patterns list no instances: they are left out (run the engine with --instances -1)", len(res.Patterns)-listed, len(res.Patterns)))
	}
	m.PerRequest = listed > 0
	return nil
}

// instanceRequest is the request of one instance of pattern p, whose
// messages in hop order are msgs.
func instanceRequest(p *causal.Pattern, msgs []int, tr *trace.Trace, agg *causal.Aggregator) Request {
	r := Request{Pattern: p.Rank, Signature: p.Signature, Weight: 1, Root: msgs[0], Hops: make([]Hop, len(p.Hops))}
	root := &tr.Messages[msgs[0]]
	r.StartNS = agg.CorrectedSend(root)
	end := r.StartNS
	for i := range p.Hops {
		ph := &p.Hops[i]
		msg := &tr.Messages[msgs[i]]
		h := &r.Hops[i]
		h.Parent, h.From, h.To, h.Kind, h.Bytes = -1, ph.From, ph.To, ph.Kind, float64(msg.Bytes)
		h.Send = float64(agg.CorrectedSend(msg)-r.StartNS) / 1e3
		if msg.SendTS.Known() && msg.RecvTS.Known() && !tr.Meta.SingleClock {
			h.Net, h.NetKnown = float64(agg.CorrectedRecv(msg)-agg.CorrectedSend(msg))/1e3, true
		}
		if ph.Parent != nil {
			h.Parent = *ph.Parent
			if par := &tr.Messages[msgs[h.Parent]]; msg.SendTS.Known() && par.RecvTS.Known() {
				h.Node, h.NodeKnown = float64(msg.SendTS-par.RecvTS)/1e3, true
			}
		}
		end = max(end, agg.CorrectedRecv(msg))
	}
	r.LatencyUS = float64(end-r.StartNS) / 1e3
	r.Type = p.Signature
	if l := tr.Str(root.Label); l != "" {
		r.Type = l
	}
	return r
}

// requestsFromPatterns makes one request per pattern from its means,
// weighted by its count.
func (m *Model) requestsFromPatterns(res *causal.Result) {
	m.Requests = m.Requests[:0]
	for pi := range res.Patterns {
		p := &res.Patterns[pi]
		if !p.WellFormed() {
			continue
		}
		r := Request{Pattern: p.Rank, Signature: p.Signature, Type: p.Signature, Weight: float64(max(1, p.Count)), Root: -1, Hops: make([]Hop, len(p.Hops))}
		end := 0.0
		for i := range p.Hops {
			ph := &p.Hops[i]
			h := &r.Hops[i]
			h.Parent, h.From, h.To, h.Kind = -1, ph.From, ph.To, ph.Kind
			if ph.Parent != nil {
				h.Parent = *ph.Parent
			}
			h.Send = meanOf(ph.Start)
			h.Bytes = meanOf(ph.Bytes)
			if ph.NetDelay != nil {
				h.Net, h.NetKnown = ph.NetDelay.Mean, true
			}
			if ph.NodeDelay != nil {
				h.Node, h.NodeKnown = ph.NodeDelay.Mean, true
			}
			end = max(end, h.arrive())
		}
		r.LatencyUS = end
		if p.Latency != nil {
			r.LatencyUS = p.Latency.Mean
		}
		m.Requests = append(m.Requests, r)
	}
}

func meanOf(d *causal.Dist) float64 {
	if d == nil {
		return 0
	}
	return d.Mean
}

// span sets the time the requests span and their rate: from the first
// request's start to the last one's end, or without the requests' times
// the trace's.
func (m *Model) span(res *causal.Result) {
	var first, last int64
	var w float64
	seen := false
	for i := range m.Requests {
		r := &m.Requests[i]
		w += r.Weight
		if r.Root < 0 {
			continue
		}
		if !seen || r.StartNS < first {
			first = r.StartNS
		}
		last = max(last, r.StartNS+int64(r.LatencyUS*1e3))
		seen = true
	}
	if !seen {
		first, last = res.Trace.StartNS, res.Trace.EndNS
	}
	if last > first {
		m.SpanS = float64(last-first) / 1e9
		m.RateRPS = w / m.SpanS
	}
}

// asPattern is r as a one-instance pattern, for LinkProfiles.
func (r *Request) asPattern() *causal.Pattern {
	p := &causal.Pattern{Rank: r.Pattern, Signature: r.Signature, Count: 1, Expected: 1, MaxProbability: 1, Hops: make([]causal.Hop, len(r.Hops))}
	one := func(v float64) *causal.Dist {
		return &causal.Dist{N: 1, Weight: 1, Mean: v, Min: v, P50: v, P90: v, P99: v, Max: v}
	}
	for i := range r.Hops {
		h := &r.Hops[i]
		ch := causal.Hop{ID: i, From: h.From, To: h.To, Kind: h.Kind, Start: one(h.Send), Bytes: one(h.Bytes)}
		if h.Parent >= 0 {
			par := h.Parent
			ch.Parent = &par
		}
		if h.NetKnown {
			ch.NetDelay = one(h.Net)
		}
		p.Hops[i] = ch
	}
	p.Latency = one(r.LatencyUS)
	return p
}

// requestProfile is r's profile on every link.
func requestProfile(r *Request) []LinkProfile {
	return LinkProfiles(r.asPattern())
}

// linkKey is the key of the link between nodes a and b, either way.
func linkKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Link returns the link between nodes a and b (either way), or nil.
func (m *Model) Link(a, b string) *Link { return m.links[linkKey(a, b)] }

// Node returns the node named name, or nil.
func (m *Model) Node(name string) *Node { return m.nodes[name] }

// sortedKeys returns the keys of a map, sorted.
func sortedKeys[K cmp.Ordered, V any](mp map[K]V) []K {
	out := make([]K, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// finite reports whether v is a finite number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// slicesSortKeys sorts link keys.
func slicesSortKeys(ks [][2]string) {
	slices.SortFunc(ks, func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
}
