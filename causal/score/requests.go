package score

import (
	"sort"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

// RequestReport scores one engine's result against a testbed truth
// request by request (ScoreRequests). It marshals to the JSON that
// `wirepath score --json` prints for a testbed truth.
type RequestReport struct {
	Engine string `json:"engine"`
	// Instances is false when the result lists neither requests nor
	// instance messages (run the engine with --instances -1): nothing else
	// can be scored then. Requests, where listed, are scored instead of
	// instances.
	Instances bool `json:"instances"`
	// Requests counts the requests (background calls excluded) and those
	// whose whole call tree is exactly right: every call of the request has
	// its true parent call (the root none), every RETURN is in its call,
	// and no other call was given a parent in the request (TraceWeaver's
	// metric). Observed requests are those whose every message the trace
	// holds; a request with an unseen message cannot be right.
	Requests RequestCount `json:"requests"`
	// Kinds breaks Requests down by request kind.
	Kinds []KindCount `json:"kinds"`
	// Links are per link type (caller→callee tiers): how many child calls
	// of that type were attributed to the right parent call, and how many
	// requests had all their calls of that type right.
	Links []LinkCount `json:"links"`
	// Roots counts the requests' root calls inferred as roots.
	Roots Fraction `json:"roots"`
	// Background counts the background calls (caused by no request) kept
	// out of every request.
	Background Fraction `json:"background"`
	// Messages counts the messages whose parent message (the result
	// contract's hop parent) is the true one.
	Messages Fraction `json:"messages"`
	// Nodes is the node delay error by sending tier.
	Nodes []NodeDelay `json:"nodes"`
	// Unplaced counts observed true messages in no instance of the result.
	Unplaced int `json:"unplaced"`
	// Calibration compares the result's stated confidences with what it
	// got right; absent when the result states none per link (it lists
	// no requests of its own).
	Calibration *Calibration `json:"calibration,omitempty"`
	// Verdicts says, per request of the truth (background ones included,
	// in the truth's order), whether the trace held its every message and
	// whether its call tree is exactly right: what comparing two runs
	// request by request needs (a loss experiment). Not in the JSON.
	Verdicts []RequestVerdict `json:"-"`
}

// RequestVerdict is one request's score.
type RequestVerdict struct {
	Observed, Right bool
}

// Fraction is a count of right cases out of all.
type Fraction struct {
	All   int     `json:"all"`
	Right int     `json:"right"`
	Share float64 `json:"share"`
}

func frac(right, all int) Fraction { return Fraction{All: all, Right: right, Share: rate(right, all)} }

// RequestCount counts requests.
type RequestCount struct {
	All      int     `json:"all"`
	Observed int     `json:"observed"`
	Right    int     `json:"right"`
	Share    float64 `json:"share"`
}

// KindCount counts the requests of one kind.
type KindCount struct {
	Kind string `json:"kind"`
	RequestCount
}

// LinkCount scores one link type.
type LinkCount struct {
	Link string `json:"link"`
	// Calls are the child calls of this type, Right those attributed to
	// their true parent call.
	Calls      int     `json:"calls"`
	Right      int     `json:"right"`
	Attributed float64 `json:"attributed"`
	// Requests that have calls of this type, and those whose calls of
	// this type are all right.
	Requests      int     `json:"requests"`
	RequestsRight int     `json:"requests_right"`
	RequestShare  float64 `json:"request_share"`
}

// NodeDelay is the node delay error of the messages one tier sent: the
// delay between the inferred parent's arrival and the send, against the
// same with the true parent, both from the trace's timestamps (so the
// figure measures the attribution, not the clocks).
type NodeDelay struct {
	Node string `json:"node"`
	// N messages had both delays; MeanTrueUS is their mean true delay,
	// MeanAbsErrorUS the mean absolute error, RelError Σ|error| ÷ Σ true.
	N              int     `json:"n"`
	MeanTrueUS     float64 `json:"mean_true_us"`
	MeanAbsErrorUS float64 `json:"mean_abs_error_us"`
	RelError       float64 `json:"rel_error"`
	// NoParent counts the messages with a true parent that the result made
	// roots.
	NoParent int `json:"no_parent"`
}

// placement is what the result says about one trace message, from the
// most probable instance that holds it.
type placement struct {
	p          float64
	parent     int32 // trace index of the parent message, -1 for a root
	callOpener int32 // trace index of the message that opened its call
	callParent int32 // trace index of the opener of the parent call, -1 none
	placed     bool
	// conf is the confidence of the link that placed the message (an
	// engine's own requests only), joint whether the joint assignment
	// decided it.
	conf  float64
	joint bool
}

// placements reads what res says about every trace message: from its
// requests where it lists them (the assembly engine), else from every
// instance of its patterns.
func placements(res *causal.Result, t *trace.Trace) ([]placement, bool) {
	if len(res.Requests) > 0 {
		return requestPlacements(res, t), true
	}
	pl := make([]placement, len(t.Messages))
	listed := false
	for pi := range res.Patterns {
		pat := &res.Patterns[pi]
		for _, in := range pat.Instances {
			if len(in.Messages) != len(pat.Hops) {
				continue
			}
			listed = true
			placeInstance(pl, pat, in, t)
		}
	}
	return pl, listed
}

// requestPlacements reads the requests of res: each message's parent
// message, the CALL that opened its call and the CALL of its call's parent
// call are listed. A message placed in several requests keeps the most
// confident one.
func requestPlacements(res *causal.Result, t *trace.Trace) []placement {
	pl := make([]placement, len(t.Messages))
	for qi := range res.Requests {
		q := &res.Requests[qi]
		msg := func(i int) int32 {
			if i < 0 || i >= len(q.Messages) {
				return -1
			}
			return int32(q.Messages[i].Msg)
		}
		for _, m := range q.Messages {
			if m.Msg < 0 || m.Msg >= len(t.Messages) || pl[m.Msg].placed && pl[m.Msg].p >= q.Confidence {
				continue
			}
			pl[m.Msg] = placement{p: q.Confidence, parent: msg(m.Parent), callOpener: msg(m.Call),
				callParent: msg(m.CallParent), placed: true, conf: m.Confidence,
				joint: m.Evidence == "joint-timing" || m.Evidence == "tokens"}
		}
	}
	return pl
}

func placeInstance(pl []placement, pat *causal.Pattern, in causal.InstanceRecord, t *trace.Trace) {
	ids := in.Messages
	valid := func(i int) bool { return ids[i] >= 0 && ids[i] < len(t.Messages) }
	parent := func(i int) int {
		if pat.Hops[i].Parent == nil {
			return -1
		}
		return *pat.Hops[i].Parent
	}
	ct := buildCallTree(msgTree{
		n:      len(ids),
		parent: parent,
		kind: func(i int) trace.Kind {
			if !valid(i) {
				return trace.KindUnknown
			}
			return t.Messages[ids[i]].Kind
		},
		from: func(i int) string {
			if !valid(i) {
				return ""
			}
			return t.Str(t.Messages[ids[i]].Src)
		},
		to: func(i int) string {
			if !valid(i) {
				return ""
			}
			return t.Str(t.Messages[ids[i]].Dst)
		},
	})
	for i, id := range ids {
		if !valid(i) || (pl[id].placed && pl[id].p >= in.Probability) {
			continue
		}
		q := placement{p: in.Probability, parent: -1, callParent: -1, placed: true}
		if p := parent(i); p >= 0 && p < len(ids) {
			q.parent = int32(ids[p])
		}
		if len(ct.of) == len(ids) {
			c := ct.of[i]
			q.callOpener = int32(ids[ct.opener[c]])
			if pc := ct.parent[c]; pc >= 0 {
				q.callParent = int32(ids[ct.opener[pc]])
			}
		}
		pl[id] = q
	}
}

// ScoreRequests scores res, inferred from the trace t, against the truth
// f, with the mapping m of t's messages to f's (MapTrace).
func ScoreRequests(res *causal.Result, t *trace.Trace, f *truth.File, m *Mapping) *RequestReport {
	r := &RequestReport{Engine: res.Engine}
	pl, listed := placements(res, t)
	r.Instances = listed
	s := &reqScorer{f: f, t: t, m: m, pl: pl}
	s.callParents()
	r.scoreCalls(s)
	r.scoreMessages(s)
	if len(res.Requests) > 0 {
		r.Calibration = s.calibration(r.Verdicts)
	}
	return r
}

type reqScorer struct {
	f  *truth.File
	t  *trace.Trace
	m  *Mapping
	pl []placement
	// inferred is, per true CALL, the true call the result made its parent:
	// -1 a root, -2 something that is no true call, -3 not placed or not
	// observed.
	inferred []int
	// foreign counts, per request, the calls of other requests (or of no
	// request) the result hung under one of its calls.
	foreign []int
	// broken marks the true calls whose RETURN the result put in another
	// call.
	broken []bool
}

// truthCall maps the trace message that opened an inferred call to the
// true call: its id, or -2 when it is no true CALL.
func (s *reqScorer) truthCall(opener int32) int {
	if opener < 0 {
		return -1
	}
	ti := s.m.TraceToTruth[opener]
	if ti < 0 || s.f.Messages[ti].Dir != truth.Call {
		return -2
	}
	return int(ti)
}

func (s *reqScorer) callParents() {
	f := s.f
	s.inferred = make([]int, len(f.Messages))
	s.foreign = make([]int, len(f.Requests))
	s.broken = make([]bool, len(f.Messages))
	for i := range f.Messages {
		s.inferred[i] = -3
		fm := &f.Messages[i]
		ti := s.m.TruthToTrace[i]
		if ti < 0 || !s.pl[ti].placed {
			continue
		}
		q := s.pl[ti]
		if fm.Dir == truth.Return {
			s.broken[fm.Call] = s.truthCall(q.callOpener) != fm.Call
			continue
		}
		if q.callOpener != ti {
			s.inferred[i] = -2 // the CALL joined another call
			continue
		}
		s.inferred[i] = s.truthCall(q.callParent)
	}
	// Messages placed in a request they are not part of (including trace
	// messages of no request): a call hung under one of its calls, or any
	// other message inside one of its calls.
	for ti := range s.t.Messages {
		q := s.pl[ti]
		if !q.placed {
			continue
		}
		host := -1
		if q.callOpener == int32(ti) {
			if p := s.truthCall(q.callParent); p >= 0 {
				host = f.Messages[p].Request
			}
		} else if q.callOpener >= 0 { // -1: its call's CALL was not seen
			if o := s.m.TraceToTruth[q.callOpener]; o >= 0 {
				host = f.Messages[o].Request
			}
		}
		if host < 0 {
			continue
		}
		if own := s.m.TraceToTruth[ti]; own < 0 || f.Messages[own].Request != host {
			s.foreign[host]++
		}
	}
}

// callRight reports whether true call i (a CALL message) has its true
// parent call and keeps its RETURN.
func (s *reqScorer) callRight(i int) bool {
	fm := &s.f.Messages[i]
	return s.inferred[i] == fm.CallParent && !s.broken[i]
}

func (r *RequestReport) scoreCalls(s *reqScorer) {
	f := s.f
	type reqState struct {
		observed, right bool
		linkAll         map[string]bool
	}
	st := make([]reqState, len(f.Requests))
	for i := range st {
		st[i] = reqState{observed: true, right: s.foreign[i] == 0, linkAll: map[string]bool{}}
	}
	links := map[string]*LinkCount{}
	var roots, rootsRight, bg, bgRight int
	for i := range f.Messages {
		fm := &f.Messages[i]
		rs := &st[fm.Request]
		if s.m.TruthToTrace[i] < 0 {
			rs.observed, rs.right = false, false
		}
		if fm.Dir != truth.Call {
			continue
		}
		ok := s.callRight(i)
		if !ok {
			rs.right = false
		}
		if fm.CallParent < 0 {
			if f.Requests[fm.Request].Background {
				bg++
				if s.inferred[i] == -1 {
					bgRight++
				}
			} else {
				roots++
				if s.inferred[i] == -1 {
					rootsRight++
				}
			}
			continue
		}
		l := linkOf(fm)
		lc := links[l]
		if lc == nil {
			lc = &LinkCount{Link: l}
			links[l] = lc
		}
		lc.Calls++
		if ok {
			lc.Right++
		}
		if prev, seen := rs.linkAll[l]; !seen || prev {
			rs.linkAll[l] = ok
		}
	}
	r.Roots, r.Background = frac(rootsRight, roots), frac(bgRight, bg)
	r.Verdicts = make([]RequestVerdict, len(st))
	for i := range st {
		r.Verdicts[i] = RequestVerdict{Observed: st[i].observed, Right: st[i].right}
	}
	kinds := map[string]*KindCount{}
	for i, q := range f.Requests {
		if q.Background {
			continue
		}
		k := kinds[q.Kind]
		if k == nil {
			k = &KindCount{Kind: q.Kind}
			kinds[q.Kind] = k
		}
		for _, c := range []*RequestCount{&r.Requests, &k.RequestCount} {
			c.All++
			if st[i].observed {
				c.Observed++
			}
			if st[i].right {
				c.Right++
			}
		}
		for l, ok := range st[i].linkAll {
			links[l].Requests++
			if ok {
				links[l].RequestsRight++
			}
		}
	}
	r.Requests.Share = rate(r.Requests.Right, r.Requests.All)
	for _, k := range kinds {
		k.Share = rate(k.Right, k.All)
		r.Kinds = append(r.Kinds, *k)
	}
	sort.Slice(r.Kinds, func(a, b int) bool { return r.Kinds[a].Kind < r.Kinds[b].Kind })
	for _, lc := range links {
		lc.Attributed = rate(lc.Right, lc.Calls)
		lc.RequestShare = rate(lc.RequestsRight, lc.Requests)
		r.Links = append(r.Links, *lc)
	}
	sort.Slice(r.Links, func(a, b int) bool { return linkRank(r.Links[a].Link) < linkRank(r.Links[b].Link) })
}

// linkRank orders links from the client inwards.
func linkRank(l string) string {
	order := []string{"client", "web", "app", "memcached", "redis", "dns", "tier2", "backend"}
	for i, o := range order {
		if len(l) >= len(o) && l[:len(o)] == o {
			return string(rune('a'+i)) + l
		}
	}
	return "z" + l
}

func (r *RequestReport) scoreMessages(s *reqScorer) {
	f, t := s.f, s.t
	var all, right int
	type acc struct {
		n, noParent  int
		sumT, sumAbs float64
	}
	nodes := map[string]*acc{}
	for i := range f.Messages {
		fm := &f.Messages[i]
		ti := s.m.TruthToTrace[i]
		if ti < 0 {
			continue
		}
		q := s.pl[ti]
		if !q.placed {
			r.Unplaced++
			continue
		}
		all++
		inf := -1
		if q.parent >= 0 {
			inf = int(s.m.TraceToTruth[q.parent])
			if inf < 0 {
				inf = -2
			}
		}
		if inf == fm.Parent {
			right++
		}
		if fm.Parent < 0 {
			continue
		}
		tp := s.m.TruthToTrace[fm.Parent]
		if tp < 0 {
			continue
		}
		a := nodes[fm.From]
		if a == nil {
			a = &acc{}
			nodes[fm.From] = a
		}
		if q.parent < 0 {
			a.noParent++
			continue
		}
		send, trueRecv, infRecv := t.Messages[ti].SendTS, t.Messages[tp].RecvTS, t.Messages[q.parent].RecvTS
		if !send.Known() || !trueRecv.Known() || !infRecv.Known() {
			continue
		}
		tru := float64(send - trueRecv)
		err := float64(trueRecv - infRecv)
		if err < 0 {
			err = -err
		}
		a.n++
		a.sumT += tru
		a.sumAbs += err
	}
	r.Messages = frac(right, all)
	for name, a := range nodes {
		nd := NodeDelay{Node: name, N: a.n, NoParent: a.noParent}
		if a.n > 0 {
			nd.MeanTrueUS = a.sumT / float64(a.n) / 1e3
			nd.MeanAbsErrorUS = a.sumAbs / float64(a.n) / 1e3
			if a.sumT != 0 {
				nd.RelError = a.sumAbs / a.sumT
			}
		}
		r.Nodes = append(r.Nodes, nd)
	}
	sort.Slice(r.Nodes, func(a, b int) bool { return linkRank(r.Nodes[a].Node) < linkRank(r.Nodes[b].Node) })
}

// calibration compares the confidences of the result's links and
// requests with their verdicts (per true request, in the truth's order).
func (s *reqScorer) calibration(verdicts []RequestVerdict) *Calibration {
	f := s.f
	var links, joint, reqs ReliabilityCounter
	for i := range f.Messages {
		fm := &f.Messages[i]
		ti := s.m.TruthToTrace[i]
		if fm.Dir != truth.Call || ti < 0 {
			continue
		}
		q := s.pl[ti]
		if !q.placed || q.callOpener != ti || q.callParent < 0 {
			continue
		}
		right := s.inferred[i] == fm.CallParent
		links.Add(q.conf, right)
		if q.joint {
			joint.Add(q.conf, right)
		}
	}
	for i, q := range f.Requests {
		if q.Background || i >= len(verdicts) || !verdicts[i].Observed {
			continue
		}
		if ti := s.m.TruthToTrace[q.Root]; ti >= 0 && s.pl[ti].placed {
			reqs.Add(s.pl[ti].p, verdicts[i].Right)
		}
	}
	return &Calibration{Links: links.Reliability(), JointLinks: joint.Reliability(), Requests: reqs.Reliability()}
}
