package whatif

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Node is one node of the model, an M/G/1 server as Stewart and Shen
// model each server (NSDI 2005, section 3.2): its utilisation ρ, the mean
// service time E[S] of one visit (the work of one request there) and the
// squared coefficient of variation C² of that work, estimated from the
// node delays (the time at the node between a message's arrival and the
// send it caused, on one clock) and the node's busy periods in the
// capture.
type Node struct {
	Name string `json:"name"`
	// Visits are the requests that have work at the node (weights), and
	// VisitRate their rate per second.
	Visits    float64 `json:"visits"`
	VisitRate float64 `json:"visit_rate"`
	// Utilisation is ρ: the share of the capture's time in which the node
	// was working on at least one request (the union of its node delays'
	// intervals), with UtilUnc its standard error. Without the requests'
	// absolute times (no trace), it is the visit rate times the mean work,
	// an upper bound (the work includes queueing).
	Utilisation float64 `json:"utilisation"`
	UtilUnc     float64 `json:"utilisation_unc"`
	// ServiceUS is E[S] = ρ / visit rate (the utilisation law); C2 is C²
	// of the work per visit; WorkUS the mean work per visit as measured
	// (service plus the queueing of the capture's load).
	ServiceUS float64 `json:"service_us"`
	C2        float64 `json:"c2"`
	WorkUS    float64 `json:"work_us"`
	// Source is Measured (busy periods), Estimated (from the means) or
	// Missing (the node's own delays were not seen: its end of its links
	// was not captured), with Note saying why.
	Source Source `json:"source"`
	// Outliers are the visits (weights) left out of the estimates: their
	// work was beyond the far-out fence of the node's visits.
	Outliers float64 `json:"outliers,omitempty"`
	Note     string  `json:"note,omitempty"`
	// Host is the host the node shares with others (Model.Place), with
	// DemandUS its core time per visit and DelayUS its time off the cores
	// per visit (WorkUS = DemandUS × the host's stretch + DelayUS).
	Host     string  `json:"host,omitempty"`
	DemandUS float64 `json:"demand_us,omitempty"`
	DelayUS  float64 `json:"delay_us,omitempty"`
}

// interval is a stretch of work at a node, ns on the reference clock.
type interval struct{ a, b int64 }

// nodeVisit is one request's work at one node: its node delays' sum (µs),
// the request's weight and, for the most probable instance of a request
// with times, the stretches of work on the reference clock.
type nodeVisit struct {
	work, weight float64
	busy         []interval
}

// buildNodes estimates every sending node's service time and utilisation.
func (m *Model) buildNodes() {
	visitsOf := map[string][]nodeVisit{}
	seen := map[string]bool{}
	primary := m.primaryInstances()
	for i := range m.Requests {
		r := &m.Requests[i]
		per := map[string]*nodeVisit{}
		for _, h := range r.Hops {
			if h.Parent < 0 {
				continue
			}
			seen[h.From] = true
			if !h.NodeKnown {
				continue
			}
			v := per[h.From]
			if v == nil {
				v = &nodeVisit{weight: r.Weight}
				per[h.From] = v
			}
			d := max(h.Node, 0)
			v.work += d
			if r.Root >= 0 && primary[i] {
				end := r.StartNS + int64(h.Send*1e3)
				v.busy = append(v.busy, interval{end - int64(d*1e3), end})
			}
		}
		for _, n := range sortedKeys(per) {
			visitsOf[n] = append(visitsOf[n], *per[n])
		}
	}
	for _, name := range sortedKeys(seen) {
		nd := &Node{Name: name}
		m.nodes[name] = nd
		m.Nodes = append(m.Nodes, nd)
		if len(visitsOf[name]) == 0 {
			nd.Source = Missing
			nd.Note = "its own delays were not seen (its end of its links was not captured)"
			continue
		}
		nd.fromVisits(visitsOf[name], m.SpanS)
	}
}

