package causal

import (
	"slices"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// OutcomeClass returns the class of a reply's label as a request type
// shows it: "2xx", "4xx", ... for an HTTP status ("200", "404 Not Found"),
// "error" for an error reply ("error", "ERROR 42P01", "grpc NOT_FOUND"),
// and "" for a reply whose label says nothing about the outcome (none,
// "grpc OK", a RESP value).
func OutcomeClass(reply string) string {
	if len(reply) >= 3 && reply[0] >= '1' && reply[0] <= '5' && isDigit(reply[1]) && isDigit(reply[2]) &&
		(len(reply) == 3 || reply[3] == ' ') {
		return reply[:1] + "xx"
	}
	low := strings.ToLower(reply)
	switch {
	case strings.HasPrefix(low, "error"), strings.HasSuffix(low, " reset"), low == "reset":
		return "error"
	case strings.HasPrefix(low, "grpc ") && low != "grpc ok":
		return "error"
	}
	return ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// RequestLabel names a request type from its root call's label and its
// reply's label: "GET /item/{id} 2xx", "redis GET error", "SELECT users".
// It is "" when the call has no label.
func RequestLabel(call, reply string) string {
	if call == "" || call == "-" {
		return ""
	}
	if c := OutcomeClass(reply); c != "" {
		return call + " " + c
	}
	return call
}

// labelCounts counts the labels of one hop (or of one pattern's roots)
// over its instances, by their symbols: a handful of distinct values
// each, so a small slice beats a map.
type labelCounts struct {
	syms   [][2]trace.Sym
	counts []int
}

// add counts one instance's label pair (a pattern root's call and reply
// labels; a hop's label and 0).
func (c *labelCounts) add(call, reply trace.Sym) int32 {
	k := [2]trace.Sym{call, reply}
	if i := slices.Index(c.syms, k); i >= 0 {
		c.counts[i]++
		return int32(i)
	}
	c.syms = append(c.syms, k)
	c.counts = append(c.counts, 1)
	return int32(len(c.syms) - 1)
}

// reset empties c, keeping its storage.
func (c *labelCounts) reset() { c.syms, c.counts = c.syms[:0], c.counts[:0] }

// top returns the most frequent label (as f renders a pair; ties go to
// the smaller rendering) and how many instances carried it; "" and 0 when
// no instance had a label.
func (c *labelCounts) top(f func(k [2]trace.Sym) string) (string, int) {
	by := make(map[string]int, len(c.syms))
	for i, k := range c.syms {
		if s := f(k); s != "" {
			by[s] += c.counts[i]
		}
	}
	best, n := "", 0
	for s, k := range by {
		if k > n || (k == n && s < best) {
			best, n = s, k
		}
	}
	return best, n
}

// RequestType is one kind of request: the patterns whose instances' roots
// carry one request label, with their instances' latency.
type RequestType struct {
	// Label is the request label (Pattern.Label); "" gathers the
	// instances without one.
	Label string `json:"label"`
	// Count is the number of instances, Expected the sum of their
	// probabilities.
	Count    int     `json:"count"`
	Expected float64 `json:"expected"`
	// Latency is the instances' latency (Pattern.Latency), in
	// microseconds, weighted by their probabilities.
	Latency *Dist `json:"latency_us,omitempty"`
	// Patterns are the ranks of the patterns whose instances it holds,
	// in rank order.
	Patterns []int `json:"patterns"`
}

// typeSample is one instance's request label and latency.
type typeSample struct {
	label  string
	lat, w float64
	bg     bool // a background instance, of no request type
}

// typeSamples returns the request label and latency of every instance
// whose samples ps holds (ps.lo == 0), before summaries reorder them.
func (a *Aggregator) typeSamples(ps *patSamples) []typeSample {
	names := make([]string, len(ps.roots.syms))
	for i, k := range ps.roots.syms {
		names[i] = RequestLabel(a.str(k[0]), a.str(k[1]))
	}
	out := make([]typeSample, len(ps.latency))
	for i, v := range ps.latency {
		w := 1.0
		if ps.latW != nil {
			w = ps.latW[i]
		}
		out[i] = typeSample{label: names[ps.rootIdx[i]], lat: v, w: w}
	}
	return out
}

// requestTypes gathers the instances of the patterns ps (their samples
// in ts, by position) by request label, most instances first; with
// sketch, each latency carries its mergeable sketch (ResultMerger).
func requestTypes(ps []Pattern, ts [][]typeSample, hist, sketch bool) []RequestType {
	idx := make(map[string]int)
	var types []RequestType
	var pts [][]sample
	// The labels met last, replaced in turn: a few labels alternate.
	var recent [8]struct {
		label string
		k     int
	}
	nrecent := 0
	for i := range ps {
		for _, s := range ts[i] {
			if s.bg {
				continue
			}
			k, ok := -1, false
			for j := range min(nrecent, len(recent)) {
				if r := &recent[j]; len(r.label) == len(s.label) && r.label == s.label {
					k, ok = r.k, true
					break
				}
			}
			if !ok {
				if k, ok = idx[s.label]; !ok {
					k = len(types)
					idx[s.label] = k
					types = append(types, RequestType{Label: s.label})
					pts = append(pts, nil)
				}
				recent[nrecent%len(recent)].label, recent[nrecent%len(recent)].k = s.label, k
				nrecent++
			}
			t := &types[k]
			t.Count++
			t.Expected += s.w
			pts[k] = append(pts[k], sample{s.lat, s.w})
			if n := len(t.Patterns); n == 0 || t.Patterns[n-1] != ps[i].Rank {
				t.Patterns = append(t.Patterns, ps[i].Rank)
			}
		}
	}
	for k := range types {
		var b *DistBuilder
		if sketch {
			b = &DistBuilder{}
			for _, s := range pts[k] {
				b.Add(s.v, s.w)
			}
			b.compact()
		}
		types[k].Latency = summarize(pts[k], hist)
		if types[k].Latency != nil {
			types[k].Latency.sketch = b
		}
	}
	slices.SortStableFunc(types, func(x, y RequestType) int {
		if x.Count != y.Count {
			return y.Count - x.Count
		}
		return strings.Compare(x.Label, y.Label)
	})
	return types
}
