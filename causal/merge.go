package causal

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// ResultMerger merges the results one engine gave on the windows of one
// run (pipeline.RunWindows) into the result of the whole run, keeping only
// summaries: per pattern (by signature) the counts and, for every
// distribution, its mergeable sketch (AggregateOptions.Sketches), so its
// memory grows with the patterns and not with the input. Counts, expected
// counts, means and extremes are exact; percentiles are exact up to 4096
// samples and within 1% beyond. A distribution without a sketch (an engine
// run without Sketches) is merged from its summary: its percentiles are
// then the weighted mean of the windows' (an approximation). Instances are
// not kept (they name messages of the windows' traces). An engine's own
// requests (Result.Requests: the assembly engine's) are kept, each once,
// from the window whose span holds its root (the engines list only
// those under SetWindow), up to MaxMergedRequests; their message
// indices refer to their window's trace (Request.Window). Request types
// (Result.RequestTypes) merge by label: counts add up, latencies merge as
// the patterns' do, and each lists the merged patterns its windows'
// types listed.
type ResultMerger struct {
	metric      RankMetric
	maxPatterns int
	res         *Result
	pats        map[string]int // structure key (structureOf) -> index in merged
	merged      []mergedPattern
	acc         map[countKey]int
	warned      map[string]bool
	shapes      map[string]*warnShape // an engine warning's shape -> where it is
	hist        bool
	windows     int
	// over counts the patterns, and their instances, that came after
	// MaxMergedPatterns were held, and were left out.
	overPatterns, overInstances int64
	limit                       int // MaxMergedPatterns (tests lower it)
	// requests are the windows' requests; overRequests counts those left
	// out past reqLimit (MaxMergedRequests)
	requests     []Request
	overRequests int64
	reqLimit     int
	// sink, when set (SendRequests), takes each window's requests
	// instead of requests; sent counts them, sinkErr is its first error
	sink    func([]Request) error
	sent    int
	sinkErr error
	types   map[string]*mergedType
}

// mergedType is one request type of the merged result.
type mergedType struct {
	t       RequestType // Label, Count, Expected
	latency distAcc
	pats    map[int]bool // indices in merged
}

// MaxMergedRequests bounds the requests a ResultMerger holds (about a
// kilobyte each), so that a windowed run's memory stays bounded: the
// requests of windows merged once this many are held are left out and
// counted (accounting requests_over_merge_limit, and a warning).
const MaxMergedRequests = 1_000_000

// MaxMergedPatterns bounds the patterns a ResultMerger holds, so that its
// memory is bounded however long the run: a pattern first seen once this
// many are held is left out and counted (accounting
// patterns_over_merge_limit, instances_over_merge_limit, and a warning).
const MaxMergedPatterns = 20000

// countKey names one counter.
type countKey struct{ stage, name string }

// mergedPattern is one pattern of the merged result, its distributions
// as sketches.
type mergedPattern struct {
	p       Pattern
	latency distAcc
	// per hop in the structure's canonical order: Start, NodeDelay,
	// NetDelay, Bytes
	hops [][4]distAcc
	// pos maps the canonical order to p.Hops (the first window's)
	pos []int
}

// distAcc accumulates one distribution across windows.
type distAcc struct {
	b *DistBuilder // the merged sketch
	// for distributions without a sketch: exact totals, weighted
	// percentiles
	n                   int
	w, sum, lo, hi      float64
	p50, p90, p99       float64
	unsketched, present bool
}

// NewResultMerger returns a merger that ranks the merged patterns by
// metric and keeps the best maxPatterns of them (all when 0).
func NewResultMerger(metric RankMetric, maxPatterns int) *ResultMerger {
	return &ResultMerger{
		metric: metric, maxPatterns: maxPatterns, limit: MaxMergedPatterns, reqLimit: MaxMergedRequests,
		pats: make(map[string]int), acc: make(map[countKey]int), warned: make(map[string]bool), shapes: make(map[string]*warnShape),
		types: make(map[string]*mergedType),
	}
}

