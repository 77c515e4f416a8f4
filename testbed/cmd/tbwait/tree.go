package main

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// msgRef is one message of a reconstructed request, as the engine's JSON
// lists it: the trace index, the call it belongs to and the call within
// which that call was made.
type msgRef struct {
	Msg        int    `json:"msg"`
	Call       int    `json:"call"`
	CallParent int    `json:"call_parent"`
	Kind       string `json:"kind"`
}

// event is a trace message's times (ns) and ends.
type event struct {
	send, recv int64
	src, dst   string
}

// postWait is one blocking call's wait, as the calling node saw it (from
// its call's send to its answer's arrival), and the node's time from that
// arrival to its next send (ms).
type postWait struct {
	Node, Callee string
	Wait, Post   float64
}

// breakdown is where one request's time went: the transit of each link's
// messages (both ways), each node's own time (the time it held a call,
// from the call's arrival to its answer's send, less the time it waited
// on its own calls), the latency from the root call's send to its answer's
// arrival, and the post-wait samples of its sequential calls (ms).
type breakdown struct {
	Latency float64
	Transit map[string]float64
	Own     map[string]float64
	Waits   []postWait
}

// decompose splits one tree. A call without its answer adds its call's
// transit alone. A call made while another of the same caller was open
// (a fan-out) gives no post-wait sample: the time after its answer is not
// the caller's reaction to it alone.
func decompose(ms []msgRef, ev func(int) event) breakdown {
	b := breakdown{Transit: map[string]float64{}, Own: map[string]float64{}}
	calls, rets := map[int]int{}, map[int]int{}
	children := map[int][]int{}
	root := -1
	for _, m := range ms {
		if m.Kind != "CALL" {
			rets[m.Call] = m.Msg
			continue
		}
		calls[m.Call] = m.Msg
		children[m.CallParent] = append(children[m.CallParent], m.Call)
		if m.CallParent == -1 && root < 0 {
			root = m.Call
		}
	}
	if r, ok := rets[root]; ok {
		b.Latency = ms1(ev(r).recv - ev(calls[root]).send)
	}
	for _, c := range slices.Sorted(maps.Keys(calls)) {
		ce := ev(calls[c])
		b.Transit[ce.src+"->"+ce.dst] += ms1(ce.recv - ce.send)
		rm, ok := rets[c]
		if !ok {
			continue
		}
		re := ev(rm)
		b.Transit[ce.src+"->"+ce.dst] += ms1(re.recv - re.send)
		var iv [][2]int64
		sends := []int64{re.send}
		for _, ch := range children[c] {
			if r, ok := rets[ch]; ok {
				iv = append(iv, [2]int64{ev(calls[ch]).send, ev(r).recv})
			}
			sends = append(sends, ev(calls[ch]).send)
		}
		b.Own[ce.dst] += ms1(re.send - ce.recv - union(iv))
		b.Waits = append(b.Waits, postWaits(ce.dst, sends, children[c], calls, rets, ev)...)
	}
	return b
}

// postWaits lists node's post-wait samples: for each of its calls that
// overlapped no other, the time from the answer's arrival to the node's
// next send (sends: its calls' sends and its answer's).
func postWaits(node string, sends []int64, kids []int, calls, rets map[int]int, ev func(int) event) []postWait {
	slices.Sort(sends)
	var out []postWait
	for i, ch := range kids {
		r, ok := rets[ch]
		if !ok {
			continue
		}
		s, a := ev(calls[ch]).send, ev(r).recv
		if overlaps(i, s, a, kids, calls, rets, ev) {
			continue
		}
		k, _ := slices.BinarySearch(sends, a)
		if k == len(sends) {
			continue
		}
		out = append(out, postWait{Node: node, Callee: ev(calls[ch]).dst, Wait: ms1(a - s), Post: ms1(sends[k] - a)})
	}
	return out
}

// overlaps reports whether the call kids[i], open from s to a, overlapped
// another of the caller's calls.
func overlaps(i int, s, a int64, kids []int, calls, rets map[int]int, ev func(int) event) bool {
	for j, o := range kids {
		if j == i {
			continue
		}
		os, oa := ev(calls[o]).send, int64(math.MaxInt64)
		if r, ok := rets[o]; ok {
			oa = ev(r).recv
		}
		if os < a && s < oa {
			return true
		}
	}
	return false
}

// union is the length of the union of intervals (ns).
func union(iv [][2]int64) int64 {
	slices.SortFunc(iv, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var sum, s, e int64
	open := false
	for _, x := range iv {
		switch {
		case !open:
			s, e, open = x[0], x[1], true
		case x[0] <= e:
			e = max(e, x[1])
		default:
			sum += e - s
			s, e = x[0], x[1]
		}
	}
	if open {
		sum += e - s
	}
	return sum
}

func ms1(ns int64) float64 { return float64(ns) / 1e6 }

// fit is a least-squares line y = a + b·x with b's standard error.
type fit struct {
	N        int
	A, B, SE float64
	MeanX    float64
}

// olsFit fits y on x; fewer than three points or no spread in x give N
// and a flat line at y's mean.
func olsFit(x, y []float64) fit {
	n := len(x)
	f := fit{N: n}
	if n == 0 {
		return f
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	f.MeanX, f.A = mx, my
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if n < 3 || sxx == 0 {
		return f
	}
	f.B = sxy / sxx
	f.A = my - f.B*mx
	var res float64
	for i := range x {
		d := y[i] - f.A - f.B*x[i]
		res += d * d
	}
	f.SE = math.Sqrt(res / float64(n-2) / sxx)
	return f
}
