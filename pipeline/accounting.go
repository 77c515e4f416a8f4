package pipeline

import "github.com/wirepath/wirepath/trace"

// NATCounts returns the NAT stage's counters from the accounting, in
// their order there; nil when the run learned no NAT (NoNAT).
func (r *Result) NATCounts() []trace.Count {
	if r.NAT == nil {
		return nil
	}
	var out []trace.Count
	for _, c := range r.Accounting {
		if c.Stage == trace.StageNAT {
			out = append(out, c)
		}
	}
	return out
}