// Add merges one window's result; r is not kept.
func (m *ResultMerger) Add(r *Result) {
	m.windows++
	if m.res == nil {
		m.res = &Result{Version: r.Version, Engine: r.Engine, Params: r.Params}
		m.res.Trace = r.Trace
		m.res.Trace.Accounting, m.res.Trace.Warnings = nil, nil
	}
	m.mergeSummary(&r.Trace)
	for _, c := range r.Accounting {
		m.count(&m.res.Accounting, c)
	}
	m.addWarnings(r.Warnings)
	byRank := make(map[int]int, len(r.Patterns)) // the window's rank -> index in merged
	for i := range r.Patterns {
		if k := m.addPattern(&r.Patterns[i]); k >= 0 {
			byRank[r.Patterns[i].Rank] = k
		}
	}
	m.addRequests(r.Requests)
	for i := range r.RequestTypes {
		m.addType(&r.RequestTypes[i], byRank)
	}
}

// SendRequests makes the merger hand each window's requests, once they
// are within MaxMergedRequests (those past it are left out and counted
// as when they are kept), to sink instead of keeping them: the merged
// result then lists none, and memory does not grow with the requests.
// A sink that only counts drops them (a report that shows none); one that
// writes them to disk keeps them for a writer that streams them
// (resultjson.RequestSpool). Their order is the windows', each window's
// as its engine listed them; the first error of sink is Err's.
func (m *ResultMerger) SendRequests(sink func([]Request) error) { m.sink = sink }

// Err returns the first error of the requests' sink (SendRequests).
func (m *ResultMerger) Err() error { return m.sinkErr }

// addRequests keeps one window's requests (Request.Window says which
// window's trace they index; the caller sets it), or hands them to the
// sink.
func (m *ResultMerger) addRequests(rs []Request) {
	room := max(0, m.reqLimit-len(m.requests)-m.sent)
	if len(rs) > room {
		m.overRequests += int64(len(rs) - room)
		rs = rs[:room]
	}
	if m.sink == nil {
		m.requests = append(m.requests, rs...)
		return
	}
	m.sent += len(rs)
	if m.sinkErr == nil && len(rs) > 0 {
		m.sinkErr = m.sink(rs)
	}
}

// mergedRequests returns the windows' requests as one run's: requests in
// order of their roots' times, then the background trees, numbered
// from 0.
func (m *ResultMerger) mergedRequests() []Request {
	if len(m.requests) == 0 {
		return nil
	}
	out := slices.Clone(m.requests)
	slices.SortStableFunc(out, func(a, b Request) int { return MergedRequestOrder(a.Background, b.Background, a.StartNS, b.StartNS) })
	for i := range out {
		out[i].ID = i
	}
	return out
}

// MergedRequestOrder orders the requests of a merged result: requests
// before background trees, each in order of its root's time (a stable
// sort by it keeps the windows' order among equals). It compares request
// a (background ba, start sa) with b.
func MergedRequestOrder(ba, bb bool, sa, sb int64) int {
	if ba != bb {
		if ba {
			return 1
		}
		return -1
	}
	return cmp.Compare(sa, sb)
}

// addType merges one window's request type, its patterns named by their
// index in merged (byRank).
func (m *ResultMerger) addType(t *RequestType, byRank map[int]int) {
	mt := m.types[t.Label]
	if mt == nil {
		mt = &mergedType{t: RequestType{Label: t.Label}, pats: map[int]bool{}}
		m.types[t.Label] = mt
	}
	mt.t.Count += t.Count
	mt.t.Expected += t.Expected
	mt.latency.add(t.Latency)
	if t.Latency != nil && t.Latency.Hist != nil {
		m.hist = true
	}
	for _, r := range t.Patterns {
		if k, ok := byRank[r]; ok {
			mt.pats[k] = true
		}
	}
}

