package whatif

import (
	"fmt"
	"math"
)

// delta is how much one request's latency changes: along its replayed
// timeline, and by the paper's sum; saturated when a node it visits would
// be saturated.
type delta struct {
	replay, model float64
	saturated     bool
}

// requestDeltas computes every request's change.
func (st *state) requestDeltas(m *Model) []delta {
	out := make([]delta, len(m.Requests))
	for i := range m.Requests {
		out[i] = st.requestDelta(&m.Requests[i])
	}
	return out
}

// requestDelta is one request's change: every message on a changed link
// takes half the change of the round trip longer (and a CALL, the share of
// a handshake), plus the change of its transmission time; every visit to a
// changed node takes its service's change and its wait's.
func (st *state) requestDelta(r *Request) delta {
	var d delta
	dnet := make([]float64, len(r.Hops))
	dnode := make([]float64, len(r.Hops))
	for i := range r.Hops {
		h := &r.Hops[i]
		if ls := st.links[linkKey(h.From, h.To)]; ls != nil && ls.changed {
			dnet[i] = ls.hopDelta(h)
			d.model += ls.hopTransfer(h)
		}
	}
	for _, lp := range r.Profile {
		if ls := st.links[linkKey(lp.A, lp.B)]; ls != nil && ls.changed {
			d.model += (float64(lp.RoundTrips) + handshakes(r, lp)*ls.l.HandshakesPerCall) * (ls.newRTT - ls.curRTT)
		}
	}
	for name, v := range visits(r) {
		ns := st.nodes[name]
		if ns == nil || !ns.changed || ns.missing {
			continue
		}
		if math.IsInf(ns.newWait, 1) || ns.newRho >= 1 || (ns.host != nil && math.IsInf(ns.host.newS, 1)) {
			d.saturated = true
			continue
		}
		dv := max(v.work-ns.wait, 0)*(1/ns.speed-1) + ns.newWait - ns.wait
		switch {
		case ns.host != nil:
			// Its time off the cores stays; its core time is stretched
			// by the host's new load instead of the old one.
			dv = v.work * (ns.visitRatio() - 1)
		case st.ps:
			// The visit's measured work is its service stretched by the
			// utilisation now; after, by the new one.
			dv = v.work * ((1-ns.rho)/(ns.speed*(1-ns.newRho)) - 1)
		}
		dnode[v.first] += dv
		d.model += dv
	}
	if d.saturated {
		d.replay, d.model = math.Inf(1), math.Inf(1)
		return d
	}
	d.replay = replay(r, dnet, dnode) - replay(r, nil, nil)
	return d
}

// hopDelta is the change of one message's arrival on a changed link: half
// the round trip's change (a CALL that may have opened its connection the
// share of a handshake more), and its transfer time's change.
func (ls *linkState) hopDelta(h *Hop) float64 {
	dg := ls.newRTT - ls.curRTT
	v := dg/2 + ls.hopTransfer(h)
	if h.Kind == "CALL" && h.Parent >= 0 {
		v += ls.l.HandshakesPerCall * dg
	}
	return v
}

// hopTransfer is the change of one message's transfer time.
func (ls *linkState) hopTransfer(h *Hop) float64 {
	return transferUS(h.Bytes, ls.l, ls.newBW, ls.newRTT, ls.l.UDP) - transferUS(h.Bytes, ls.l, ls.curBW, ls.curRTT, ls.l.UDP)
}

// handshakes counts the CALLs a request makes on a link (not its root):
// each waits for a handshake in the share of the link's calls that opened
// connections.
func handshakes(r *Request, lp LinkProfile) float64 {
	n := 0
	for _, i := range lp.Hops {
		if r.Hops[i].Kind == "CALL" && r.Hops[i].Parent >= 0 {
			n++
		}
	}
	return float64(n)
}

// visit is a request's work at one node: the sum of its node delays there
// and the first hop it sent.
type visit struct {
	work  float64
	first int
}

// visits returns a request's visits by node.
func visits(r *Request) map[string]visit {
	out := map[string]visit{}
	for i := range r.Hops {
		h := &r.Hops[i]
		if h.Parent < 0 || !h.NodeKnown {
			continue
		}
		v, ok := out[h.From]
		if !ok {
			v.first = i
		}
		v.work += max(h.Node, 0)
		out[h.From] = v
	}
	return out
}

// replay recomputes the end of a request's timeline with the network
// delay of every hop i longer by dnet[i] and its send later by dnode[i]
// after its parent's arrival (nil: unchanged); each hop is otherwise sent
// as long after its parent's arrival as it was measured to be.
func replay(r *Request, dnet, dnode []float64) float64 {
	arrive := make([]float64, len(r.Hops))
	end := 0.0
	for i := range r.Hops {
		h := &r.Hops[i]
		send := h.Send
		if h.Parent >= 0 {
			send = arrive[h.Parent] + (h.Send - r.Hops[h.Parent].arrive())
		}
		if dnode != nil {
			send += dnode[i]
		}
		arrive[i] = send + (h.arrive() - h.Send)
		if dnet != nil {
			arrive[i] += dnet[i]
		}
		end = max(end, send, arrive[i])
	}
	return end
}