// fromVisits estimates a node's figures from its visits, leaving out those
// beyond Tukey's far-out fence (the third quartile plus three times the
// interquartile range of the work per visit, and at least ten times the
// third quartile): a node delay of seconds in
// a system whose visits take milliseconds is a message the engine
// attached to the wrong request, not work, and one such visit would
// otherwise make the node look saturated.
func (nd *Node) fromVisits(vs []nodeVisit, span float64) {
	fence := farOutFence(vs)
	var work, w []float64
	var busy []interval
	for _, v := range vs {
		if v.work > fence {
			nd.Outliers += v.weight
			continue
		}
		work = append(work, v.work)
		w = append(w, v.weight)
		busy = append(busy, v.busy...)
	}
	nd.fromWork(work, w, span)
	if len(busy) > 0 && span > 0 {
		nd.Utilisation = min(float64(union(busy))/1e9/span, 0.999)
		nd.Source = Measured
		nd.Note = "busy periods"
	}
	if nd.Outliers > 0 {
		nd.Note += fmt.Sprintf("; %.0f visits beyond %s of work left out as outliers (a message attached to the wrong request, or a stall: not service)", nd.Outliers, fmtUS(fence))
	}
	if nd.VisitRate > 0 {
		nd.ServiceUS = nd.Utilisation / nd.VisitRate * 1e6
		// The standard error of a utilisation from n visits: the
		// count of arrivals and the sum of their works both vary.
		nd.UtilUnc = nd.Utilisation * math.Sqrt((1+nd.C2)/max(nd.Visits, 1))
	}
}

// farOutFence is Q3 + 3·IQR of the visits' work, weighted, and at least
// ten times Q3 (a node whose visits mostly take one time has no IQR, and
// its slower visits are service); +Inf for fewer than 8 visits: too few
// to call any an outlier.
func farOutFence(vs []nodeVisit) float64 {
	if len(vs) < 8 {
		return math.Inf(1)
	}
	s := slices.Clone(vs)
	slices.SortFunc(s, func(x, y nodeVisit) int { return cmp.Compare(x.work, y.work) })
	total := 0.0
	for _, v := range s {
		total += v.weight
	}
	q := func(p float64) float64 {
		acc := 0.0
		for _, v := range s {
			acc += v.weight
			if acc >= p*total {
				return v.work
			}
		}
		return s[len(s)-1].work
	}
	q1, q3 := q(0.25), q(0.75)
	return max(q3+3*(q3-q1), 10*q3)
}

// fmtUS formats µs for a note.
func fmtUS(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// primaryInstances marks, for every request (root message) the engine
// gave alternative instances, the most probable one (the first of equals):
// a node's busy periods count each request's work once, not once per
// alternative.
func (m *Model) primaryInstances() []bool {
	best := map[int]int{}
	for i := range m.Requests {
		r := &m.Requests[i]
		if r.Root < 0 {
			continue
		}
		if j, ok := best[r.Root]; !ok || r.Weight > m.Requests[j].Weight {
			best[r.Root] = i
		}
	}
	out := make([]bool, len(m.Requests))
	for _, i := range best {
		out[i] = true
	}
	return out
}

// fromWork sets the visits, the mean work, its C² and, as an estimate
// (the work includes queueing), the utilisation.
func (nd *Node) fromWork(work, w []float64, span float64) {
	var sw, s1, s2 float64
	for i, x := range work {
		sw += w[i]
		s1 += w[i] * x
		s2 += w[i] * x * x
	}
	nd.Visits = sw
	nd.WorkUS = s1 / sw
	if nd.WorkUS > 0 {
		v := s2/sw - nd.WorkUS*nd.WorkUS
		nd.C2 = max(v, 0) / (nd.WorkUS * nd.WorkUS)
	}
	nd.Source, nd.Note = Estimated, "mean node delays (no busy periods without the requests' times)"
	if span > 0 {
		nd.VisitRate = sw / span
		nd.Utilisation = min(nd.VisitRate*nd.WorkUS/1e6, 0.999)
	}
}

// union returns the total length of the union of intervals (reordering
// them).
func union(iv []interval) int64 {
	slices.SortFunc(iv, func(x, y interval) int { return cmp.Compare(x.a, y.a) })
	var total int64
	cur := iv[0]
	for _, v := range iv[1:] {
		if v.a > cur.b {
			total += cur.b - cur.a
			cur = v
			continue
		}
		cur.b = max(cur.b, v.b)
	}
	return total + cur.b - cur.a
}

// mg1Wait is the M/G/1 mean wait in queue (Pollaczek-Khinchine) at
// utilisation rho for mean service s and squared coefficient of variation
// c2; +Inf at or beyond saturation.
func mg1Wait(rho, s, c2 float64) float64 {
	if rho >= 1 {
		return math.Inf(1)
	}
	return rho * s * (1 + c2) / (2 * (1 - rho))
}
