// Package score measures how well an engine's result matches the ground
// truth of a generated trace, with the metrics of Project 5 section 7.5.1.
//
// Stage and contract: score reads a *causal.Result (any engine's) and a
// *gen.Truth and returns a *Report. Patterns are compared by the canonical
// form of their signatures (causal.Canonical); the true patterns come from
// feeding the truth's instances to causal.Aggregator with the naming
// options the engine used, so that a correct engine scores perfectly.
//
//   - Patterns: a false positive is an inferred pattern that is not a true
//     one; a false negative is a true pattern the result lacks.
//   - Instances: an inferred instance is correct when it has exactly the
//     messages of one true instance with the same parent for each message.
//     False positives are the inferred instances that are not correct; false
//     negatives the true instances no inferred instance matches. Instances
//     of probabilistic engines (linking) are also counted weighted by their
//     probability.
//   - Messages: a true message is correctly ascribed when a correct inferred
//     instance holds it; false negatives are the true messages that are not
//     (including those the sniffer lost), false positives the trace messages
//     placed in an incorrect instance.
//   - Top N: how many of the N most frequent true patterns are missing from
//     the result's N top-ranked patterns, as a function of N; with a
//     tolerance, omissions whose inferred count is within that fraction of
//     the N-th inferred pattern's (near-ties) are excused.
//   - Delays: for every pattern found, the error of each hop's mean node
//     delay and network delay against the truth, and per node.
//
// Instance and message scores need the messages of every instance: run the
// engine with --instances -1 (Pattern.Instances). They index the trace the
// engine read, which must be the trace generated with the truth.
package score

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
)

// DefaultTolerance is the near-tie tolerance of the top-N curve (Project 5
// Figure 17 plots 2%).
const DefaultTolerance = 0.02

// Options control Score.
type Options struct {
	// Naming must be the naming the engine used.
	Naming causal.Naming
	// MaxN is the largest N of the top-N curve (0: the number of true
	// patterns).
	MaxN int
	// Tolerance is the near-tie tolerance of the top-N curve.
	Tolerance float64
	// View is ViewMessages (the default) or ViewCalls.
	View View
	// TraceToTruth maps the index of each message of the trace the engine
	// read to its truth index (-1: none). Nil means the trace generated with
	// the truth (Truth.ByObserved).
	TraceToTruth []int32
}

// DefaultOptions uses the engines' default naming and a 2% tolerance.
func DefaultOptions() Options {
	return Options{Naming: causal.DefaultNaming(), Tolerance: DefaultTolerance}
}

// Report is the score of one result against one truth. It marshals to the
// JSON that `wirepath score --json` prints.
type Report struct {
	Engine string `json:"engine"`
	// View is the view the patterns and instances were compared in.
	View      View         `json:"view"`
	Truth     TruthSummary `json:"truth"`
	Patterns  PatternScore `json:"patterns"`
	Instances *CountScore  `json:"instances,omitempty"`
	// CallTrees is, in the messages view, the instances compared as call
	// trees: an instance is correct when each of its calls has the right
	// parent call, whatever order its messages are said to follow each
	// other in. It is the accuracy harness's "requests exactly right"
	// (causal/accuracy.ExactRequests) and issue 11's metric; nil in the
	// calls view (Instances is that figure) or when instances are not
	// scored.
	CallTrees *CountScore  `json:"call_trees,omitempty"`
	Messages  *CountScore  `json:"messages,omitempty"`
	Tolerance float64      `json:"tolerance"`
	TopN      []TopNPoint  `json:"top_n"`
	Delays    DelaySummary `json:"delays"`
	Hops      []HopError   `json:"hops"`
	Nodes     []NodeError  `json:"nodes"`
	Warnings  []string     `json:"warnings,omitempty"`
	// Matched says, per true instance, whether an inferred instance
	// matched it exactly (Instances): what comparing two runs instance by
	// instance needs (a loss experiment). Not in the JSON.
	Matched   []bool `json:"-"`
	truthPats []causal.Pattern
}

// TruthSummary describes the truth scored against.
type TruthSummary struct {
	Config    string `json:"config,omitempty"`
	Instances int    `json:"instances"`
	Messages  int    `json:"messages"`
	Observed  int    `json:"observed"`
	Patterns  int    `json:"patterns"`
}