// inputUncertainty perturbs each input a change depends on by its
// uncertainty, one at a time, and returns per input the requests' half
// differences of the changes (their own standard deviations).
func (st *state) inputUncertainty(m *Model) [][]float64 {
	var out [][]float64
	pert := func(set func(sign float64)) {
		set(1)
		plus := st.requestDeltas(m)
		set(-1)
		minus := st.requestDeltas(m)
		set(0)
		u := make([]float64, len(plus))
		for i := range plus {
			if finite(plus[i].replay) && finite(minus[i].replay) {
				u[i] = math.Abs(plus[i].replay-minus[i].replay) / 2
			}
		}
		out = append(out, u)
	}
	for _, key := range sortedLinkKeys(st.links) {
		ls := st.links[key]
		if !ls.changed {
			continue
		}
		if ls.absolute {
			cur, lo, hi := ls.curRTT, ls.curRTT-ls.l.RTTUncUS, ls.curRTT+ls.l.RTTUncUS
			if ls.rttSrc == Missing {
				lo, hi = 0, max(ls.newRTT, 2*cur)
			}
			if ls.rttSrc == Given {
				lo, hi = cur, cur
			}
			pert(func(s float64) { ls.curRTT = pick(s, cur, max(lo, 0), hi) })
		}
		if ls.bwChange && ls.bwSrc != Given {
			cur := ls.curBW
			lo, hi := 0.8*cur, 1.25*cur
			if ls.bwSrc == Assumed {
				lo, hi = cur, math.Inf(1)
			}
			pert(func(s float64) { ls.curBW = pick(s, cur, lo, hi) })
		}
	}
	for _, name := range sortedKeys(st.nodes) {
		ns := st.nodes[name]
		if !ns.changed || ns.missing || ns.n.UtilUnc <= 0 || ns.host != nil {
			continue
		}
		n := ns.n
		u0 := n.Utilisation
		pert(func(s float64) {
			n.Utilisation = pick(s, u0, max(u0-n.UtilUnc, 0), min(u0+n.UtilUnc, 0.999))
			st.queues(m)
		})
	}
	st.hostUncertainty(m, pert)
	if u := st.missingNodes(m); u != nil {
		out = append(out, u)
	}
	return out
}

// hostUncertainty perturbs every changed host's visits in progress by
// their standard error (they set its utilisation, or with busy= given its
// core share), a given utilisation by the uncertainty given, and a CPU
// line's slope by its standard error.
func (st *state) hostUncertainty(m *Model, pert func(set func(sign float64))) {
	for _, name := range sortedKeys(st.hosts) {
		hs := st.hosts[name]
		if !hs.changed {
			continue
		}
		if n0, u := hs.nbar, hs.h.InProgressUnc; u > 0 {
			pert(func(s float64) {
				hs.nbar = pick(s, n0, max(n0-u, 0), n0+u)
				st.queues(m)
			})
		}
		if b0, u := hs.busy, hs.h.busyUnc; !math.IsNaN(b0) && u > 0 {
			pert(func(s float64) {
				hs.busy = pick(s, b0, max(b0-u, 1e-9), min(b0+u, 0.999))
				st.queues(m)
			})
		}
		// The CPU line's slope, turned about the capture's rate (its
		// busy share there moved above).
		if k0, u := hs.slope, hs.h.slopeUnc; hs.h.line && u > 0 {
			pert(func(s float64) {
				hs.slope = pick(s, k0, max(k0-u, 1e-12), k0+u)
				st.queues(m)
			})
		}
	}
}

// pick returns hi, lo or cur for sign +1, -1 or 0.
func pick(sign, cur, lo, hi float64) float64 {
	switch {
	case sign > 0:
		return hi
	case sign < 0:
		return lo
	}
	return cur
}

// missingNodes widens the uncertainty of requests that visit nodes whose
// delays were not measured when the load changes: their queueing is left
// out, and could grow by the load's change times their whole time.
func (st *state) missingNodes(m *Model) []float64 {
	if st.load == 1 {
		return nil
	}
	var u []float64
	for i := range m.Requests {
		r := &m.Requests[i]
		v := 0.0
		for j := range r.Hops {
			h := &r.Hops[j]
			ns := st.nodes[h.From]
			if h.Parent < 0 || ns == nil || !ns.missing {
				continue
			}
			// The time from the parent's arrival to this send (its
			// receive when the send was not seen).
			v += max(h.Send-r.Hops[h.Parent].arrive(), 0)
		}
		if v > 0 && u == nil {
			u = make([]float64, len(m.Requests))
		}
		if u != nil {
			u[i] = v * math.Abs(st.load-1)
		}
	}
	return u
}

