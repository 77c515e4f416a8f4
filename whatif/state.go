package whatif

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wirepath/wirepath/causal"
)

// linkState is a link before and after a scenario.
type linkState struct {
	l              *Link
	curRTT, newRTT float64 // µs
	curBW, newBW   float64 // bits per second; +Inf: local
	rttSrc, bwSrc  Source
	changed        bool
	// absolute says the change depends on the current round trip (a new
	// value, not a change of it): its uncertainty counts.
	absolute bool
	bwChange bool
}

// nodeState is a node's M/G/1 server before and after.
type nodeState struct {
	n                *Node
	rho, newRho      float64
	s, newS          float64 // µs
	wait, newWait    float64 // µs
	speed            float64
	group            string     // the host it shares after colocation ("" alone)
	host             *hostState // the placement's host it shares (nil: dedicated)
	changed, missing bool
}

// state is a scenario resolved against a model.
type state struct {
	links map[[2]string]*linkState
	nodes map[string]*nodeState
	hosts map[string]*hostState
	load  float64
	ps    bool // processor sharing instead of FCFS
	notes []string
}

// resolve applies the scenario's changes to the model's inputs.
func (m *Model) resolve(s Scenario) (*state, error) {
	st := &state{links: map[[2]string]*linkState{}, nodes: map[string]*nodeState{}, hosts: m.newHostStates(), load: 1, ps: m.Discipline == PS}
	for _, l := range m.Links {
		st.links[linkKey(l.A, l.B)] = &linkState{l: l, curRTT: l.RTTUS, newRTT: l.RTTUS, curBW: l.BandwidthBPS, newBW: l.BandwidthBPS,
			rttSrc: l.RTTSource, bwSrc: l.BWSource}
	}
	for _, n := range m.Nodes {
		st.nodes[n.Name] = &nodeState{n: n, speed: 1, missing: n.Source == Missing}
	}
	// Current values first (they are what the changes start from), then
	// the changes in order.
	for _, c := range s.Changes {
		if c.Kind == ChangeLink {
			if err := st.current(c); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range s.Changes {
		if err := st.apply(m, c); err != nil {
			return nil, err
		}
	}
	st.queues(m)
	if len(m.Hosts) == 0 && st.nodesChanged() {
		st.notes = append(st.notes, "no placement given (--host-cores, --placement): every node is taken as its own dedicated server (an M/G/1 queue)")
	}
	return st, nil
}

// nodesChanged reports whether the scenario changes any node's queueing.
func (st *state) nodesChanged() bool {
	for _, ns := range st.nodes {
		if ns.changed {
			return true
		}
	}
	return false
}

// current takes a link change's current values.
func (st *state) current(c Change) error {
	ls := st.links[linkKey(c.A, c.B)]
	if ls == nil {
		return fmt.Errorf("link %s->%s: %w", causal.QuoteName(c.A), causal.QuoteName(c.B), ErrUnknownNode)
	}
	if !math.IsNaN(c.CurrentRTTUS) {
		ls.curRTT, ls.newRTT, ls.rttSrc = c.CurrentRTTUS, c.CurrentRTTUS, Given
	}
	if !math.IsNaN(c.CurrentBWBPS) {
		ls.curBW, ls.newBW, ls.bwSrc = c.CurrentBWBPS, c.CurrentBWBPS, Given
	}
	return nil
}

// apply applies one change.
func (st *state) apply(m *Model, c Change) error {
	switch c.Kind {
	case ChangeLink:
		st.changeLink(st.links[linkKey(c.A, c.B)], c)
	case ChangeHost:
		found := false
		for _, ls := range st.links {
			if ls.l.A == c.A || ls.l.B == c.A {
				st.changeLink(ls, c)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("host %s: %w", causal.QuoteName(c.A), ErrUnknownNode)
		}
	case ChangeColocate:
		return st.colocate(c)
	case ChangeSeparate:
		return st.separate(m, c)
	case ChangeLoad:
		st.load *= c.Factor
	case ChangeFaster:
		ns := st.nodes[c.A]
		if ns == nil {
			return fmt.Errorf("node %s: %w", causal.QuoteName(c.A), ErrUnknownNode)
		}
		ns.speed *= c.Factor
		ns.changed = true
	}
	return nil
}

// changeLink applies a round-trip and bandwidth change to one link.
func (st *state) changeLink(ls *linkState, c Change) {
	if !math.IsNaN(c.RTTUS) {
		ls.changed = true
		if c.RTTDelta {
			ls.newRTT = ls.newRTT + c.RTTUS
		} else {
			ls.newRTT, ls.absolute = c.RTTUS, true
		}
		ls.newRTT = max(ls.newRTT, 0)
	}
	if !math.IsNaN(c.BandwidthBPS) {
		ls.changed, ls.bwChange = true, true
		ls.newBW = c.BandwidthBPS
	}
}

// colocate puts a and b on one host.
func (st *state) colocate(c Change) error {
	a, b := st.nodes[c.A], st.nodes[c.B]
	if a == nil || b == nil {
		return fmt.Errorf("colocate %s %s: %w", causal.QuoteName(c.A), causal.QuoteName(c.B), ErrUnknownNode)
	}
	if err := st.unplaced(c); err != nil {
		return err
	}
	a.group, b.group = c.A+"+"+c.B, c.A+"+"+c.B
	a.changed, b.changed = true, true
	if ls := st.links[linkKey(c.A, c.B)]; ls != nil {
		ls.changed, ls.absolute, ls.bwChange = true, true, true
		ls.newRTT, ls.newBW = 0, math.Inf(1)
	}
	return nil
}

// ErrPlaced is returned for a colocation or separation of nodes the
// placement puts on hosts: their servers are the hosts'.
var ErrPlaced = errors.New("the placement puts it on a host: change the placement instead (a placement file per scenario)")

// unplaced fails when either node of a colocation or separation is on a
// host of the placement.
func (st *state) unplaced(c Change) error {
	for _, n := range []string{c.A, c.B} {
		if ns := st.nodes[n]; ns != nil && ns.n.Host != "" {
			return fmt.Errorf("%s %s %s: node %s: %w", c.Kind, causal.QuoteName(c.A), causal.QuoteName(c.B), causal.QuoteName(n), ErrPlaced)
		}
	}
	return nil
}

// separate moves a and b apart: their link gets the round trip given, or
// the median of the measured links' (estimated).
func (st *state) separate(m *Model, c Change) error {
	ls := st.links[linkKey(c.A, c.B)]
	if ls == nil {
		return fmt.Errorf("separate %s %s: %w", causal.QuoteName(c.A), causal.QuoteName(c.B), ErrUnknownNode)
	}
	if err := st.unplaced(c); err != nil {
		return err
	}
	ls.changed, ls.absolute = true, true
	if !math.IsNaN(c.RTTUS) {
		ls.newRTT = c.RTTUS
	} else {
		var rtts []float64
		for _, l := range m.Links {
			if (l.RTTSource == Measured || l.RTTSource == ViaHosts) && !l.Local {
				rtts = append(rtts, l.RTTUS)
			}
		}
		if len(rtts) == 0 {
			return fmt.Errorf("separate %s %s: no link's round trip was measured to estimate the new one from: give rtt=", c.A, c.B)
		}
		slices.Sort(rtts)
		ls.newRTT = rtts[len(rtts)/2]
		st.notes = append(st.notes, fmt.Sprintf("%s: the round trip after separating is estimated as the median of the measured links', %.0f µs", ls.l.Name(), ls.newRTT))
	}
	if !math.IsNaN(c.BandwidthBPS) {
		ls.newBW, ls.bwChange = c.BandwidthBPS, true
	} else if math.IsInf(ls.newBW, 1) || ls.l.Local {
		ls.newBW, ls.bwChange = DefaultBandwidth, true
	}
	return nil
}

// queues computes every node's M/G/1 wait before and after.
func (st *state) queues(m *Model) {
	groups := map[string][]*nodeState{}
	for _, ns := range st.nodes {
		n := ns.n
		ns.rho, ns.s = n.Utilisation, n.ServiceUS
		ns.wait = mg1Wait(ns.rho, ns.s, n.C2)
		ns.newS = ns.s / ns.speed
		ns.newRho = ns.rho * st.load / ns.speed
		ns.newWait = mg1Wait(ns.newRho, ns.newS, n.C2)
		if st.ps {
			ns.wait, ns.newWait = psWait(ns.rho, ns.s), psWait(ns.newRho, ns.newS)
		}
		if st.load != 1 {
			ns.changed = true
		}
		if ns.group != "" {
			groups[ns.group] = append(groups[ns.group], ns)
		}
	}
	for _, g := range groups {
		mergeServers(g, st.ps)
	}
	st.hostQueues(m)
}

// psWait is the mean time a visit of mean service s loses to sharing a
// processor at utilisation rho: s·ρ/(1−ρ); +Inf at saturation.
func psWait(rho, s float64) float64 {
	if rho >= 1 {
		return math.Inf(1)
	}
	return s * rho / (1 - rho)
}

// mergeServers puts the nodes of g on one M/G/1 server: the visit rates
// add up, and the wait is Pollaczek-Khinchine's for the mixture of their
// services (λ·E[S²] / 2(1−ρ)).
func mergeServers(g []*nodeState, ps bool) {
	var lam, rho, es2 float64
	for _, ns := range g {
		l := ns.newRho / max(ns.newS, 1e-9) // visits per µs
		lam += l
		rho += ns.newRho
		es2 += l * ns.newS * ns.newS * (1 + ns.n.C2)
	}
	wait := math.Inf(1)
	if rho < 1 {
		wait = es2 / (2 * (1 - rho))
	}
	for _, ns := range g {
		ns.newRho, ns.newWait = rho, wait
		if ps {
			ns.newWait = psWait(rho, ns.newS)
		}
	}
}

// saturation is the request rate at which the busiest node would be
// saturated after the changes (the same mix of requests), its uncertainty,
// the node and the model that gave it.
func (st *state) saturation(m *Model) (rps, unc float64, node, model string) {
	if m.RateRPS <= 0 {
		return 0, 0, "", ""
	}
	rps = math.Inf(1)
	seen := map[string]bool{}
	for _, name := range sortedKeys(st.nodes) {
		ns := st.nodes[name]
		if ns.missing || ns.rho <= 0 || ns.host != nil {
			continue
		}
		key, rho, v := name, ns.rho/ns.speed, ns.n.UtilUnc/ns.speed
		if ns.group != "" {
			if seen[ns.group] {
				continue
			}
			seen[ns.group] = true
			key, rho, v = ns.group, 0, 0
			for _, o := range st.nodes {
				if o.group == ns.group {
					rho += o.rho / o.speed
					v += o.n.UtilUnc / o.speed
				}
			}
		}
		if r := m.RateRPS / rho; r < rps {
			rps, node, unc = r, key, m.RateRPS/(rho*rho)*v
			model = fmt.Sprintf("M/G/1: the capture's %.1f requests/s over the node's utilisation %.4f after the changes", m.RateRPS, rho)
		}
	}
	for _, name := range sortedKeys(st.hosts) {
		hs := st.hosts[name]
		if r, u := hs.saturation(m.RateRPS); r < rps {
			rps, unc, node, model = r, u, "host "+name, hs.saturationModel(m.RateRPS, r)
		}
	}
	if math.IsInf(rps, 1) {
		return 0, 0, "", ""
	}
	return rps, unc, node, model
}