// PatternScore counts patterns.
type PatternScore struct {
	Truth             int          `json:"truth"`
	Inferred          int          `json:"inferred"`
	TruePositives     int          `json:"true_positives"`
	FalsePositives    int          `json:"false_positives"`
	FalseNegatives    int          `json:"false_negatives"`
	FalsePositiveRate float64      `json:"false_positive_rate"`
	FalseNegativeRate float64      `json:"false_negative_rate"`
	FalsePositiveList []PatternRef `json:"false_positive_patterns,omitempty"`
	FalseNegativeList []PatternRef `json:"false_negative_patterns,omitempty"`
}

// PatternRef names a pattern of the result (Rank > 0) or of the truth
// (TruthRank > 0).
type PatternRef struct {
	Rank      int     `json:"rank,omitempty"`
	TruthRank int     `json:"truth_rank,omitempty"`
	Signature string  `json:"signature"`
	Count     int     `json:"count"`
	Expected  float64 `json:"expected,omitempty"`
}

// CountScore counts instances or messages. Rates are FalsePositives ÷
// Inferred and FalseNegatives ÷ Truth; the Weighted figures count each
// inferred instance by its probability.
type CountScore struct {
	Truth             int     `json:"truth"`
	Inferred          int     `json:"inferred"`
	Correct           int     `json:"correct"`
	FalsePositives    int     `json:"false_positives"`
	FalseNegatives    int     `json:"false_negatives"`
	FalsePositiveRate float64 `json:"false_positive_rate"`
	FalseNegativeRate float64 `json:"false_negative_rate"`
	// Lost counts the true messages the trace the engine read does not
	// have (a sniffer lost them), and the true instances with such a
	// message, which no inferred instance can match.
	Lost int `json:"lost,omitempty"`

	WeightedInferred          float64 `json:"weighted_inferred"`
	WeightedFalsePositives    float64 `json:"weighted_false_positives"`
	WeightedFalseNegatives    float64 `json:"weighted_false_negatives"`
	WeightedFalsePositiveRate float64 `json:"weighted_false_positive_rate"`
	WeightedFalseNegativeRate float64 `json:"weighted_false_negative_rate"`
}

// TopNPoint is one point of the top-N omission curve.
type TopNPoint struct {
	N       int `json:"n"`
	Omitted int `json:"omitted"`
	// Excused omissions are near-ties within the tolerance.
	Excused int     `json:"excused"`
	Rate    float64 `json:"rate"`
	// RateTolerant is (Omitted - Excused) ÷ N.
	RateTolerant float64 `json:"rate_tolerant"`
}

// HopError is the delay error of one hop of a pattern found in both.
type HopError struct {
	Rank      int    `json:"rank"`
	TruthRank int    `json:"truth_rank"`
	Hop       int    `json:"hop"`
	From      string `json:"from"`
	To        string `json:"to"`
	Kind      string `json:"kind"`
	// Weight is the true pattern's instance count.
	Weight int `json:"weight"`
	// Node delay means (µs) and their difference (inferred - true).
	TrueNodeUS  *float64 `json:"true_node_us,omitempty"`
	NodeUS      *float64 `json:"node_us,omitempty"`
	NodeErrorUS *float64 `json:"node_error_us,omitempty"`
	TrueNetUS   *float64 `json:"true_net_us,omitempty"`
	NetUS       *float64 `json:"net_us,omitempty"`
	NetErrorUS  *float64 `json:"net_error_us,omitempty"`
}

// NodeError aggregates the node-delay errors of the hops sent by one node,
// weighted by the true patterns' instance counts.
type NodeError struct {
	Node string `json:"node"`
	Hops int    `json:"hops"`
	// MeanTrueUS is the weighted mean true node delay; MeanAbsErrorUS the
	// weighted mean absolute error; RelError their ratio.
	MeanTrueUS     float64 `json:"mean_true_us"`
	MeanAbsErrorUS float64 `json:"mean_abs_error_us"`
	RelError       float64 `json:"rel_error"`
}

