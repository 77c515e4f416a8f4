package whatif

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/report"
	wpwhatif "github.com/wirepath/wirepath/whatif"
)

// inputsJSON is the model's inputs as --format json prints them without changes.
type inputsJSON struct {
	Requests   float64          `json:"requests"`
	PerRequest bool             `json:"per_request"`
	SpanS      float64          `json:"span_s"`
	RateRPS    float64          `json:"rate_rps"`
	Links      []*wpwhatif.Link `json:"links"`
	Nodes      []*wpwhatif.Node `json:"nodes"`
	Hosts      []*wpwhatif.Host `json:"hosts,omitempty"`
	Patterns   []profileJSON    `json:"patterns"`
	Notes      []string         `json:"notes,omitempty"`
}

// profileJSON is one pattern's link profiles.
type profileJSON struct {
	Rank      int                    `json:"rank"`
	Signature string                 `json:"signature"`
	Links     []wpwhatif.LinkProfile `json:"links"`
}

// writeInputs prints the model's inputs: links, nodes, and per pattern the
// link profile of one request.
func writeInputs(w io.Writer, opts *Options, res *causal.Result, m *wpwhatif.Model) error {
	pats := res.Patterns
	if opts.Top > 0 && opts.Top < len(pats) {
		pats = pats[:opts.Top]
	}
	in := inputsJSON{PerRequest: m.PerRequest, SpanS: m.SpanS, RateRPS: m.RateRPS, Links: m.Links, Nodes: m.Nodes, Hosts: m.Hosts, Notes: m.Notes}
	for i := range m.Requests {
		in.Requests += m.Requests[i].Weight
	}
	for i := range pats {
		ls := wpwhatif.LinkProfiles(&pats[i])
		for j := range ls {
			modelRTT(&ls[j], m.Link(ls[j].A, ls[j].B))
		}
		in.Patterns = append(in.Patterns, profileJSON{Rank: pats[i].Rank, Signature: pats[i].Signature, Links: ls})
	}
	if opts.JSON {
		return cmdutil.WriteJSON(w, in)
	}
	mode := "from the patterns' means (give --trace and a result with --instances -1 to work request by request)"
	if m.PerRequest {
		mode = "request by request"
	}
	fmt.Fprintf(w, "%.0f requests in %.2f s (%.1f per second), %s\n", in.Requests, m.SpanS, m.RateRPS, mode)
	writeLinks(w, m.Links)
	writeNodes(w, m.Nodes)
	writeHosts(w, m.Hosts)
	for _, p := range in.Patterns {
		fmt.Fprintf(w, "\n#%d  %s\n", p.Rank, p.Signature)
		lw := len("link")
		for _, l := range p.Links {
			lw = max(lw, utf8.RuneCountInString(l.Link))
		}
		fmt.Fprintf(w, "    %s  %8s  %s  %s  %s\n", rpad("link", lw), "messages", lpad("bytes ν", 10), lpad("round trips κ", 13), lpad("RTT γ", 10))
		for _, l := range p.Links {
			rtt := "-"
			if ml := m.Link(l.A, l.B); ml != nil && ml.RTTSource != wpwhatif.Missing {
				rtt = report.FormatUS(ml.RTTUS)
			}
			fmt.Fprintf(w, "    %s  %8d  %10.0f  %13d  %s\n", rpad(l.Link, lw), l.Messages, l.Bytes, l.RoundTrips, lpad(rtt, 10))
		}
	}
	writeNotes(w, m.Notes)
	return nil
}

// modelRTT gives a pattern's link profile the model's round trip for the
// link (the captures' passive one where measured, else an estimate), and
// marks it not known where the model has none: a link whose far end no
// capture point saw never reports a measured 0.
func modelRTT(lp *wpwhatif.LinkProfile, ml *wpwhatif.Link) {
	if ml == nil {
		return
	}
	if ml.RTTSource == wpwhatif.Missing {
		lp.RTTUS, lp.RTTKnown, lp.RTTSource = 0, false, wpwhatif.Missing
		return
	}
	lp.RTTUS, lp.RTTKnown, lp.RTTSource = ml.RTTUS, true, ml.RTTSource
}

