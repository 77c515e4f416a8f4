package whatif

import (
	"cmp"
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
	Name string
	// Visits are the requests that have work at the node (weights), and
	// VisitRate their rate per second.
	Visits    float64
	VisitRate float64
	// Utilisation is ρ: the share of the capture's time in which the node
	// was working on at least one request (the union of its node delays'
	// intervals), with UtilUnc its standard error. Without the requests'
	// absolute times (no trace), it is the visit rate times the mean work,
	// an upper bound (the work includes queueing).
	Utilisation float64
	UtilUnc     float64
	// ServiceUS is E[S] = ρ / visit rate (the utilisation law); C2 is C²
	// of the work per visit; WorkUS the mean work per visit as measured
	// (service plus the queueing of the capture's load).
	ServiceUS float64
	C2        float64
	WorkUS    float64
	// Source is Measured (busy periods), Estimated (from the means) or
	// Missing (the node's own delays were not seen: its end of its links
	// was not captured), with Note saying why.
	Source Source
	Note   string
}

// interval is a stretch of work at a node, ns on the reference clock.
type interval struct{ a, b int64 }

// buildNodes estimates every sending node's service time and utilisation.
func (m *Model) buildNodes() {
	work := map[string][]float64{} // per visit: the node's work in one request
	weights := map[string][]float64{}
	busy := map[string][]interval{}
	seen := map[string]bool{}
	for i := range m.Requests {
		r := &m.Requests[i]
		per := map[string]float64{}
		for _, h := range r.Hops {
			if h.Parent < 0 {
				continue
			}
			seen[h.From] = true
			if !h.NodeKnown {
				continue
			}
			d := max(h.Node, 0)
			per[h.From] += d
			if r.Root >= 0 {
				end := r.StartNS + int64(h.Send*1e3)
				busy[h.From] = append(busy[h.From], interval{end - int64(d*1e3), end})
			}
		}
		for n, w := range per {
			work[n] = append(work[n], w)
			weights[n] = append(weights[n], r.Weight)
		}
	}
	for _, name := range sortedKeys(seen) {
		nd := &Node{Name: name}
		m.nodes[name] = nd
		m.Nodes = append(m.Nodes, nd)
		if len(work[name]) == 0 {
			nd.Source = Missing
			nd.Note = "its own delays were not seen (its end of its links was not captured)"
			continue
		}
		nd.fromWork(work[name], weights[name], m.SpanS)
		if iv := busy[name]; len(iv) > 0 && m.SpanS > 0 {
			nd.Utilisation = min(float64(union(iv))/1e9/m.SpanS, 0.999)
			nd.Source = Measured
			nd.Note = "busy periods"
		}
		if nd.VisitRate > 0 {
			nd.ServiceUS = nd.Utilisation / nd.VisitRate * 1e6
			// The standard error of a utilisation from n visits: the
			// count of arrivals and the sum of their works both vary.
			nd.UtilUnc = nd.Utilisation * math.Sqrt((1+nd.C2)/max(nd.Visits, 1))
		}
	}
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