// DelaySummary sums the delay errors over all hops of the patterns found.
type DelaySummary struct {
	Hops int `json:"hops"`
	// NodeRelError is Σ w·|error| ÷ Σ w·true over node delays; NetRelError
	// the same over network delays.
	NodeRelError   float64 `json:"node_rel_error"`
	NodeMaxErrorUS float64 `json:"node_max_error_us"`
	NetRelError    float64 `json:"net_rel_error"`
}

// ErrMismatch is returned when a result cannot have come from the truth's
// trace.
var ErrMismatch = errors.New("result and truth do not match")

// Score compares res with truth.
func Score(res *causal.Result, truth *gen.Truth, opt Options) (*Report, error) {
	if opt.Tolerance < 0 || math.IsNaN(opt.Tolerance) {
		return nil, fmt.Errorf("tolerance must not be negative")
	}
	if opt.View == "" {
		opt.View = ViewMessages
	}
	if opt.View != ViewMessages && opt.View != ViewCalls {
		return nil, fmt.Errorf("unknown view %q", opt.View)
	}
	tps, err := truth.Patterns(causal.AggregateOptions{Naming: opt.Naming})
	if err != nil {
		return nil, err
	}
	r := &Report{
		Engine:    res.Engine,
		View:      opt.View,
		Tolerance: opt.Tolerance,
		truthPats: tps,
		Truth: TruthSummary{
			Config:    truth.Meta.Config,
			Instances: truth.NumInstances(),
			Messages:  len(truth.Trace.Messages),
			Observed:  truth.Meta.Observed,
		},
	}
	val := rankValue(res)
	// Message-view canonical forms, for the delays (and the patterns in
	// that view).
	msgCanon := make([]string, len(res.Patterns))
	for i := range res.Patterns {
		c, err := causal.Canonical(res.Patterns[i].Signature)
		if err != nil {
			return nil, fmt.Errorf("result pattern %d: %w", res.Patterns[i].Rank, err)
		}
		msgCanon[i] = c
	}
	truthMsgCanon := make([]string, len(tps))
	for i := range tps {
		if truthMsgCanon[i], err = causal.Canonical(tps[i].Signature); err != nil {
			return nil, err
		}
	}
	var inf, tru []entry
	if opt.View == ViewCalls {
		inf = mergeEntries(res.Patterns, nil, val)
		tru = mergeEntries(tps, nil, func(p *causal.Pattern) float64 { return float64(p.Count) })
	} else {
		inf = mergeEntries(res.Patterns, msgCanon, val)
		tru = mergeEntries(tps, truthMsgCanon, func(p *causal.Pattern) float64 { return float64(p.Count) })
	}
	r.Truth.Patterns = len(tru)
	r.scorePatterns(inf, tru)
	r.scoreTopN(inf, tru, opt)
	r.scoreDelays(res.Patterns, msgCanon, tps, truthMsgCanon)
	if len(tru) > 0 && r.Patterns.TruePositives == 0 && len(inf) > 0 {
		r.Warnings = append(r.Warnings, "no inferred pattern is a true one: were the engine and the scorer run with the same naming options?")
	}
	if err := r.scoreInstances(res, truth, opt); err != nil {
		r.Warnings = append(r.Warnings, "instances and messages not scored: "+err.Error())
	}
	return r, nil
}

// entry is a pattern as the view sees it; in the call view several result
// patterns (trees of messages) can be one call tree, and are merged.
type entry struct {
	canon string
	sig   string
	rank  int // the best rank of the patterns merged
	count int
	exp   float64
	value float64 // the ranking figure
}

// mergeEntries turns patterns into entries ranked by value. With canon nil
// the entries are call trees, merged; otherwise canon[i] is pattern i's.
func mergeEntries(ps []causal.Pattern, canon []string, val func(*causal.Pattern) float64) []entry {
	idx := make(map[string]int, len(ps))
	var out []entry
	for i := range ps {
		p := &ps[i]
		var c, sig string
		if canon == nil {
			c = patternCallTree(p).signature()
			sig = c
		} else {
			c, sig = canon[i], p.Signature
		}
		j, ok := idx[c]
		if !ok {
			j = len(out)
			idx[c] = j
			out = append(out, entry{canon: c, sig: sig, rank: p.Rank})
		}
		e := &out[j]
		e.count += p.Count
		e.exp += p.Expected
		e.value += val(p)
		if p.Rank < e.rank {
			e.rank = p.Rank
		}
	}
	slices.SortStableFunc(out, func(a, b entry) int {
		switch {
		case a.value > b.value:
			return -1
		case a.value < b.value:
			return 1
		case a.count != b.count:
			return b.count - a.count
		}
		return strings.Compare(a.canon, b.canon)
	})
	return out
}