// writeLinks prints every link's round trip and bandwidth.
func writeLinks(w io.Writer, links []*wpwhatif.Link) {
	fmt.Fprintln(w, "\nlinks (γ round trip, ω bandwidth):")
	lw := 0
	for _, l := range links {
		lw = max(lw, utf8.RuneCountInString(l.Name()))
	}
	for _, l := range links {
		g := "γ unknown"
		if l.RTTSource != wpwhatif.Missing {
			g = "γ " + report.FormatUS(l.RTTUS)
			if l.RTTUncUS > 0 {
				g += " ±" + report.FormatUS(l.RTTUncUS)
			}
		}
		fmt.Fprintf(w, "  %s  %-22s %-26s ω %s (%s)", rpad(l.Name(), lw), g, "("+string(l.RTTSource)+")", wpwhatif.FormatBandwidth(l.BandwidthBPS), l.BWSource)
		if l.HandshakesPerCall > 0 {
			fmt.Fprintf(w, ", %.2f handshakes per call", l.HandshakesPerCall)
		}
		if l.RTTP50US > 0 {
			fmt.Fprintf(w, "; samples p50 %s p90 %s", report.FormatUS(l.RTTP50US), report.FormatUS(l.RTTP90US))
		}
		if l.Position != "" {
			fmt.Fprintf(w, ", point %s", l.Position)
		}
		if l.RTTNote != "" {
			fmt.Fprintf(w, "; %s", l.RTTNote)
		}
		fmt.Fprintln(w)
	}
}

// writeNodes prints every node's utilisation and service time.
func writeNodes(w io.Writer, nodes []*wpwhatif.Node) {
	fmt.Fprintln(w, "\nnodes (ρ utilisation, E[S] service per request, C² of the work):")
	placed := false
	for _, n := range nodes {
		placed = placed || n.Host != ""
	}
	if !placed {
		fmt.Fprintln(w, "  (no placement given: each node is taken as its own dedicated server; --host-cores or --placement to share a host's cores)")
	}
	nw := 0
	for _, n := range nodes {
		nw = max(nw, utf8.RuneCountInString(n.Name))
	}
	for _, n := range nodes {
		if n.Source == wpwhatif.Missing {
			fmt.Fprintf(w, "  %s  not measured: %s\n", rpad(n.Name, nw), n.Note)
			continue
		}
		fmt.Fprintf(w, "  %s  ρ %.3f ±%.3f  E[S] %s  C² %.2f  work now %s per request (%s)\n", rpad(n.Name, nw),
			n.Utilisation, n.UtilUnc, report.FormatUS(n.ServiceUS), n.C2, report.FormatUS(n.WorkUS), n.Note)
		if n.Host != "" {
			fmt.Fprintf(w, "  %s  on host %s: core time %s and %s off the cores per visit\n", rpad("", nw), n.Host,
				report.FormatUS(n.DemandUS), report.FormatUS(n.DelayUS))
		}
	}
}

// writeHosts prints every host of the placement.
func writeHosts(w io.Writer, hosts []*wpwhatif.Host) {
	if len(hosts) == 0 {
		return
	}
	fmt.Fprintln(w, "\nhosts (cores shared by their nodes, a processor-sharing M/G/c server):")
	for _, h := range hosts {
		fmt.Fprintf(w, "  %s  %d cores, %s: %.2f ±%.2f visits in progress, U %.3f ±%.3f (%s), %.0f %% of the work core time, stretch %.3f, core time %s per request; %s\n",
			h.Name, h.Cores, strings.Join(h.Nodes, ","), h.InProgress, h.InProgressUnc, h.Utilisation, h.UtilUnc, h.UtilSource,
			100*h.CoreShare, h.Stretch, report.FormatUS(h.DemandUS), h.Note)
	}
}

func writeNotes(w io.Writer, notes []string) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nnotes:")
	for _, n := range notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
}

