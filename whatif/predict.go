package whatif

import (
	"errors"
	"fmt"
	"math"

	"github.com/wirepath/wirepath/causal"
)

// WhatIf describes a change to one link.
type WhatIf struct {
	// Link names the link as "A->B"; either direction matches.
	Link string
	// RTTUS is the new round-trip time in µs; NaN leaves it unchanged.
	RTTUS float64
	// CurrentRTTUS overrides the measured round-trip time; NaN uses the
	// measurement.
	CurrentRTTUS float64
	// Bandwidth is the new bandwidth in bits per second; NaN leaves it
	// unchanged.
	Bandwidth float64
	// CurrentBandwidth is the link's bandwidth now, in bits per second,
	// needed when Bandwidth is set.
	CurrentBandwidth float64
}

// NoChange returns a WhatIf on link that changes nothing yet.
func NoChange(link string) WhatIf {
	return WhatIf{Link: link, RTTUS: math.NaN(), CurrentRTTUS: math.NaN(), Bandwidth: math.NaN(), CurrentBandwidth: DefaultBandwidth}
}

// DefaultBandwidth is the current bandwidth assumed when none is given:
// 1 Gbit/s, a common LAN link.
const DefaultBandwidth = 1e9

// Prediction is the predicted latency of one pattern after a WhatIf.
type Prediction struct {
	Rank    int         `json:"rank"`
	Pattern string      `json:"signature"`
	Profile LinkProfile `json:"link_profile"`
	// RTTUS and NewRTTUS are γ before and after, µs.
	RTTUS    float64 `json:"rtt_us"`
	NewRTTUS float64 `json:"new_rtt_us"`
	// Bandwidth and NewBandwidth are ω before and after, bits per second.
	Bandwidth    float64 `json:"bandwidth_bps"`
	NewBandwidth float64 `json:"new_bandwidth_bps"`
	// LinkDelayUS and NewLinkDelayUS are the link's term of Γ, κ·γ + ν/ω,
	// before and after, µs.
	LinkDelayUS    float64 `json:"link_delay_us"`
	NewLinkDelayUS float64 `json:"new_link_delay_us"`
	// LatencyUS is the pattern's measured mean latency. ModelUS adds the
	// change of the link's term of Γ to it (the paper's model, which sums
	// round trips as if they were sequential).
	LatencyUS float64 `json:"latency_us"`
	ModelUS   float64 `json:"predicted_latency_us"`
	// CriticalPathUS instead replays the pattern's mean timeline with every
	// message on the link slowed by half the RTT change plus its own
	// transmission-time change, so parallel branches off the critical path
	// do not add up.
	CriticalPathUS float64 `json:"critical_path_latency_us"`
}

// ErrNoLink is returned by Predict when the pattern does not use the link.
var ErrNoLink = errors.New("pattern does not use the link")

// ErrRTTUnknown is returned by Predict for an RTT change on a link whose
// round-trip time was not measured and not given.
var ErrRTTUnknown = errors.New("round-trip time not measured (an end was not seen); give the current RTT")

// Predict predicts the mean latency of pattern p after the change w.
func Predict(p *causal.Pattern, w WhatIf) (Prediction, error) {
	a, b, err := ParseLink(w.Link)
	if err != nil {
		return Prediction{}, err
	}
	var prof *LinkProfile
	profiles := LinkProfiles(p)
	for i := range profiles {
		l := &profiles[i]
		if l.A == a && l.B == b || l.A == b && l.B == a {
			prof = l
		}
	}
	if prof == nil {
		return Prediction{}, fmt.Errorf("%s: %w", w.Link, ErrNoLink)
	}
	pr := Prediction{Rank: p.Rank, Pattern: p.Signature, Profile: *prof}
	pr.RTTUS = prof.RTTUS
	if !math.IsNaN(w.CurrentRTTUS) {
		pr.RTTUS = w.CurrentRTTUS
	} else if !prof.RTTKnown && !math.IsNaN(w.RTTUS) {
		return Prediction{}, fmt.Errorf("%s in pattern #%d: %w", w.Link, p.Rank, ErrRTTUnknown)
	}
	pr.NewRTTUS = pr.RTTUS
	if !math.IsNaN(w.RTTUS) {
		pr.NewRTTUS = w.RTTUS
	}
	pr.Bandwidth = w.CurrentBandwidth
	if !(pr.Bandwidth > 0) {
		pr.Bandwidth = DefaultBandwidth
	}
	pr.NewBandwidth = pr.Bandwidth
	if !math.IsNaN(w.Bandwidth) {
		if !(w.Bandwidth > 0) {
			return Prediction{}, fmt.Errorf("bandwidth must be positive")
		}
		pr.NewBandwidth = w.Bandwidth
	}
	// Γ_l = κ·γ + ν/ω, with ν in bytes and ω in bits per second.
	term := func(rtt, bw float64) float64 {
		return float64(prof.RoundTrips)*rtt + prof.Bytes*8/bw*1e6
	}
	pr.LinkDelayUS = term(pr.RTTUS, pr.Bandwidth)
	pr.NewLinkDelayUS = term(pr.NewRTTUS, pr.NewBandwidth)
	ht := meanTimes(p)
	pr.LatencyUS = replay(p, ht, nil)
	if p.Latency != nil {
		pr.LatencyUS = p.Latency.Mean
	}
	pr.ModelUS = pr.LatencyUS + pr.NewLinkDelayUS - pr.LinkDelayUS
	// Per-message change of the one-way delay.
	delta := make([]float64, len(p.Hops))
	for _, h := range prof.Hops {
		delta[h] = (pr.NewRTTUS-pr.RTTUS)/2 + ht[h].bytes*8*(1/pr.NewBandwidth-1/pr.Bandwidth)*1e6
	}
	pr.CriticalPathUS = pr.LatencyUS + replay(p, ht, delta) - replay(p, ht, nil)
	return pr, nil
}

// replay recomputes the end of the pattern's mean timeline with the
// network delay of every hop h increased by delta[h] (nil: unchanged): each
// hop is sent as long after its parent's arrival as it was measured to be.
func replay(p *causal.Pattern, ht []hopMeans, delta []float64) float64 {
	arrive := make([]float64, len(p.Hops))
	end := 0.0
	for i := range p.Hops {
		send := ht[i].send
		if par := p.Hops[i].Parent; par != nil {
			send = arrive[*par] + (ht[i].send - ht[*par].arrive())
		}
		arrive[i] = ht[i].arrive() - ht[i].send + send
		if delta != nil {
			arrive[i] += delta[i]
		}
		end = math.Max(end, math.Max(send, arrive[i]))
	}
	return end
}