// rankValue returns the figure res ranks its patterns by.
func rankValue(res *causal.Result) func(p *causal.Pattern) float64 {
	metric, _ := res.Params["rank"].(string)
	return func(p *causal.Pattern) float64 {
		switch causal.RankMetric(metric) {
		case causal.RankCount:
			return float64(p.Count)
		case causal.RankMaxProbability:
			return p.MaxProbability
		}
		if p.Expected == 0 && p.Count > 0 {
			return float64(p.Count)
		}
		return p.Expected
	}
}

func rate(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func frate(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *Report) scorePatterns(inf, tru []entry) {
	ps := &r.Patterns
	ps.Truth, ps.Inferred = len(tru), len(inf)
	isTrue := make(map[string]bool, len(tru))
	for _, e := range tru {
		isTrue[e.canon] = true
	}
	found := make(map[string]bool, len(inf))
	for _, e := range inf {
		found[e.canon] = true
		if isTrue[e.canon] {
			ps.TruePositives++
			continue
		}
		ps.FalsePositives++
		ps.FalsePositiveList = append(ps.FalsePositiveList, PatternRef{Rank: e.rank, Signature: e.sig, Count: e.count, Expected: e.exp})
	}
	for i, e := range tru {
		if !found[e.canon] {
			ps.FalseNegatives++
			ps.FalseNegativeList = append(ps.FalseNegativeList, PatternRef{TruthRank: i + 1, Signature: e.sig, Count: e.count})
		}
	}
	ps.FalsePositiveRate = rate(ps.FalsePositives, ps.Inferred)
	ps.FalseNegativeRate = rate(ps.FalseNegatives, ps.Truth)
}

func (r *Report) scoreTopN(inf, tru []entry, opt Options) {
	maxN := opt.MaxN
	if maxN <= 0 {
		maxN = len(tru)
	}
	maxN = min(maxN, len(tru))
	pos := make(map[string]int, len(inf)) // canonical -> position in the result's order
	for i, e := range inf {
		pos[e.canon] = i
	}
	for n := 1; n <= maxN; n++ {
		pt := TopNPoint{N: n}
		cut := 0.0
		if n <= len(inf) {
			cut = inf[n-1].value
		}
		for i := 0; i < n; i++ {
			j, ok := pos[tru[i].canon]
			if ok && j < n {
				continue
			}
			pt.Omitted++
			if ok && inf[j].value >= (1-opt.Tolerance)*cut {
				pt.Excused++
			}
		}
		pt.Rate = rate(pt.Omitted, n)
		pt.RateTolerant = rate(pt.Omitted-pt.Excused, n)
		r.TopN = append(r.TopN, pt)
	}
}

// hopOrder returns the hops of p in canonical pre-order: children sorted by
// the canonical text of their subtrees, then by mean start.
func hopOrder(p *causal.Pattern) []int {
	n := len(p.Hops)
	kids := make([][]int, n)
	root := -1
	for i, h := range p.Hops {
		if h.Parent == nil || *h.Parent < 0 || *h.Parent >= n {
			if root < 0 {
				root = i
			}
			continue
		}
		kids[*h.Parent] = append(kids[*h.Parent], i)
	}
	if root < 0 {
		return nil
	}
	text := make([]string, n)
	var canon func(i int) string
	canon = func(i int) string {
		ks := kids[i]
		for _, k := range ks {
			canon(k)
		}
		start := func(k int) float64 {
			if p.Hops[k].Start == nil {
				return 0
			}
			return p.Hops[k].Start.Mean
		}
		slices.SortStableFunc(ks, func(a, b int) int {
			if c := strings.Compare(text[a], text[b]); c != 0 {
				return c
			}
			switch sa, sb := start(a), start(b); {
			case sa < sb:
				return -1
			case sa > sb:
				return 1
			}
			return 0
		})
		var b strings.Builder
		b.WriteString(causal.QuoteName(p.Hops[i].From))
		b.WriteString("->")
		b.WriteString(causal.QuoteName(p.Hops[i].To))
		if len(ks) > 0 {
			b.WriteByte('(')
			for j, k := range ks {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(text[k])
			}
			b.WriteByte(')')
		}
		text[i] = b.String()
		return text[i]
	}
	canon(root)
	order := make([]int, 0, n)
	var walk func(i int)
	walk = func(i int) {
		order = append(order, i)
		for _, k := range kids[i] {
			walk(k)
		}
	}
	walk(root)
	return order
}

func fp(v float64) *float64 { return &v }

func (r *Report) scoreDelays(ps []causal.Pattern, canon []string, tps []causal.Pattern, truthCanon []string) {
	type acc struct {
		hops              int
		w, wTrue, wAbsErr float64
	}
	nodes := make(map[string]*acc)
	var nodeAbs, nodeTrue, netAbs, netTrue float64
	truthIdx := make(map[string]int, len(tps))
	for i, c := range truthCanon {
		truthIdx[c] = i
	}
	for pi := range ps {
		ti, ok := truthIdx[canon[pi]]
		if !ok {
			continue
		}
		ip := &ps[pi]
		tp := &tps[ti]
		io, to := hopOrder(ip), hopOrder(tp)
		if len(io) != len(to) {
			continue
		}
		for k := range io {
			ih, th := &ip.Hops[io[k]], &tp.Hops[to[k]]
			he := HopError{Rank: ip.Rank, TruthRank: tp.Rank, Hop: ih.ID, From: ih.From, To: ih.To, Kind: th.Kind, Weight: tp.Count}
			w := float64(tp.Count)
			if th.NodeDelay != nil && ih.NodeDelay != nil {
				e := ih.NodeDelay.Mean - th.NodeDelay.Mean
				he.TrueNodeUS, he.NodeUS, he.NodeErrorUS = fp(th.NodeDelay.Mean), fp(ih.NodeDelay.Mean), fp(e)
				a := nodes[ih.From]
				if a == nil {
					a = &acc{}
					nodes[ih.From] = a
				}
				a.hops++
				a.w += w
				a.wTrue += w * math.Abs(th.NodeDelay.Mean)
				a.wAbsErr += w * math.Abs(e)
				nodeAbs += w * math.Abs(e)
				nodeTrue += w * math.Abs(th.NodeDelay.Mean)
				r.Delays.NodeMaxErrorUS = math.Max(r.Delays.NodeMaxErrorUS, math.Abs(e))
			}
			if th.NetDelay != nil && ih.NetDelay != nil {
				e := ih.NetDelay.Mean - th.NetDelay.Mean
				he.TrueNetUS, he.NetUS, he.NetErrorUS = fp(th.NetDelay.Mean), fp(ih.NetDelay.Mean), fp(e)
				netAbs += w * math.Abs(e)
				netTrue += w * math.Abs(th.NetDelay.Mean)
			}
			r.Hops = append(r.Hops, he)
		}
	}
	r.Delays.Hops = len(r.Hops)
	r.Delays.NodeRelError = frate(nodeAbs, nodeTrue)
	r.Delays.NetRelError = frate(netAbs, netTrue)
	for name, a := range nodes {
		r.Nodes = append(r.Nodes, NodeError{
			Node: name, Hops: a.hops,
			MeanTrueUS:     frate(a.wTrue, a.w),
			MeanAbsErrorUS: frate(a.wAbsErr, a.w),
			RelError:       frate(a.wAbsErr, a.wTrue),
		})
	}
	slices.SortFunc(r.Nodes, func(a, b NodeError) int { return strings.Compare(a.Node, b.Node) })
}

// scoreInstances fills Instances and Messages, or says why it cannot.
func (r *Report) scoreInstances(res *causal.Result, truth *gen.Truth, opt Options) error {
	listed, total := 0, 0
	for i := range res.Patterns {
		listed += len(res.Patterns[i].Instances)
		total += res.Patterns[i].Count
	}
	if listed < total {
		return fmt.Errorf("the result lists the messages of %d of its %d instances (run the engine with --instances -1)", listed, total)
	}
	toTruth := opt.TraceToTruth
	if toTruth == nil {
		if res.Trace.Messages != truth.Meta.Observed {
			return fmt.Errorf("%w: the result was inferred from %d messages, the truth's trace has %d", ErrMismatch, res.Trace.Messages, truth.Meta.Observed)
		}
		toTruth = truth.ByObserved()
	}
	t := newTally(truth, opt, toTruth)
	for pi := range res.Patterns {
		p := &res.Patterns[pi]
		for _, rec := range p.Instances {
			t.add(p, rec)
		}
	}
	if t.unknown > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d instance messages are not in the truth's trace", t.unknown))
	}
	r.Instances = t.instanceScore()
	r.Messages = t.messageScore()
	r.Matched = t.matched
	if opt.View == ViewMessages {
		r.CallTrees = callTreeInstances(res, truth, opt, toTruth)
	}
	return nil
}

