package whatif

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Prediction is the predicted mean latency of one group of requests (a
// request type or a pattern) after a scenario, with its inputs and an
// uncertainty (one standard deviation) from their measured spread.
type Prediction struct {
	// Group is "type" or "pattern"; Key the type's label or the pattern's
	// signature, Pattern its rank (0 for a type).
	Group   string  `json:"group"`
	Key     string  `json:"key"`
	Pattern int     `json:"pattern,omitempty"`
	N       float64 `json:"requests"`
	// LatencyUS is the measured mean latency, LatencySEUS its standard
	// error.
	LatencyUS   float64 `json:"latency_us"`
	LatencySEUS float64 `json:"latency_se_us"`
	// PredictedUS replays every request's timeline with the changes
	// (parallel branches off the critical path do not add up);
	// ModelUS adds the paper's sum over links of κ·Δγ + Δ(ν/ω) and the
	// queueing changes to the measured latency.
	PredictedUS float64 `json:"predicted_us"`
	ModelUS     float64 `json:"model_us"`
	// UncertaintyUS combines the spread of the requests' predictions (the
	// standard error of their mean) with that of the inputs the change
	// depends on.
	UncertaintyUS float64 `json:"uncertainty_us"`
	// Saturated says a node the group visits would be at or beyond its
	// capacity: the latency grows without bound, and the predicted
	// figures are 0.
	Saturated bool `json:"saturated,omitempty"`
	// Links and Nodes are the inputs, for the links and nodes the
	// scenario changes that the group uses.
	Links []LinkInput `json:"links,omitempty"`
	Nodes []NodeInput `json:"nodes,omitempty"`
	// Notes say which inputs were missing, estimated or assumed.
	Notes []string `json:"notes,omitempty"`
}

// LinkInput is what a prediction used of one link: per request of the
// group, the blocking round trips κ (with the handshakes of connections
// opened within the request, and slow-start rounds), the bytes ν both
// ways with headers, the round trip γ and bandwidth ω before and after.
type LinkInput struct {
	Link         string  `json:"link"`
	Kappa        float64 `json:"kappa"`
	KappaSD      float64 `json:"kappa_sd"`
	Handshakes   float64 `json:"handshakes"`
	SlowStart    float64 `json:"slow_start_rounds"`
	Bytes        float64 `json:"bytes"`
	WireBytes    float64 `json:"wire_bytes"`
	RTTUS        float64 `json:"rtt_us"`
	RTTUncUS     float64 `json:"rtt_unc_us"`
	RTTSource    Source  `json:"rtt_source"`
	NewRTTUS     float64 `json:"new_rtt_us"`
	BandwidthBPS float64 `json:"bandwidth_bps"`
	BWSource     Source  `json:"bandwidth_source"`
	// NewBWBPS is the new bandwidth, 0 when NewLocal: the link became
	// local (co-location), no transmission time.
	NewBWBPS float64 `json:"new_bandwidth_bps"`
	NewLocal bool    `json:"new_local,omitempty"`
}

// NodeInput is what a prediction used of one node: its utilisation and
// mean service time before and after, and its M/G/1 wait before and
// after.
type NodeInput struct {
	Node           string  `json:"node"`
	Utilisation    float64 `json:"utilisation"`
	UtilUnc        float64 `json:"utilisation_unc"`
	NewUtilisation float64 `json:"new_utilisation"`
	ServiceUS      float64 `json:"service_us"`
	NewServiceUS   float64 `json:"new_service_us"`
	C2             float64 `json:"c2"`
	WaitUS         float64 `json:"wait_us"`
	// NewWaitUS is the wait after, 0 when Saturated.
	NewWaitUS float64 `json:"new_wait_us"`
	Saturated bool    `json:"saturated,omitempty"`
	Source    Source  `json:"source"`
	// Host is the placement's host the node shares: then the
	// utilisation is the host's, the service its core time per visit,
	// the wait its wait for a core, and DelayUS its time off the cores
	// per visit, which the load does not change.
	Host    string  `json:"host,omitempty"`
	DelayUS float64 `json:"delay_us,omitempty"`
}

// HostInput is what a prediction used of one host of the placement: its
// cores, visits in progress, utilisation (and where it came from), the
// share of its nodes' work that is core time, its stretch (response per
// unit of core time) and core time per request, before and after.
type HostInput struct {
	Host           string  `json:"host"`
	Cores          int     `json:"cores"`
	InProgress     float64 `json:"in_progress"`
	Utilisation    float64 `json:"utilisation"`
	UtilUnc        float64 `json:"utilisation_unc"`
	UtilSource     Source  `json:"utilisation_source"`
	NewUtilisation float64 `json:"new_utilisation"`
	CoreShare      float64 `json:"core_share"`
	Stretch        float64 `json:"stretch"`
	// NewStretch is 0 when Saturated.
	NewStretch float64 `json:"new_stretch"`
	DemandUS   float64 `json:"demand_us"`
	Saturated  bool    `json:"saturated,omitempty"`
	Note       string  `json:"note,omitempty"`
	// CPU says where a CPU profile's busy share came from: the line
	// fitted (a, b, the windows and their rates, other processes) or its
	// mean, estimated.
	CPU string `json:"cpu,omitempty"`
}

// Report is the predictions of one scenario.
type Report struct {
	Scenario string       `json:"scenario"`
	Changes  []string     `json:"changes"`
	Types    []Prediction `json:"types"`
	Patterns []Prediction `json:"patterns"`
	// ThroughputRPS is the request rate in the capture, and
	// SaturationRPS the rate at which the busiest node (Bottleneck)
	// would be saturated after the changes, with its uncertainty;
	// SaturationModel names the model that made it and its inputs.
	ThroughputRPS   float64 `json:"throughput_rps"`
	SaturationRPS   float64 `json:"saturation_rps"`
	SaturationUnc   float64 `json:"saturation_unc_rps"`
	Bottleneck      string  `json:"bottleneck,omitempty"`
	SaturationModel string  `json:"saturation_model,omitempty"`
	PerRequest      bool    `json:"per_request"`
	// Hosts are the placement's hosts (none: every node is a dedicated
	// server).
	Hosts []HostInput `json:"hosts,omitempty"`
	Notes []string    `json:"notes,omitempty"`
	// Requests are the predictions request by request (Model.PerRequest),
	// in the model's order.
	Requests []RequestPrediction `json:"-"`
}

// RequestPrediction is one request's predicted latency.
type RequestPrediction struct {
	Root      int     `json:"root"`
	Weight    float64 `json:"weight"`
	Pattern   int     `json:"pattern"`
	Type      string  `json:"type"`
	LatencyUS float64 `json:"latency_us"`
	// PredictedUS and ModelUS are 0 when Saturated: a node the request
	// visits would be at or beyond its capacity.
	PredictedUS float64 `json:"predicted_us"`
	ModelUS     float64 `json:"model_us"`
	Saturated   bool    `json:"saturated,omitempty"`
}

// ErrUnknownNode is returned for a change that names a node or link no
// request uses.
var ErrUnknownNode = errors.New("no request uses it")

// Predict predicts every request type's and pattern's mean latency after
// scenario s.
func (m *Model) Predict(s Scenario) (*Report, error) {
	st, err := m.resolve(s)
	if err != nil {
		return nil, err
	}
	rep := &Report{Scenario: s.Name, ThroughputRPS: m.RateRPS, PerRequest: m.PerRequest}
	for _, c := range s.Changes {
		rep.Changes = append(rep.Changes, c.String())
	}
	rep.SaturationRPS, rep.SaturationUnc, rep.Bottleneck, rep.SaturationModel = st.saturation(m)
	rep.Hosts = st.hostInputs()
	deltas := st.requestDeltas(m)
	unc := st.inputUncertainty(m)
	rep.Types = m.groups("type", func(r *Request) string { return r.Type }, st, deltas, unc)
	rep.Patterns = m.groups("pattern", func(r *Request) string { return fmt.Sprintf("#%d", r.Pattern) }, st, deltas, unc)
	rep.Notes = append(slices.Clone(m.Notes), st.notes...)
	for i := range m.Requests {
		r := &m.Requests[i]
		rp := RequestPrediction{Root: r.Root, Weight: r.Weight, Pattern: r.Pattern, Type: r.Type, LatencyUS: r.LatencyUS, Saturated: deltas[i].saturated}
		if !rp.Saturated {
			rp.PredictedUS, rp.ModelUS = r.LatencyUS+deltas[i].replay, r.LatencyUS+deltas[i].model
		}
		rep.Requests = append(rep.Requests, rp)
	}
	return rep, nil
}

// groups makes a prediction per group of requests.
func (m *Model) groups(kind string, key func(*Request) string, st *state, deltas []delta, unc [][]float64) []Prediction {
	idx := map[string]int{}
	var out []Prediction
	var members [][]int
	for i := range m.Requests {
		r := &m.Requests[i]
		k := key(r)
		gi, ok := idx[k]
		if !ok {
			gi = len(out)
			idx[k] = gi
			p := Prediction{Group: kind, Key: r.Type}
			if kind == "pattern" {
				p.Key, p.Pattern = r.Signature, r.Pattern
			}
			out = append(out, p)
			members = append(members, nil)
		}
		members[gi] = append(members[gi], i)
	}
	for gi := range out {
		st.fill(m, &out[gi], members[gi], deltas, unc)
	}
	slices.SortStableFunc(out, func(a, b Prediction) int {
		switch {
		case a.N > b.N:
			return -1
		case a.N < b.N:
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// fill computes the prediction of the requests ids.
func (st *state) fill(m *Model, p *Prediction, ids []int, deltas []delta, unc [][]float64) {
	var w, lat, lat2, pred, pred2, model float64
	for _, i := range ids {
		r := &m.Requests[i]
		d := deltas[i]
		w += r.Weight
		lat += r.Weight * r.LatencyUS
		lat2 += r.Weight * r.LatencyUS * r.LatencyUS
		v := r.LatencyUS + d.replay
		pred += r.Weight * v
		pred2 += r.Weight * v * v
		model += r.Weight * (r.LatencyUS + d.model)
		p.Saturated = p.Saturated || d.saturated
	}
	p.N = w
	p.LatencyUS, p.PredictedUS, p.ModelUS = lat/w, pred/w, model/w
	p.LatencySEUS = stderr(lat, lat2, w, len(ids))
	se := stderr(pred, pred2, w, len(ids))
	// Inputs: the group's mean change under each input's perturbation.
	in := 0.0
	for _, u := range unc {
		var s float64
		for _, i := range ids {
			s += m.Requests[i].Weight * u[i]
		}
		in += (s / w) * (s / w)
	}
	p.UncertaintyUS = math.Sqrt(se*se + in)
	if p.Saturated {
		p.PredictedUS, p.ModelUS, p.UncertaintyUS = 0, 0, 0
	}
	p.Links, p.Nodes, p.Notes = st.inputs(m, ids)
}

// stderr is the standard error of a weighted mean from sums of weight w
// of n samples (0 for fewer than two).
func stderr(s1, s2, w float64, n int) float64 {
	if n < 2 || w <= 0 {
		return 0
	}
	mean := s1 / w
	v := max(s2/w-mean*mean, 0) * float64(n) / float64(n-1)
	return math.Sqrt(v / float64(n))
}

// hostInputs lists every host's inputs before and after.
func (st *state) hostInputs() []HostInput {
	var out []HostInput
	for _, name := range sortedKeys(st.hosts) {
		hs := st.hosts[name]
		h := hs.h
		hi := HostInput{Host: name, Cores: h.Cores, InProgress: h.InProgress, Utilisation: hs.u, UtilUnc: h.UtilUnc, UtilSource: h.UtilSource,
			NewUtilisation: hs.newU, CoreShare: hs.f, Stretch: hs.s, NewStretch: hs.newS, DemandUS: h.DemandUS, Note: h.Note}
		if h.CPU != nil {
			hi.CPU = h.cpuNote()
		}
		if math.IsInf(hi.NewStretch, 1) {
			hi.NewStretch, hi.Saturated = 0, true
		}
		out = append(out, hi)
	}
	return out
}