// requestTypes returns the merged request types, most instances first
// (then by label), each with its patterns' ranks in out (the merged
// patterns ranked; rank of merged index k: rank[k], 0 when left out).
func (m *ResultMerger) requestTypes(rank []int) []RequestType {
	out := make([]RequestType, 0, len(m.types))
	for _, mt := range m.types {
		t := mt.t
		t.Latency = mt.latency.dist(m.hist)
		for k := range mt.pats {
			if rank[k] > 0 {
				t.Patterns = append(t.Patterns, rank[k])
			}
		}
		slices.Sort(t.Patterns)
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y RequestType) int {
		if x.Count != y.Count {
			return y.Count - x.Count
		}
		return strings.Compare(x.Label, y.Label)
	})
	return out
}

// count adds c to the counter of its name in *to.
func (m *ResultMerger) count(to *[]trace.Count, c trace.Count) {
	k := countKey{c.Stage, c.Name}
	i, ok := m.acc[k]
	if !ok || i >= len(*to) || (*to)[i].Stage != c.Stage || (*to)[i].Name != c.Name {
		m.acc[k] = len(*to)
		*to = append(*to, c)
		return
	}
	(*to)[i].Value += c.Value
}

// mergeSummary merges one window's trace summary: time range, the
// largest node count, the latest clocks; messages add up (those in the
// windows' margins count in each window that reconciled them).
func (m *ResultMerger) mergeSummary(t *TraceSummary) {
	s := &m.res.Trace
	if m.windows > 1 {
		s.Messages += t.Messages
		if t.StartNS != 0 && (s.StartNS == 0 || t.StartNS < s.StartNS) {
			s.StartNS = t.StartNS
		}
		s.EndNS = max(s.EndNS, t.EndNS)
		s.Nodes = max(s.Nodes, t.Nodes)
		if len(t.Offsets) > 0 {
			s.Offsets, s.Clocks = t.Offsets, t.Clocks
		}
		if len(t.Aliases) > 0 {
			s.Aliases = t.Aliases
		}
	}
	for _, w := range t.Warnings {
		if !m.warned[w] {
			m.warned[w] = true
			s.Warnings = append(s.Warnings, w)
		}
	}
}

// addPattern merges one window's pattern into the pattern of the same
// structure (structureOf: the same hops by name, whatever their order in
// each window's result; the signature string orders siblings by the
// window's timings, so it is not the key). It returns the pattern's index
// in merged, -1 when it was left out (MaxMergedPatterns).
func (m *ResultMerger) addPattern(p *Pattern) int {
	key, order := structureOf(p)
	i, ok := m.pats[key]
	if !ok && len(m.merged) >= m.limit {
		m.overPatterns++
		m.overInstances += int64(p.Count)
		return -1
	}
	if !ok {
		i = len(m.merged)
		m.pats[key] = i
		mp := mergedPattern{p: *p, hops: make([][4]distAcc, len(p.Hops)), pos: order}
		mp.p.Instances, mp.p.Latency = nil, nil
		mp.p.Hops = make([]Hop, len(p.Hops))
		copy(mp.p.Hops, p.Hops)
		for h := range mp.p.Hops {
			// the distributions live on as sketches (mp.hops), not as
			// this window's summaries
			hp := &mp.p.Hops[h]
			hp.Start, hp.NodeDelay, hp.NetDelay, hp.Bytes = nil, nil, nil, nil
		}
		m.merged = append(m.merged, mp)
	} else {
		mp := &m.merged[i]
		mp.p.Count += p.Count
		mp.p.Expected += p.Expected
		mp.p.MaxProbability = math.Max(mp.p.MaxProbability, p.MaxProbability)
	}
	mp := &m.merged[i]
	mp.latency.add(p.Latency)
	for k, h := range order {
		hp := &p.Hops[h]
		if k < len(mp.pos) {
			// an endpoint or kind that differs across windows is mixed,
			// as within one (Hop.ToEndpoint, Hop.Kind)
			mh := &mp.p.Hops[mp.pos[k]]
			if mh.ToEndpoint != hp.ToEndpoint {
				mh.ToEndpoint = "*"
			}
			if mh.Kind != hp.Kind {
				mh.Kind = trace.KindUnknown.String()
			}
		}
		if hp.Start != nil && hp.Start.Hist != nil {
			m.hist = true
		}
		for j, d := range [4]*Dist{hp.Start, hp.NodeDelay, hp.NetDelay, hp.Bytes} {
			mp.hops[k][j].add(d)
		}
	}
	return i
}