// tally accumulates the inferred instances' verdicts against the truth,
// per true instance and per message (by truth index).
type tally struct {
	truth   *gen.Truth
	view    View
	toTruth []int32
	tc      *truthCalls // the call view's truth, for ViewCalls
	size    []int       // messages of each true instance
	is      *CountScore

	credit     []float64 // per true instance: Σp of the correct inferred instances
	matched    []bool    // per true instance: some inferred instance is correct
	msgOK      []float64 // per message: Σp of the correct instances that hold it
	msgWrong   []float64 // per message: Σp of the incorrect instances that hold it
	inInstance []bool    // per message: some inferred instance holds it
	seen       []bool    // per message: the trace the engine read holds it
	stamp      []int     // per message: the last instance (epoch) that held it
	epoch      int
	unknown    int // instance messages not in the truth's trace
}

func newTally(truth *gen.Truth, opt Options, toTruth []int32) *tally {
	n := len(truth.Trace.Messages)
	ninst := truth.NumInstances()
	t := &tally{
		truth: truth, view: opt.View, toTruth: toTruth,
		size:       make([]int, ninst),
		is:         &CountScore{Truth: ninst},
		credit:     make([]float64, ninst),
		matched:    make([]bool, ninst),
		msgOK:      make([]float64, n),
		msgWrong:   make([]float64, n),
		inInstance: make([]bool, n),
		stamp:      make([]int, n),
	}
	for _, k := range truth.Instance {
		t.size[k]++
	}
	t.seen = make([]bool, n)
	for _, i := range toTruth {
		if i >= 0 && int(i) < n {
			t.seen[i] = true
		}
	}
	if opt.View == ViewCalls {
		t.tc = newTruthCalls(truth)
	}
	return t
}

