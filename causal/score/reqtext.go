package score

import (
	"sort"

	"fmt"
	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
	"io"
	"text/tabwriter"
)

// RequestScores is what `wirepath score` prints for a testbed truth: the
// mapping of the trace onto the truth, then one report per engine.
type RequestScores struct {
	Version int              `json:"wirepath_request_score"`
	Truth   RequestTruthInfo `json:"truth"`
	Mapping MappingStats     `json:"mapping"`
	Engines []*RequestReport `json:"engines"`
}

// RequestScoreVersion is the version of the RequestScores JSON.
const RequestScoreVersion = 1

// RequestTruthInfo describes the truth scored against.
type RequestTruthInfo struct {
	Variant    string `json:"variant"`
	Tracing    string `json:"tracing"`
	InFlight   int    `json:"inflight"`
	Requests   int    `json:"requests"`
	Background int    `json:"background"`
	Messages   int    `json:"messages"`
}

func rpct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

// WriteRequestText writes s as text.
func WriteRequestText(w io.Writer, s *RequestScores) error {
	ew := &errWriter{w: w}
	t, mp := s.Truth, s.Mapping
	ew.printf("truth: %s, %s, %d in flight: %d requests, %d background calls, %d messages\n",
		t.Variant, t.Tracing, t.InFlight, t.Requests, t.Background, t.Messages)
	ew.printf("mapping: %d of %d trace messages matched (%d by ordinal, %d by stream, %d by time alignment); unmatched: %d name no true connection, %d surplus, %d outside the window\n",
		mp.Matched, mp.TraceMessages, mp.ByOrdinal, mp.ByStream, mp.ByAlignment, mp.TraceNoConn, mp.TraceSurplus, mp.TraceOutsideWindow)
	ew.printf("pairing: %d of the %d true calls in the trace are a CALL and its RETURN there\n", mp.PairsRight, mp.Calls)
	ew.printf("matched times differ by %.0f µs (median), %.0f µs (99th percentile), %.0f µs (most)\n",
		mp.TimeErrorP50US, mp.TimeErrorP99US, mp.TimeErrorMaxUS)
	ew.printf("true messages not in the trace: %d", mp.TruthUnmatched)
	for _, l := range sortedKeys(mp.TruthUnmatchedByLink) {
		ew.printf(" %s=%d", l, mp.TruthUnmatchedByLink[l])
	}
	ew.printf("\n")
	for _, r := range s.Engines {
		ew.printf("\nengine %s:", r.Engine)
		if !r.Instances {
			ew.printf(" the result lists no instances (run it with --instances -1): not scored\n")
			continue
		}
		q := r.Requests
		ew.printf(" %d of %d requests exactly right (%s); %d fully observed\n", q.Right, q.All, rpct(q.Share), q.Observed)
		tw := tabwriter.NewWriter(ew, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "link\tchild calls\tattributed\trequests\tall right\t\n")
		fmt.Fprintf(tw, "(root) client→web\t%d\t%s\t\t\t\n", r.Roots.All, rpct(r.Roots.Share))
		for _, l := range r.Links {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t\n", l.Link, l.Calls, rpct(l.Attributed), l.Requests, rpct(l.RequestShare))
		}
		fmt.Fprintf(tw, "(background, kept out)\t%d\t%s\t\t\t\n", r.Background.All, rpct(r.Background.Share))
		_ = tw.Flush()
		ew.printf("by kind:")
		for _, k := range r.Kinds {
			ew.printf(" %s %d/%d", k.Kind, k.Right, k.All)
		}
		ew.printf("\nmessage parents right: %d of %d (%s); observed messages in no instance: %d\n",
			r.Messages.Right, r.Messages.All, rpct(r.Messages.Share), r.Unplaced)
		tw = tabwriter.NewWriter(ew, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "node delay\tmessages\ttrue mean µs\tmean |error| µs\trelative\tmade roots\t\n")
		for _, n := range r.Nodes {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%s\t%d\t\n", n.Node, n.N, n.MeanTrueUS, n.MeanAbsErrorUS, rpct(n.RelError), n.NoParent)
		}
		_ = tw.Flush()
		if r.Calibration != nil {
			writeCalibration(ew, r.Calibration)
		}
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NewRequestScores maps t onto f and scores each result inferred from t.
func NewRequestScores(results []*causal.Result, t *trace.Trace, f *truth.File, opt MapOptions) *RequestScores {
	m := MapTrace(t, f, opt)
	s := &RequestScores{Version: RequestScoreVersion, Mapping: m.Stats, Truth: RequestTruthInfo{
		Variant: f.Meta.Variant, Tracing: f.Meta.Tracing, InFlight: f.Meta.InFlight, Messages: len(f.Messages)}}
	for _, q := range f.Requests {
		if q.Background {
			s.Truth.Background++
		} else {
			s.Truth.Requests++
		}
	}
	for _, res := range results {
		s.Engines = append(s.Engines, ScoreRequests(res, t, f, m))
	}
	return s
}

// writeCalibration writes the calibration figures and the reliability
// table of the joint links and the requests.
func writeCalibration(ew *errWriter, c *Calibration) {
	ew.printf("calibration (stated confidence against share right):\n")
	for _, x := range []struct {
		name string
		r    Reliability
	}{{"links", c.Links}, {"joint links", c.JointLinks}, {"requests", c.Requests}} {
		ew.printf("  %s: %d, stated %s, right %s; Brier %.3f, ECE %.3f, over-confidence %.3f\n",
			x.name, x.r.N, rpct(x.r.MeanConfidence), rpct(x.r.Share), x.r.Brier, x.r.ECE, x.r.Overconfidence)
	}
	tw := tabwriter.NewWriter(ew, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "confidence\tjoint links\tstated\tright\trequests\tstated\tright\t\n")
	for b := 0; b+1 < len(ReliabilityEdges); b++ {
		lo, hi := ReliabilityEdges[b], ReliabilityEdges[b+1]
		l, lok := binAt(c.JointLinks, lo)
		q, qok := binAt(c.Requests, lo)
		if !lok && !qok {
			continue
		}
		name := fmt.Sprintf("[%.2f, %.2f)", lo, hi)
		if b+2 == len(ReliabilityEdges) {
			name = "1"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, binCells(l, lok), binCells(q, qok))
	}
	_ = tw.Flush()
}

func binAt(r Reliability, lo float64) (ReliabilityBin, bool) {
	for _, b := range r.Bins {
		if b.Lo == lo {
			return b, true
		}
	}
	return ReliabilityBin{}, false
}

func binCells(b ReliabilityBin, ok bool) string {
	if !ok {
		return "\t\t"
	}
	return fmt.Sprintf("%d\t%s\t%s", b.N, rpct(b.MeanConfidence), rpct(b.Share))
}