// inputs lists, for the requests ids, the inputs of the links and nodes
// the scenario changes, and notes on those missing, estimated or assumed.
func (st *state) inputs(m *Model, ids []int) ([]LinkInput, []NodeInput, []string) {
	var links []LinkInput
	var nodes []NodeInput
	var notes []string
	w := 0.0
	for _, i := range ids {
		w += m.Requests[i].Weight
	}
	for _, key := range sortedLinkKeys(st.links) {
		ls := st.links[key]
		if !ls.changed {
			continue
		}
		li, used := ls.input(m, ids, w)
		if !used {
			continue
		}
		links = append(links, li)
		notes = append(notes, ls.notes()...)
	}
	for _, name := range sortedKeys(st.nodes) {
		ns := st.nodes[name]
		if !ns.changed || !visited(m, ids, name) {
			continue
		}
		ni := NodeInput{Node: name, Utilisation: ns.rho, UtilUnc: ns.n.UtilUnc, NewUtilisation: ns.newRho,
			ServiceUS: ns.s, NewServiceUS: ns.newS, C2: ns.n.C2, WaitUS: ns.wait, NewWaitUS: ns.newWait, Source: ns.n.Source}
		if ns.host != nil {
			ni.Host, ni.DelayUS = ns.host.h.Name, ns.n.DelayUS
		}
		if math.IsInf(ni.NewWaitUS, 1) {
			ni.NewWaitUS, ni.Saturated = 0, true
		}
		nodes = append(nodes, ni)
		switch ns.n.Source {
		case Missing:
			notes = append(notes, fmt.Sprintf("node %s: service time missing (%s): its queueing is left out, the uncertainty covers it", name, ns.n.Note))
		case Estimated:
			notes = append(notes, fmt.Sprintf("node %s: utilisation estimated from %s", name, ns.n.Note))
		}
	}
	return links, nodes, notes
}

// input is the link's inputs for the requests ids (of total weight w), and
// whether they use it.
func (ls *linkState) input(m *Model, ids []int, w float64) (LinkInput, bool) {
	li := LinkInput{Link: ls.l.Name(), RTTUS: ls.curRTT, RTTUncUS: ls.l.RTTUncUS, RTTSource: ls.rttSrc, NewRTTUS: ls.newRTT,
		BandwidthBPS: ls.curBW, BWSource: ls.bwSrc, NewBWBPS: ls.newBW}
	if math.IsInf(li.NewBWBPS, 1) {
		li.NewBWBPS, li.NewLocal = 0, true
	}
	used := false
	var k2 float64
	for _, i := range ids {
		r := &m.Requests[i]
		for _, lp := range r.Profile {
			if linkKey(lp.A, lp.B) != linkKey(ls.l.A, ls.l.B) {
				continue
			}
			used = true
			k := float64(lp.RoundTrips)
			li.Kappa += r.Weight * k
			k2 += r.Weight * k * k
			li.Handshakes += r.Weight * handshakes(r, lp) * ls.l.HandshakesPerCall
			li.Bytes += r.Weight * lp.Bytes
			for _, h := range lp.Hops {
				b := r.Hops[h].Bytes
				li.WireBytes += r.Weight * wireBytes(b, ls.l.MSS, ls.l.UDP)
				li.SlowStart += r.Weight * float64(slowStartRounds(b, ls.l.MSS, ls.l.Window))
			}
		}
	}
	if !used {
		return li, false
	}
	li.Kappa /= w
	li.KappaSD = math.Sqrt(max(k2/w-li.Kappa*li.Kappa, 0))
	li.Handshakes /= w
	li.Bytes /= w
	li.WireBytes /= w
	li.SlowStart /= w
	return li, true
}

// notes says which of the link's inputs were missing, estimated or
// assumed.
func (ls *linkState) notes() []string {
	var out []string
	l := ls.l
	switch {
	case ls.absolute && ls.rttSrc == Missing:
		out = append(out, fmt.Sprintf("link %s: round trip missing (%s): taken as 0, the uncertainty spans 0 to the new value", l.Name(), l.RTTNote))
	case ls.absolute && ls.rttSrc == Estimated:
		out = append(out, fmt.Sprintf("link %s: round trip estimated (%s)", l.Name(), l.RTTNote))
	case ls.absolute && ls.rttSrc == ViaHosts:
		out = append(out, fmt.Sprintf("link %s: round trip from the hosts' halves on other connections (%s)", l.Name(), l.RTTNote))
	}
	if ls.bwChange && ls.bwSrc == Assumed {
		out = append(out, fmt.Sprintf("link %s: current bandwidth not measured (no packet pairs): assumed %s, the uncertainty spans it to unlimited", l.Name(), FormatBandwidth(ls.curBW)))
	}
	return out
}

// visited reports whether any of the requests ids has work at node name.
func visited(m *Model, ids []int, name string) bool {
	for _, i := range ids {
		for _, h := range m.Requests[i].Hops {
			if h.From == name && h.Parent >= 0 {
				return true
			}
		}
	}
	return false
}

// sortedLinkKeys returns the links' keys in order.
func sortedLinkKeys(mp map[[2]string]*linkState) [][2]string {
	out := make([][2]string, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	slicesSortKeys(out)
	return out
}