// predict prints the predictions of every scenario.
func predict(w io.Writer, opts *Options, file string, m *wpwhatif.Model, scenarios []wpwhatif.Scenario) error {
	var reps []*wpwhatif.Report
	for _, s := range scenarios {
		rep, err := m.Predict(s)
		if errors.Is(err, wpwhatif.ErrUnknownNode) {
			return fmt.Errorf("%w: %v (run 'wirepath whatif %s' to list the links)", ErrNoLink, err, file)
		}
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	if opts.JSON {
		if !opts.Requests {
			return cmdutil.WriteJSON(w, reps)
		}
		type withRequests struct {
			*wpwhatif.Report
			Requests []wpwhatif.RequestPrediction `json:"requests"`
		}
		out := make([]withRequests, len(reps))
		for i, r := range reps {
			out[i] = withRequests{r, r.Requests}
		}
		return cmdutil.WriteJSON(w, out)
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeReport(w, opts, rep)
	}
	return nil
}

// writeReport prints one scenario's predictions.
func writeReport(w io.Writer, opts *Options, rep *wpwhatif.Report) {
	fmt.Fprintf(w, "scenario %s: %s\n", rep.Scenario, strings.Join(rep.Changes, "; "))
	if rep.SaturationRPS > 0 {
		fmt.Fprintf(w, "throughput now %.1f requests/s; saturation after the changes %.0f ±%.0f requests/s (%s)\n",
			rep.ThroughputRPS, rep.SaturationRPS, rep.SaturationUnc, rep.Bottleneck)
		if rep.SaturationModel != "" {
			fmt.Fprintf(w, "  saturation from %s\n", rep.SaturationModel)
		}
	}
	for _, h := range rep.Hosts {
		st := fmt.Sprintf("%.3f", h.NewStretch)
		if h.Saturated {
			st = "saturated"
		}
		fmt.Fprintf(w, "host %s: %d cores, U %.3f ±%.3f (%s) → %.3f, stretch %.3f → %s, %.0f %% of the work core time, core time %s per request\n",
			h.Host, h.Cores, h.Utilisation, h.UtilUnc, h.UtilSource, h.NewUtilisation, h.Stretch, st, 100*h.CoreShare, report.FormatUS(h.DemandUS))
		if h.CPU != "" {
			fmt.Fprintf(w, "  %s\n", h.CPU)
		}
	}
	if opts.By != "pattern" && labelled(rep.Types) {
		writeGroup(w, "request type", top(rep.Types, opts.Top))
	}
	if opts.By != "type" {
		writeGroup(w, "pattern", top(rep.Patterns, opts.Top))
	}
	writeNotes(w, rep.Notes)
}

// labelled reports whether the requests have types other than their
// patterns' signatures (the trace has labels).
func labelled(types []wpwhatif.Prediction) bool {
	for _, p := range types {
		if !strings.Contains(p.Key, "->") {
			return true
		}
	}
	return false
}

func top(ps []wpwhatif.Prediction, n int) []wpwhatif.Prediction {
	if n > 0 && n < len(ps) {
		return ps[:n]
	}
	return ps
}

// writeGroup prints one table of predictions, each followed by its inputs.
func writeGroup(w io.Writer, title string, ps []wpwhatif.Prediction) {
	fmt.Fprintf(w, "\n%-40s %8s  %-20s %-22s %s\n", title, "requests", "measured", "predicted", "model (Σ κ·Δγ + Δν/ω)")
	for _, p := range ps {
		key := p.Key
		if p.Pattern > 0 {
			key = fmt.Sprintf("#%d %s", p.Pattern, p.Key)
		}
		if n := utf8.RuneCountInString(key); n > 40 {
			key = string([]rune(key)[:39]) + "…"
		}
		pred, model := withUnc(p.PredictedUS, p.UncertaintyUS), report.FormatUS(p.ModelUS)
		if p.Saturated {
			pred, model = "saturated", "saturated"
		}
		fmt.Fprintf(w, "%s %8.0f  %-20s %-22s %s\n", rpad(key, 40), p.N, withUnc(p.LatencyUS, p.LatencySEUS), pred, model)
		for _, l := range p.Links {
			bw := wpwhatif.FormatBandwidth(l.NewBWBPS)
			if l.NewLocal {
				bw = "local"
			}
			fmt.Fprintf(w, "    link %s: κ %.2f (sd %.2f) + %.2f handshakes + %.1f slow-start rounds, ν %.0f B (%.0f on the wire); γ %s (%s) → %s; ω %s (%s) → %s\n",
				l.Link, l.Kappa, l.KappaSD, l.Handshakes, l.SlowStart, l.Bytes, l.WireBytes, report.FormatUS(l.RTTUS), l.RTTSource,
				report.FormatUS(l.NewRTTUS), wpwhatif.FormatBandwidth(l.BandwidthBPS), l.BWSource, bw)
		}
		for _, n := range p.Nodes {
			wait := report.FormatUS(n.NewWaitUS)
			if n.Saturated {
				wait = "saturated"
			}
			if n.Host != "" {
				fmt.Fprintf(w, "    node %s on host %s: U %.3f → %.3f, core time %s → %s, wait for a core %s → %s, off the cores %s (%s)\n",
					n.Node, n.Host, n.Utilisation, n.NewUtilisation, report.FormatUS(n.ServiceUS), report.FormatUS(n.NewServiceUS),
					report.FormatUS(n.WaitUS), wait, report.FormatUS(n.DelayUS), n.Source)
				continue
			}
			fmt.Fprintf(w, "    node %s: ρ %.3f → %.3f, E[S] %s → %s, C² %.2f, wait %s → %s (%s)\n",
				n.Node, n.Utilisation, n.NewUtilisation, report.FormatUS(n.ServiceUS), report.FormatUS(n.NewServiceUS), n.C2,
				report.FormatUS(n.WaitUS), wait, n.Source)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "    ! %s\n", n)
		}
	}
}

func withUnc(v, u float64) string {
	if u > 0 {
		return report.FormatUS(v) + " ±" + report.FormatUS(u)
	}
	return report.FormatUS(v)
}

// lpad right-aligns s in n columns, counting runes (µ, ν, κ, γ are one).
func lpad(s string, n int) string {
	return strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) + s
}

// rpad left-aligns s in n columns, counting runes.
func rpad(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}
