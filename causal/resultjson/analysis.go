package resultjson

import "github.com/wirepath/wirepath/causal"

// AnalysisVersion is the version of the Analysis envelope. It changes only
// with a note in docs/formats.md.
const AnalysisVersion = 1

// Analysis is the JSON document of one run of several engines on one trace
// (`wirepath analyze --engine all --format json`): the results in the
// order the engines ran, each a complete result (the Result contract) with
// the same trace summary. The member "wirepath_analysis" (the envelope's
// version) tells it from a single result, which has "version".
type Analysis struct {
	Analysis int              `json:"wirepath_analysis"`
	Engines  []string         `json:"engines"`
	Results  []*causal.Result `json:"results"`
}

// NewAnalysis wraps results in the envelope. A nil pattern list is
// written as [], so every result has the documented type.
func NewAnalysis(rs []*causal.Result) *Analysis {
	a := &Analysis{Analysis: AnalysisVersion, Engines: []string{}, Results: []*causal.Result{}}
	for _, r := range rs {
		a.Engines = append(a.Engines, r.Engine)
		a.Results = append(a.Results, withPatterns(r))
	}
	return a
}

// withPatterns returns r, or a copy of it with an empty pattern list when
// its list is nil.
func withPatterns(r *causal.Result) *causal.Result {
	if r.Patterns != nil {
		return r
	}
	cp := *r
	cp.Patterns = []causal.Pattern{}
	return &cp
}