// add judges one inferred instance of pattern p and credits its verdict
// to its true instance and to its messages.
func (t *tally) add(p *causal.Pattern, rec causal.InstanceRecord) {
	t.epoch++
	pr := rec.Probability
	if !(pr >= 0) {
		pr = 0
	}
	t.is.Inferred++
	t.is.WeightedInferred += pr
	ids, ok := t.ids(rec.Messages, len(p.Hops))
	inst, ok := t.sameInstance(p, ids, ok)
	if ok && t.view == ViewCalls {
		ok = t.tc.sameCalls(p, ids)
	} else if ok {
		ok = t.sameParents(p, ids)
	}
	if ok {
		t.is.Correct++
		t.credit[inst] += pr
		t.matched[inst] = true
	}
	for _, id := range ids {
		if id < 0 {
			continue
		}
		t.inInstance[id] = true
		if ok {
			t.msgOK[id] += pr
		} else {
			t.msgWrong[id] += pr
		}
	}
}

// ids maps the messages of an instance of a pattern of hops hops to their
// truth indices (-1 for those not in the truth's trace, counted), and
// reports whether the instance can still be correct: one message a hop,
// all of them known.
func (t *tally) ids(msgs []int, hops int) ([]int32, bool) {
	ok := len(msgs) == hops && len(msgs) > 0
	ids := make([]int32, len(msgs))
	for k, m := range msgs {
		ids[k] = -1
		if m >= 0 && m < len(t.toTruth) {
			ids[k] = t.toTruth[m]
		}
		if ids[k] < 0 {
			t.unknown++
			ok = false
		}
	}
	return ids, ok
}

