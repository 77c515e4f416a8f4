package whatif

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// Source says where an input of a prediction came from: measured in the
// captures, given by the user, estimated from other measurements, or
// missing (then the prediction says so and its uncertainty covers it).
type Source string

// The sources of an input.
const (
	Measured  Source = "measured"
	ViaHosts  Source = "measured (hosts' halves)"
	SameHost  Source = "same host"
	Given     Source = "given"
	Estimated Source = "estimated"
	Assumed   Source = "assumed"
	Missing   Source = "missing"
)

// Link is one link of the model, between two nodes as the patterns name
// them: its round trip γ and bandwidth ω now, where they come from and
// how uncertain they are, and what its connections showed.
type Link struct {
	A string `json:"a"`
	B string `json:"b"`
	// RTTUS is γ in µs; RTTSource where it comes from; RTTUncUS its
	// uncertainty (one standard deviation).
	RTTUS     float64 `json:"rtt_us"`
	RTTSource Source  `json:"rtt_source"`
	RTTUncUS  float64 `json:"rtt_unc_us"`
	// RTTP50US and RTTP90US are the median and 90th percentile of the
	// link's own round-trip samples at the capture point (0 unless
	// measured on the link itself): delayed acknowledgements and answers
	// stretch them, so γ is the minimum.
	RTTP50US float64 `json:"rtt_p50_us,omitempty"`
	RTTP90US float64 `json:"rtt_p90_us,omitempty"`
	// Position is where the capture point that measured γ is on the link:
	// near A, near B or between (empty when unknown).
	Position string `json:"position,omitempty"`
	// RTTNote says how it was measured (the capture point, the method)
	// or why it was not.
	RTTNote string `json:"rtt_note,omitempty"`
	// BandwidthBPS is ω in bits per second, BWSource where it comes
	// from.
	BandwidthBPS float64 `json:"bandwidth_bps"`
	BWSource     Source  `json:"bandwidth_source"`
	// MSS and Window are the link's segment size and the smaller of the
	// largest receive windows either end advertised (bytes; 0 unknown).
	MSS    int   `json:"mss"`
	Window int64 `json:"window"`
	// HandshakesPerCall is the connections whose opening the captures saw
	// per call on the link: the share of calls that wait for a handshake.
	HandshakesPerCall float64 `json:"handshakes_per_call"`
	// Local says both ends are one host; UDP that the captures showed
	// only UDP on it (no TCP segments, handshakes or slow start).
	Local bool `json:"local,omitempty"`
	UDP   bool `json:"udp,omitempty"`
	// Found says the captures showed the link (a trace.Link matched).
	Found bool `json:"found"`
}

// DefaultBandwidth is the bandwidth assumed for a link whose captures show
// none (no packet pairs) and that the user did not give: 1 Gbit/s.
const DefaultBandwidth = 1e9

// defaultMSS is the segment size assumed where no SYN showed one.
const defaultMSS = 1448

// buildLinks makes the model's links: one per pair of nodes the requests
// exchange messages between, with the captures' figures where a trace link
// matches it.
func (m *Model) buildLinks(tl []trace.Link, name func(string) string) {
	seen := map[[2]string]bool{}
	patNodes := map[string]bool{}
	for i := range m.Requests {
		for _, h := range m.Requests[i].Hops {
			patNodes[h.From], patNodes[h.To] = true, true
			k := linkKey(h.From, h.To)
			if !seen[k] {
				seen[k] = true
				l := &Link{A: h.From, B: h.To}
				m.links[k] = l
				m.Links = append(m.Links, l)
			}
		}
	}
	matched := map[[2]string][]*trace.Link{}
	for i := range tl {
		a, b := patternName(tl[i].A, name, patNodes), patternName(tl[i].B, name, patNodes)
		k := linkKey(a, b)
		if m.links[k] != nil {
			matched[k] = append(matched[k], &tl[i])
		}
	}
	for _, l := range m.Links {
		l.fill(matched[linkKey(l.A, l.B)])
		if !l.Found && len(tl) == 0 {
			l.RTTNote = "the result carries no link figures (its trace was not made by reconcile from captures, or before it measured round trips)"
		}
	}
	m.netDelayRTTs()
	m.estimateRTTs()
}

// netDelayRTTs estimates the round trip of links the captures did not
// measure from their messages' network delays (one way each, after clock
// correction: both ends must have been seen by different capture points),
// the mean over the requests' round trips, with half of it as uncertainty.
// A sum of zero is no measurement (one point saw both ends) and is left
// missing.
func (m *Model) netDelayRTTs() {
	type acc struct{ s, w float64 }
	sums := map[[2]string]*acc{}
	for i := range m.Requests {
		r := &m.Requests[i]
		for _, lp := range r.Profile {
			if !lp.RTTKnown || !(lp.RTTUS > 0) {
				continue
			}
			k := linkKey(lp.A, lp.B)
			if sums[k] == nil {
				sums[k] = &acc{}
			}
			sums[k].s += r.Weight * lp.RTTUS
			sums[k].w += r.Weight
		}
	}
	for _, l := range m.Links {
		a := sums[linkKey(l.A, l.B)]
		if l.RTTSource != Missing || a == nil || a.w == 0 {
			continue
		}
		l.RTTUS, l.RTTUncUS, l.RTTSource = a.s/a.w, a.s/a.w/2, Estimated
		l.RTTNote = "from the messages' one-way network delays (clock-corrected), not a passive round trip"
	}
}