// structureOf returns a key naming p's tree of hops by their nodes (from
// and to, which is what makes a pattern: the Aggregator's identity),
// siblings in the order of their subtrees'
// keys, and the hops' indices in that canonical order (pre-order). Equal
// sibling subtrees keep their order in p.
func structureOf(p *Pattern) (string, []int) {
	kids := make([][]int, len(p.Hops))
	root := -1
	for i := range p.Hops {
		if par := p.Hops[i].Parent; par != nil && *par >= 0 && *par < len(p.Hops) && *par != i {
			kids[*par] = append(kids[*par], i)
		} else if root < 0 {
			root = i
		}
	}
	if root < 0 {
		return "", nil
	}
	var walk func(i int) (string, []int)
	walk = func(i int) (string, []int) {
		h := &p.Hops[i]
		type sub struct {
			key   string
			order []int
		}
		subs := make([]sub, len(kids[i]))
		for j, c := range kids[i] {
			subs[j].key, subs[j].order = walk(c)
		}
		slices.SortStableFunc(subs, func(a, b sub) int { return strings.Compare(a.key, b.key) })
		var b strings.Builder
		b.WriteString(strconv.Quote(h.From + "\x00" + h.To))
		b.WriteByte('(')
		out := []int{i}
		for _, sb := range subs {
			b.WriteString(sb.key)
			out = append(out, sb.order...)
		}
		b.WriteByte(')')
		return b.String(), out
	}
	key, order := walk(root)
	return key, order
}

// add merges d.
func (a *distAcc) add(d *Dist) {
	if d == nil || d.N == 0 {
		return
	}
	if d.sketch != nil && !a.unsketched {
		if a.b == nil {
			a.b = &DistBuilder{}
		}
		a.b.Merge(d.sketch)
		a.b.compact()
	} else {
		a.unsketched = true
	}
	if !a.present || d.Min < a.lo {
		a.lo = d.Min
	}
	if !a.present || d.Max > a.hi {
		a.hi = d.Max
	}
	a.present = true
	a.n += d.N
	a.w += d.Weight
	a.sum += d.Mean * d.Weight
	a.p50 += d.P50 * d.Weight
	a.p90 += d.P90 * d.Weight
	a.p99 += d.P99 * d.Weight
}

// dist returns the merged distribution (nil if none was added).
func (a *distAcc) dist(hist bool) *Dist {
	if !a.present {
		return nil
	}
	if a.b != nil && !a.unsketched {
		return a.b.Dist(hist)
	}
	d := &Dist{N: a.n, Weight: a.w, Min: a.lo, Max: a.hi}
	if a.w > 0 {
		d.Mean, d.P50, d.P90, d.P99 = a.sum/a.w, a.p50/a.w, a.p90/a.w, a.p99/a.w
	}
	return d
}

// Windows returns how many results were merged.
func (m *ResultMerger) Windows() int { return m.windows }