// sameInstance returns the true instance of the first message and
// whether the instance, if ok so far, holds exactly its messages, each
// once, with every hop's parent a hop of the instance.
func (t *tally) sameInstance(p *causal.Pattern, ids []int32, ok bool) (int32, bool) {
	if !ok {
		return -1, false
	}
	inst := t.truth.Instance[ids[0]]
	if len(ids) != t.size[inst] {
		return inst, false
	}
	for k, id := range ids {
		if t.truth.Instance[id] != inst || t.stamp[id] == t.epoch {
			return inst, false
		}
		t.stamp[id] = t.epoch
		if par := p.Hops[k].Parent; par != nil && (*par < 0 || *par >= len(ids)) {
			return inst, false
		}
	}
	return inst, true
}

// sameParents reports whether every message's parent in the instance is
// its true parent.
func (t *tally) sameParents(p *causal.Pattern, ids []int32) bool {
	for k := range ids {
		want := int32(-1)
		if par := p.Hops[k].Parent; par != nil {
			want = ids[*par]
		}
		if t.truth.Parent[ids[k]] != want {
			return false
		}
	}
	return true
}

// instanceScore returns the scores of the instances.
func (t *tally) instanceScore() *CountScore {
	is := t.is
	is.FalsePositives = is.Inferred - is.Correct
	lost := make([]bool, is.Truth)
	for i, ok := range t.seen {
		if !ok {
			lost[t.truth.Instance[i]] = true
		}
	}
	for _, l := range lost {
		if l {
			is.Lost++
		}
	}
	for k := range is.Truth {
		if !t.matched[k] {
			is.FalseNegatives++
		}
		is.WeightedFalseNegatives += 1 - math.Min(1, t.credit[k])
	}
	is.WeightedFalsePositives = is.WeightedInferred
	for k := range is.Truth {
		is.WeightedFalsePositives -= t.credit[k]
	}
	is.WeightedFalsePositives = math.Max(0, is.WeightedFalsePositives)
	is.FalsePositiveRate = rate(is.FalsePositives, is.Inferred)
	is.FalseNegativeRate = rate(is.FalseNegatives, is.Truth)
	is.WeightedFalsePositiveRate = frate(is.WeightedFalsePositives, is.WeightedInferred)
	is.WeightedFalseNegativeRate = frate(is.WeightedFalseNegatives, float64(is.Truth))
	return is
}

// messageScore returns the scores of the messages: a message is correct
// when a correct instance holds it.
func (t *tally) messageScore() *CountScore {
	n := len(t.msgOK)
	ms := &CountScore{Truth: n}
	var wInf float64
	for i := range n {
		if !t.seen[i] {
			ms.Lost++
		}
		if t.inInstance[i] {
			ms.Inferred++
		}
		if t.msgOK[i] > 0 {
			ms.Correct++
		} else {
			ms.FalseNegatives++
		}
		if t.msgWrong[i] > 0 && t.msgOK[i] == 0 {
			ms.FalsePositives++
		}
		ms.WeightedFalseNegatives += 1 - math.Min(1, t.msgOK[i])
		ms.WeightedFalsePositives += math.Min(1, t.msgWrong[i])
		wInf += math.Min(1, t.msgOK[i]+t.msgWrong[i])
	}
	ms.WeightedInferred = wInf
	ms.FalsePositiveRate = rate(ms.FalsePositives, ms.Inferred)
	ms.FalseNegativeRate = rate(ms.FalseNegatives, ms.Truth)
	ms.WeightedFalsePositiveRate = frate(ms.WeightedFalsePositives, wInf)
	ms.WeightedFalseNegativeRate = frate(ms.WeightedFalseNegatives, float64(n))
	return ms
}

// TruthPatterns returns the true patterns the report compared with, ranked
// by count.
func (r *Report) TruthPatterns() []causal.Pattern { return r.truthPats }
