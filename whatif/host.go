package whatif

import (
	"fmt"
	"math"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// Host is a machine whose cores the work of several nodes shares: a
// c-server processor-sharing station (stretch, in queue.go) that every
// visit to one of its nodes passes through for its core time. Model.Place
// makes the model's hosts from a placement; nodes on no host keep their
// own M/G/1 server (a dedicated machine).
type Host struct {
	// Name is the host's; Nodes the nodes on it that requests have.
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
	Cores int      `json:"cores"`
	// InProgress is N̄ = Σ λᵢ·Wᵢ over its nodes: the mean number of
	// visits in progress on the host (Little's law on each node's visit
	// rate λᵢ and measured work per visit Wᵢ), InProgressUnc its standard
	// error.
	InProgress    float64 `json:"in_progress"`
	InProgressUnc float64 `json:"in_progress_unc"`
	// Utilisation is U, the share of its cores busy: Given (busy=), or
	// Estimated as the U at which the station holds InProgress visits,
	// taking all of the work as core time.
	Utilisation float64 `json:"utilisation"`
	UtilUnc     float64 `json:"utilisation_unc"`
	UtilSource  Source  `json:"utilisation_source"`
	// CoreShare is f, the share of the nodes' work on or waiting for a
	// core (the rest is time a visit spends off the cores, sleeping or on
	// disk, which load does not stretch); Stretch is the response per
	// unit of core time at U.
	CoreShare float64 `json:"core_share"`
	Stretch   float64 `json:"stretch"`
	// DemandUS is the core time of one request on the host (Σ over its
	// nodes of visits per request × core time per visit).
	DemandUS float64 `json:"demand_us"`
	// Missing are its nodes whose own delays were not seen: their core
	// time is not in the model.
	Missing []string `json:"missing,omitempty"`
	// Unseen are the nodes the placement puts on it that no request has
	// (a typo, or a node the captures did not see): left out, with a note.
	Unseen []string `json:"unseen,omitempty"`
	Note   string   `json:"note,omitempty"`
	// CPU is the line fitted to its CPU profiles (cpu=), nil without.
	CPU *CPUFit `json:"cpu,omitempty"`

	busy, busyUnc float64 // NaN: not given
	// own is the share of the cores the nodes themselves kept busy (busy
	// less the profile's other processes; busy without a profile).
	own float64
	// line says the CPU line is used: slope (± slopeUnc) is the cores'
	// share per request/s of all of the profile's processes, otherSlope
	// that of the other processes.
	line                        bool
	slope, slopeUnc, otherSlope float64
	// wake says the saturation comes from the CPU's wake-up model
	// (CPU.Wake) instead of the line.
	wake bool
}

// Place puts the model's nodes on hosts (a placement): each host's cores
// become one shared processor-sharing station, and every node on it gets
// its core time per visit (Node.DemandUS) and its time off the cores
// (Node.DelayUS). A node no request has is left out with a note naming
// where it was written; a node on two hosts is an error.
func (m *Model) Place(hosts []HostSpec) error {
	if err := CheckPlacement(hosts); err != nil {
		return err
	}
	m.Hosts = m.Hosts[:0]
	clear(m.hosts)
	for _, nd := range m.Nodes {
		nd.Host, nd.DemandUS, nd.DelayUS = "", 0, 0
	}
	for _, hs := range hosts {
		h := &Host{Name: hs.Name, Cores: hs.Cores, busy: hs.Busy, busyUnc: hs.BusyUnc, own: hs.Busy}
		if len(hs.Profiles) > 0 {
			if err := h.useCPU(m, hs.Profiles, hs.CPUModel); err != nil {
				return fmt.Errorf("%s: host %s: %w", hs.Where, h.Name, err)
			}
		}
		for _, n := range hs.Nodes {
			nd := m.nodes[n]
			if nd == nil {
				h.Unseen = append(h.Unseen, n)
				m.Notes = append(m.Notes, fmt.Sprintf("%s: node %s of host %s sends in no request: left out of the host", hs.Where, causal.QuoteName(n), h.Name))
				continue
			}
			h.Nodes = append(h.Nodes, n)
			nd.Host = h.Name
			if nd.Source == Missing {
				h.Missing = append(h.Missing, n)
				continue
			}
			h.InProgress += nd.VisitRate * nd.WorkUS / 1e6
			rel := math.Sqrt((1 + nd.C2) / max(nd.Visits, 1))
			h.InProgressUnc += math.Pow(nd.VisitRate*nd.WorkUS/1e6*rel, 2)
		}
		h.InProgressUnc = math.Sqrt(h.InProgressUnc)
		h.fit()
		m.Hosts = append(m.Hosts, h)
		m.hosts[h.Name] = h
		m.placeNodes(h)
	}
	return nil
}

// fit sets the host's utilisation, core share and stretch from its visits
// in progress and the busy share given (NaN: none), and their
// uncertainty.
func (h *Host) fit() {
	busy := h.busy
	h.Utilisation, h.CoreShare, h.Stretch = hostFit(h.Cores, h.InProgress, busy, h.own)
	h.UtilSource = Estimated
	h.Note = "not given (busy=): solved from the visits in progress taking all of the nodes' work as core time (sleeps, disk and locks included): an upper bound of the core time, so of the queueing a higher load adds"
	lo, _, _ := hostFit(h.Cores, max(h.InProgress-h.InProgressUnc, 0), busy, h.own)
	hi, _, _ := hostFit(h.Cores, h.InProgress+h.InProgressUnc, busy, h.own)
	h.UtilUnc = (hi - lo) / 2
	if !math.IsNaN(busy) {
		h.UtilSource, h.UtilUnc = Given, h.busyUnc
		h.Note = fmt.Sprintf("given; %.0f %% of the nodes' work is core time", 100*h.CoreShare)
		if h.CoreShare >= 1 {
			h.Note = "given, but more core time than the nodes' work holds at that utilisation: all of the work is taken as core time, the rest of the utilisation as other work that the load does not scale"
		}
	}
	if h.CPU != nil {
		h.Note = h.cpuNote() + "; " + strings.TrimPrefix(h.Note, "given; ")
	}
	if len(h.Missing) > 0 {
		h.Note += fmt.Sprintf("; %d node(s) not measured, their core time left out", len(h.Missing))
	}
}

// hostFit returns a host's utilisation u, core share f and stretch s for
// c cores holding n visits in progress: with busy given, u = busy and f
// the share of the visits' time that the c·own cores the nodes kept busy,
// stretched by s, account for (at most 1); without, f = 1 and u solves
// inSystem(c, u) = n.
func hostFit(c int, n, busy, own float64) (u, f, s float64) {
	if n <= 0 {
		return 0, 1, 1
	}
	if math.IsNaN(busy) {
		u = min(solveUtil(c, n), 0.999)
		return u, 1, stretch(c, u)
	}
	u, s = busy, stretch(c, busy)
	return u, min(float64(c)*max(own, 0)*s/n, 1), s
}

// placeNodes sets the core time and the time off the cores per visit of
// h's nodes, and h's core time per request.
func (m *Model) placeNodes(h *Host) {
	for _, n := range h.Nodes {
		nd := m.nodes[n]
		if nd.Source == Missing {
			continue
		}
		nd.DemandUS = h.CoreShare * nd.WorkUS / h.Stretch
		nd.DelayUS = (1 - h.CoreShare) * nd.WorkUS
		if m.RateRPS > 0 {
			h.DemandUS += nd.VisitRate / m.RateRPS * nd.DemandUS
		}
	}
}

// hostState is a host before and after a scenario; nbar is its visits in
// progress (moved by inputUncertainty).
type hostState struct {
	h          *Host
	busy       float64
	nbar       float64
	slope      float64 // the CPU line's, when h.line
	u, f, s    float64
	newU, newS float64
	// nodesU is the nodes' share of the cores after their speed-ups, at
	// the capture's load; bg the share busy with other work (a busy=
	// beyond what the nodes' work holds), which the load does not scale.
	nodesU, bg float64
	changed    bool
}

// newHostStates makes the scenario's host states.
func (m *Model) newHostStates() map[string]*hostState {
	out := map[string]*hostState{}
	for _, h := range m.Hosts {
		out[h.Name] = &hostState{h: h, busy: h.busy, nbar: h.InProgress, slope: h.slope}
	}
	return out
}

// hostQueues computes every host's utilisation and stretch before and
// after, and sets its nodes' figures: utilisation is the host's, service
// the core time per visit, wait the time waiting for a core.
func (st *state) hostQueues(m *Model) {
	for _, hs := range st.hosts {
		hs.u, hs.f, hs.s = hostFit(hs.h.Cores, hs.nbar, hs.busy, hs.busy-(hs.h.busy-hs.h.own))
		var now, after float64
		changed := st.load != 1
		for _, n := range hs.h.Nodes {
			ns := st.nodes[n]
			if ns == nil || ns.missing {
				continue
			}
			d := ns.n.VisitRate * hs.f * ns.n.WorkUS / hs.s / 1e6 / float64(hs.h.Cores)
			now += d
			after += d / ns.speed
			changed = changed || ns.speed != 1
		}
		hs.bg, hs.nodesU = max(hs.u-now, 0), after
		if hs.h.line {
			hs.bg, hs.nodesU = hs.lineLoad(m.RateRPS, now, after)
		}
		hs.newU = hs.bg + st.load*hs.nodesU
		hs.newS = stretch(hs.h.Cores, hs.newU)
		hs.changed = changed
		for _, n := range hs.h.Nodes {
			if ns := st.nodes[n]; ns != nil {
				ns.hostQueue(hs)
			}
		}
	}
}

// lineLoad is the host's fixed share of the cores and its share per unit
// of load under the CPU line (rate the capture's): the per-request part
// of the nodes' columns is scaled by their speed-ups (after/now, the
// nodes' core time after over before), the other processes' is not.
func (hs *hostState) lineLoad(rate, now, after float64) (fixed, perLoad float64) {
	r := 1.0
	if now > 0 {
		r = after / now
	}
	o := hs.h.otherSlope
	return hs.busy - rate*hs.slope, rate * (o + (hs.slope-o)*r)
}

// hostQueue sets a node's figures from its host's.
func (ns *nodeState) hostQueue(hs *hostState) {
	ns.host = hs
	ns.changed = ns.changed || hs.changed
	d := hs.f * ns.n.WorkUS / hs.s
	ns.rho, ns.newRho = hs.u, hs.newU
	ns.s, ns.newS = d, d/ns.speed
	ns.wait, ns.newWait = d*(hs.s-1), ns.newS*(hs.newS-1)
}

// visitRatio is the factor a visit's measured work is multiplied by on a
// host: its time off the cores stays, its core time is stretched by the
// host's new stretch instead of the old one and shortened by the node's
// speed-up.
func (ns *nodeState) visitRatio() float64 {
	hs := ns.host
	return (1 - hs.f) + hs.f*hs.newS/(hs.s*ns.speed)
}

// hostSaturation is the request rate at which host hs's cores would be
// saturated after the changes (the same mix; other work on it, bg,
// keeps its share), and its uncertainty.
func (hs *hostState) saturation(rate float64) (rps, unc float64) {
	if hs.nodesU <= 0 || hs.bg >= 1 {
		return math.Inf(1), 0
	}
	rps = rate * (1 - hs.bg) / hs.nodesU
	if hs.h.wake {
		return hs.h.CPU.Wake.saturation(hs.h.Cores, hs.perRequestRatio(rate))
	}
	if hs.h.line {
		r, u := hs.h.CPU.saturation(hs.h.Cores)
		return rps, rps * u / r
	}
	return rps, rps * hs.h.UtilUnc / max(hs.h.Utilisation, 1e-12)
}

// saturationModel says how hs's saturation rps was made: the CPU line
// reaching the cores (its fit, and how far beyond the fitted rates the
// saturation lies), or the host's busy share scaled with the load.
func (hs *hostState) saturationModel(rate, rps float64) string {
	h := hs.h
	if h.wake {
		f, wf := h.CPU, h.CPU.Wake
		return fmt.Sprintf("CPU with wake-up cost: %.3f cores + λ·(%.3f ms + %.3f ms·e^(−λ·%.2f ms)) per request (the nodes' part after their speed-ups) reaches %d cores where requests are always in progress and the wake-ups vanish, (c − a)/w; fitted over %d windows at %.0f to %.0f requests/s, so extrapolated %.1f× beyond the fastest window",
			wf.Fixed, wf.WorkMS*hs.perRequestRatio(rate), wf.WakeMS*hs.perRequestRatio(rate), wf.LatencyMS, h.Cores, f.Windows, f.RateMin, f.RateMax, rps/f.RateMax)
	}
	if h.line {
		f := h.CPU
		return fmt.Sprintf("CPU line: %.3f cores + %.3f ms per request (the nodes' part after their speed-ups) reaches %d cores; fitted over %d windows at %.0f to %.0f requests/s, so extrapolated %.1f× beyond the fastest window",
			f.Fixed, 1e3*hs.nodesU*float64(h.Cores)/rate, h.Cores, f.Windows, f.RateMin, f.RateMax, rps/f.RateMax)
	}
	return fmt.Sprintf("host utilisation (%s): %.4f of the cores other work and %.4f the nodes' at the capture's %.1f requests/s; saturated where the nodes' share, scaled with the rate, fills the rest (the core time per request taken as independent of the rate)",
		h.UtilSource, hs.bg, hs.nodesU, rate)
}

// perRequestRatio is the nodes' speed-ups' factor on the host's CPU per
// request (after over before; 1 without the CPU line).
func (hs *hostState) perRequestRatio(rate float64) float64 {
	if !hs.h.line || !(hs.h.slope > 0) || !(rate > 0) {
		return 1
	}
	return hs.nodesU / (rate * hs.h.slope)
}

// useCPU fits h's CPU line from its profiles and takes its busy share from
// it at the capture's rate (the line's when it is identified, else the
// profiles' mean over the capture), and the nodes' own share without the
// profiles' other processes.
func (h *Host) useCPU(m *Model, profiles []*CPUProfile, model string) error {
	fit, err := m.FitCPU(profiles)
	if err != nil {
		return err
	}
	h.CPU = fit
	if model == CPUModelWake {
		fit.Wake = fit.fitWake(m.meanLatency())
	}
	c, rate := float64(h.Cores), m.RateRPS
	if fit.Identified {
		b, u := fit.at(rate)
		if b > 0 && b < c && rate > 0 {
			h.busy, h.busyUnc, h.own = b/c, u/c, (b-fit.otherAt(rate))/c
			h.line, h.slope, h.slopeUnc = true, fit.PerRequestMS/1e3/c, fit.PerRequestUncMS/1e3/c
			h.otherSlope = fit.otherSlope() / c
			h.wake = fit.Wake != nil && fit.Wake.Identified
			return nil
		}
		fit.Identified = false
		fit.Note += fmt.Sprintf("; but it gives %.3f cores at the capture's %.0f requests/s, outside 0 to %d: the profiles' mean over the capture is used", b, rate, h.Cores)
	}
	if !(fit.MeanBusy > 0) {
		return fmt.Errorf("the CPU profiles (%s) have no window in the capture to take the busy share from: %s", strings.Join(fit.Files, ", "), fit.Note)
	}
	h.busy, h.busyUnc, h.own = min(fit.MeanBusy/c, 0.999), fit.MeanBusyUnc/c, fit.MeanOwn/c
	if w := fit.Wake; w != nil && w.Identified {
		w.Identified = false
		w.Note = "the line is not identified (the wake-up model's saturation takes the nodes' speed-ups from it)"
	}
	return nil
}

// cpuNote says where the host's busy share came from and what its CPU
// line is.
func (h *Host) cpuNote() string {
	f := h.CPU
	s := fmt.Sprintf("CPU profile %s: %.3f ±%.3f cores + %.3f ±%.3f ms per request (%s)",
		strings.Join(f.Files, ", "), f.Fixed, f.FixedUnc, f.PerRequestMS, f.PerRequestUncMS, f.Note)
	if h.line {
		s += fmt.Sprintf("; busy %.4f ±%.4f at the capture's rate, saturated where the line reaches %d cores", h.busy, h.busyUnc, h.Cores)
	} else {
		s += fmt.Sprintf("; estimated: busy %.4f ±%.4f", h.busy, h.busyUnc)
	}
	if w := f.Wake; w != nil {
		s += fmt.Sprintf("; wake-up model (cpu-model=wake): %.3f ±%.3f cores + λ·(%.3f ±%.3f ms + %.3f ±%.3f ms·e^(−λ·%.2f ms)) per request",
			w.Fixed, w.FixedUnc, w.WorkMS, w.WorkUncMS, w.WakeMS, w.WakeUncMS, w.LatencyMS)
		if h.wake {
			s += fmt.Sprintf(" (%s), saturated where it reaches %d cores", w.Note, h.Cores)
		} else {
			s += fmt.Sprintf(": not used, %s", w.Note)
		}
	}
	var other []string
	for _, c := range f.Columns {
		if c.Other {
			other = append(other, fmt.Sprintf("%s %.3f cores + %.3f ms per request", c.Name, c.Fixed, c.PerRequestMS))
		}
	}
	if len(other) > 0 {
		s += "; includes other processes on the host: " + strings.Join(other, ", ")
	}
	return s
}