// patternName is the name patterns give trace node name s: name's (the
// trace's namer: clients aggregated) when the trace is known; else s
// itself when a pattern uses it, or the aggregated client's name.
func patternName(s string, name func(string) string, patNodes map[string]bool) string {
	if name != nil {
		if n := name(s); n != "" {
			return n
		}
	}
	if patNodes[s] || !patNodes[causal.ClientName] {
		return s
	}
	return causal.ClientName
}

// fill sets l's inputs from the trace links that match it (several when
// clients aggregate into one node).
func (l *Link) fill(tl []*trace.Link) {
	l.BandwidthBPS, l.BWSource = DefaultBandwidth, Assumed
	l.MSS = defaultMSS
	if len(tl) == 0 {
		l.RTTSource, l.RTTNote = Missing, "the captures show no connection between these nodes"
		return
	}
	l.Found = true
	l.UDP = true
	var best *trace.Link
	var opened, calls int64
	var pairs []float64
	for _, t := range tl {
		opened += t.Opened
		calls += t.Calls
		l.Local = l.Local || t.SameHost
		l.UDP = l.UDP && t.Proto == "udp"
		if t.RTT.Known && (best == nil || t.RTT.Samples > best.RTT.Samples) {
			best = t
		}
		for _, r := range []trace.LinkRate{t.PairsAB, t.PairsBA} {
			if r.N > 0 {
				pairs = append(pairs, r.P50*8)
			}
		}
		if t.MSS > 0 {
			l.MSS = t.MSS
		}
		for _, w := range []int64{t.WindowA, t.WindowB} {
			if w > 0 && (l.Window == 0 || w < l.Window) {
				l.Window = w
			}
		}
	}
	if calls > 0 {
		l.HandshakesPerCall = min(1, float64(opened)/float64(calls))
	}
	if len(pairs) > 0 {
		slices.Sort(pairs)
		l.BandwidthBPS, l.BWSource = pairs[len(pairs)/2], Measured
	}
	switch {
	case l.Local:
		l.RTTUS, l.RTTSource, l.RTTNote = 0, SameHost, "both ends are one host"
	case best != nil:
		l.setMeasuredRTT(&best.RTT)
		l.Position = pointPosition(best)
	default:
		l.RTTSource, l.RTTNote = Missing, tl[0].RTT.Reason
	}
}

// setMeasuredRTT takes a trace link's round trip. Its minimum is an upper
// bound of the network's (acknowledgements and answers only come later)
// that tightens with samples: the uncertainty is a tenth of it with 20
// samples or more, a third with fewer or when only the hosts' halves on
// other connections gave it.
func (l *Link) setMeasuredRTT(r *trace.LinkRTT) {
	l.RTTUS = float64(r.MinNS) / 1e3
	l.RTTSource = Measured
	l.RTTUncUS = 0.1 * l.RTTUS
	if r.Samples < 20 {
		l.RTTUncUS = l.RTTUS / 3
	}
	if r.Method == "hosts" {
		l.RTTSource = ViaHosts
		l.RTTUncUS = l.RTTUS / 3
	}
	l.RTTP50US, l.RTTP90US = float64(r.P50NS)/1e3, float64(r.P90NS)/1e3
	l.RTTNote = fmt.Sprintf("min of %d samples at %s", r.Samples, r.Point)
}

// pointPosition is the position on link t of the capture point that
// measured its round trip: "near A", "near B" or "between" (the names of
// its ends are in the note), or "" when the point listed none.
func pointPosition(t *trace.Link) string {
	for _, p := range t.Points {
		if !strings.HasPrefix(t.RTT.Point, p.Point) && !strings.HasPrefix(p.Point, t.RTT.Point) {
			continue
		}
		switch p.Position {
		case "A":
			return "near " + t.A
		case "B":
			return "near " + t.B
		case "between":
			return "between"
		}
	}
	return ""
}

// estimateRTTs gives links whose round trip was not measured the median of
// the measured ones that share a node with them (else of all measured
// ones), marked estimated, with the measured ones' spread as uncertainty.
func (m *Model) estimateRTTs() {
	var all []float64
	for _, l := range m.Links {
		if l.RTTSource == Measured || l.RTTSource == ViaHosts {
			all = append(all, l.RTTUS)
		}
	}
	for _, l := range m.Links {
		if l.RTTSource != Missing {
			continue
		}
		var near []float64
		for _, o := range m.Links {
			if (o.RTTSource == Measured || o.RTTSource == ViaHosts) && (o.A == l.A || o.A == l.B || o.B == l.A || o.B == l.B) {
				near = append(near, o.RTTUS)
			}
		}
		from := "the links that share a node with it"
		if len(near) == 0 {
			near, from = all, "every measured link"
		}
		if len(near) == 0 {
			continue
		}
		slices.Sort(near)
		l.RTTUS = near[len(near)/2]
		l.RTTUncUS = max(l.RTTUS, near[len(near)-1]-near[0])
		l.RTTSource = Estimated
		l.RTTNote = fmt.Sprintf("not measured (%s); the median of %s", strings.TrimSuffix(l.RTTNote, "."), from)
	}
}

// Name is the link's name in the signature grammar, "A->B".
func (l *Link) Name() string { return causal.QuoteName(l.A) + "->" + causal.QuoteName(l.B) }