// Result returns the merged result, its patterns ranked; nil when nothing
// was added.
func (m *ResultMerger) Result() *Result {
	if m.res == nil {
		return nil
	}
	out := *m.res
	out.Warnings = m.warnings()
	if m.overPatterns > 0 {
		out.Accounting = append(slices.Clone(out.Accounting),
			trace.Count{Stage: out.Engine, Name: "patterns_over_merge_limit", Value: m.overPatterns},
			trace.Count{Stage: out.Engine, Name: "instances_over_merge_limit", Value: m.overInstances})
		out.Warnings = append(slices.Clone(out.Warnings), fmt.Sprintf("%d patterns (%d instances) first seen after %d were held were left out of the merged windows", m.overPatterns, m.overInstances, m.limit))
	}
	if m.overRequests > 0 {
		out.Accounting = append(slices.Clone(out.Accounting), trace.Count{Stage: out.Engine, Name: "requests_over_merge_limit", Value: m.overRequests})
		out.Warnings = append(slices.Clone(out.Warnings), fmt.Sprintf("%d requests of windows merged after %d were held were left out", m.overRequests, m.reqLimit))
	}
	out.Requests = m.mergedRequests()
	out.Patterns = make([]Pattern, 0, len(m.merged))
	for i := range m.merged {
		mp := &m.merged[i]
		p := mp.p
		p.Latency = mp.latency.dist(false)
		p.Hops = make([]Hop, len(mp.p.Hops))
		copy(p.Hops, mp.p.Hops)
		for k, h := range mp.pos {
			hp := &p.Hops[h]
			acc := &mp.hops[k]
			hp.Start, hp.NodeDelay, hp.NetDelay, hp.Bytes = acc[0].dist(m.hist), acc[1].dist(m.hist), acc[2].dist(m.hist), acc[3].dist(false)
		}
		out.Patterns = append(out.Patterns, p)
	}
	RankPatterns(out.Patterns, m.metric)
	if m.maxPatterns > 0 && len(out.Patterns) > m.maxPatterns {
		out.Patterns = out.Patterns[:m.maxPatterns]
	}
	rank := make([]int, len(m.merged)) // merged index -> rank (0: left out)
	for i := range out.Patterns {
		out.Patterns[i].Rank = i + 1
		key, _ := structureOf(&out.Patterns[i])
		rank[m.pats[key]] = i + 1
	}
	if len(m.types) > 0 {
		out.RequestTypes = m.requestTypes(rank)
	}
	return &out
}

// warnShape is where the merged result keeps the warnings of one shape
// (warningShape): the first window's text, in how many windows one was
// given, and whether their texts differed.
type warnShape struct {
	index   int
	windows int
	differ  bool
}

// addWarnings keeps one window's engine warnings: one per shape, so that
// the same warning with each window's own numbers ("12 of 40 joint
// decisions ...") is not repeated once per window.
func (m *ResultMerger) addWarnings(ws []string) {
	seen := map[string]bool{}
	for _, w := range ws {
		k := warningShape(w)
		if seen[k] {
			continue
		}
		seen[k] = true
		if sh := m.shapes[k]; sh != nil {
			sh.windows++
			sh.differ = sh.differ || m.res.Warnings[sh.index] != w
			continue
		}
		m.shapes[k] = &warnShape{index: len(m.res.Warnings), windows: 1}
		m.res.Warnings = append(m.res.Warnings, w)
	}
}

// warnings returns the merged engine warnings: one of each shape given in
// several windows with different numbers says so.
func (m *ResultMerger) warnings() []string {
	out := slices.Clone(m.res.Warnings)
	for _, sh := range m.shapes {
		if sh.differ {
			out[sh.index] = fmt.Sprintf("in %d of %d windows, numbers differing (the first's): %s", sh.windows, m.windows, out[sh.index])
		}
	}
	return out
}

// warningShape is w with every run of digits replaced by '#'.
func warningShape(w string) string {
	b := make([]byte, 0, len(w))
	for i := 0; i < len(w); i++ {
		if w[i] >= '0' && w[i] <= '9' {
			if len(b) == 0 || b[len(b)-1] != '#' {
				b = append(b, '#')
			}
			continue
		}
		b = append(b, w[i])
	}
	return string(b)
}
