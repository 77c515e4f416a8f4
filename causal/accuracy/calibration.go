package accuracy

import (
	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/trace"
)

// Calibrate compares the confidences res states (its requests: the
// assembly engine's) with the truth of the generated trace it was
// inferred from, as `wirepath score` does with a testbed truth
// (score.Calibration): per link (a call the result gave a parent call),
// per link decided by the joint assignment, and per request (the
// confidence of the result's request holding the root call of each
// instance that is no background work, right when TraceWeaver's metric
// counts it right: ExactRequests). ok is false when res lists no
// requests.
func Calibrate(out *gen.Output, res *causal.Result) (c score.Calibration, ok bool) {
	if len(res.Requests) == 0 {
		return c, false
	}
	tr := out.Truth
	t := out.Trace
	parents := score.TruthCallParents(tr)
	byObs := tr.ByObserved()
	var links, joint score.ReliabilityCounter
	// reqConf is, per trace message, the confidence of the result's
	// request that holds it
	reqConf := make([]float64, len(t.Messages))
	for i := range reqConf {
		reqConf[i] = -1
	}
	for qi := range res.Requests {
		q := &res.Requests[qi]
		for _, m := range q.Messages {
			if m.Msg < 0 || m.Msg >= len(t.Messages) {
				continue
			}
			reqConf[m.Msg] = max(reqConf[m.Msg], q.Confidence)
			if m.Kind != trace.KindCall.String() || m.CallParent < 0 || m.CallParent >= len(q.Messages) {
				continue
			}
			ti := byObs[m.Msg]
			if ti < 0 {
				continue
			}
			want := int32(-1)
			if p := parents[ti]; p >= 0 {
				want = tr.Observed[p]
			}
			right := want >= 0 && int32(q.Messages[m.CallParent].Msg) == want
			links.Add(m.Confidence, right)
			if m.Evidence == "joint-timing" || m.Evidence == "tokens" {
				joint.Add(m.Confidence, right)
			}
		}
	}
	reqs := requestReliability(out, res, reqConf, parents)
	return score.Calibration{Links: links.Reliability(), JointLinks: joint.Reliability(), Requests: reqs}, true
}

// requestReliability is Calibrate's figure for requests: per instance of
// the truth that is no background work, the confidence of the result's
// request holding its root call (reqConf, by trace message) against
// TraceWeaver's verdict.
func requestReliability(out *gen.Output, res *causal.Result, reqConf []float64, parents []int32) score.Reliability {
	tr := out.Truth
	var reqs score.ReliabilityCounter
	a, _ := EngineAssignment(res, out.Trace)
	_, wrong := exactVerdicts(out, a)
	bg := map[int]bool{}
	for i, name := range tr.Meta.Tracelets {
		for _, b := range tr.Meta.Background {
			bg[i] = bg[i] || b == name
		}
	}
	seen := make([]bool, tr.NumInstances())
	for i := range tr.Trace.Messages {
		inst := tr.Instance[i]
		if seen[inst] || parents[i] >= 0 || tr.Trace.Messages[i].Kind == trace.KindReturn || bg[int(tr.Tracelet[i])] {
			continue
		}
		seen[inst] = true
		if o := tr.Observed[i]; o >= 0 && int(o) < len(reqConf) && reqConf[o] >= 0 {
			reqs.Add(reqConf[o], !wrong[inst])
		}
	}
	return reqs.Reliability()
}
