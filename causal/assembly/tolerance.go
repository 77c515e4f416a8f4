package assembly

import (
	"math"
	"slices"

	"github.com/wirepath/wirepath/trace"
)

// The clock error learnt from the trace (issue 11).
//
// A child call may be sent up to the tolerance before its parent's
// arrival and answered up to it after its parent's reply left. Where the
// trace states every node's clock offset (reconcile's, from captures)
// the tolerance is the largest stated uncertainty (statedTolerance).
// Where it does not (generated traces, a node no capture point timed),
// it is learnt per node from the links the trace makes certain whatever
// the tolerance up to --clock-error: a call with one candidate request
// only, or one candidate carrying its propagated request id, or one
// served by the thread that sent it, found with the widest tolerance. A
// certain link's violation is how far its call left before its request
// arrived, or came back after its request's reply left (negative: it
// fitted with room to spare). Clock error between the clocks whose times
// a node compares shows as violations packed below it, on many links;
// chance (a background call, or an unseen parent, taken for certain)
// as violations spread evenly up to the widest tolerance, on a few
// (clockViolation). A node with fewer than tolMinLinks certain links
// takes the trace's pooled estimate (every node's certain links
// together); a trace with fewer than that keeps --clock-error. The
// tolerance is at least the floor (tolFloor): with exact timestamps a
// node's times are its own clock's, and it learns a microsecond.

// tolMinLinks is the fewest certain links a tolerance is learnt from.
const tolMinLinks = 30

// tolSupport is the fewest violations a learnt tolerance covers: one
// lone violation (a background call in a window with one request open,
// taken for certain) does not set it.
const tolSupport = 3

// tolChance is the most of a node's certain links that chance (a
// background call, an unseen parent) makes violate: on the generated
// system with periodic background work, 14 of its server's 398 certain
// links (3.5 %) violate, evenly up to 100 µs, with no clock error.
const tolChance = 0.05

// tolGain is the log-likelihood, in nats, by which violations packed
// below a tolerance must beat violations spread evenly (chance) for the
// tolerance to be learnt from them.
const tolGain = 6

// tolMargin widens the learnt violation: the largest of a sample
// underestimates the largest of the population.
const tolMargin = 1.5

// How a node's tolerance was found (tolState.from).
const (
	tolFixed  uint8 = iota // --clock-error: nothing stated, too few certain links
	tolStated              // the trace's stated clock offsets
	tolLearnt              // the node's own certain links
	tolPooled              // the certain links of every node
)

// tolState is the tolerance of every node and how it was found.
type tolState struct {
	at     []int64 // by node; nil when one tolerance, run.tol, holds everywhere
	from   []uint8 // by node
	links  int64   // certain links measured
	stated bool    // the trace stated every offset
	// model is how far after a message the first model's deconvolution
	// (deconv.go) still counts a trigger as its possible cause, and how
	// far before it a message still follows a trigger: the tolerance
	// before any was learnt (--clock-error, or the stated one). Learnt (a
	// microsecond), calls handed a pooled connection the instant another
	// request's reply freed it made a sharp peak at zero delay after
	// replies, which the first model took for causation: the
	// testbed-shaped generated trace with ids at 64 in flight had its web
	// tier's calls 3 % right instead of 98 %.
	model int64
}

// tolAt returns the tolerance at node n: for its requests' windows and
// the calls it makes.
func (r *run) tolAt(n int32) int64 {
	if r.tols.at != nil {
		return r.tols.at[n]
	}
	return r.tol
}

// tolFloor is the least tolerance learnt: MinTolerance, or the
// timestamps' resolution where a tick's events are not spread (two
// events of one tick tie whatever happened first).
func (r *run) tolFloor() int64 {
	f := int64(MinTolerance)
	if r.l.sendSp == nil {
		f = max(f, r.l.res)
	}
	return f
}

// learnTolerances sets r.tols, and r.tol to the largest tolerance of any
// node, when the trace does not state its clock error and
// LearnClockError is on; otherwise every node keeps r.tol.
func (r *run) learnTolerances(stated bool) {
	nn := len(r.l.nodeSym)
	r.tols.stated = stated
	r.tols.model = r.tol
	if stated || !r.opt.LearnClockError {
		return
	}
	vs := make([][]int64, nn)
	var all []int64
	for n := range nn {
		if len(r.childrenOf[n]) == 0 || len(r.parentsOf[n]) == 0 {
			continue
		}
		vs[n] = r.violations(int32(n))
		all = append(all, vs[n]...)
	}
	r.tols.links = int64(len(all))
	if len(all) < tolMinLinks {
		return
	}
	floor, cap := r.tolFloor(), r.tol
	pooled := clockViolation(all, floor, cap)
	r.tols.at = make([]int64, nn)
	r.tols.from = make([]uint8, nn)
	r.tol = floor
	for n := range nn {
		t, from := pooled, tolPooled
		if len(vs[n]) >= tolMinLinks {
			t, from = clockViolation(vs[n], floor, cap), tolLearnt
		}
		r.tols.at[n], r.tols.from[n] = t, from
		if len(r.childrenOf[n]) > 0 && len(r.parentsOf[n]) > 0 {
			r.tol = max(r.tol, t)
		}
	}
}

// clockViolation returns the tolerance a node's certain links' violations
// vs ask for, between floor and cap. Links that a background call or an
// unseen parent made look certain violate by anything up to cap, evenly;
// clock error shows as violations packed below it. So the positive
// violations are read as a mixture: a share a of them even on (0, t]
// (clock error of at most t), the rest even on (0, cap] (chance), and t
// is the one under which the mixture is likeliest against chance alone.
// It is kept, widened by tolMargin, when that gain passes tolGain nats
// and at least tolSupport violations lie below it; else the violations
// are chance's and the tolerance is the floor. Either way it covers all
// but tolChance of the links: chance does not make more violate (a
// clock error beyond the widest tolerance spreads its violations over
// all of it).
func clockViolation(vs []int64, floor, cap int64) int64 {
	var pos []float64
	for _, v := range vs {
		if v > 0 {
			pos = append(pos, float64(min(v, cap)))
		}
	}
	if len(pos) < tolSupport {
		return floor
	}
	slices.Sort(pos)
	m, c := float64(len(pos)), float64(cap)
	best, bestT := 0.0, 0.0
	for j := tolSupport - 1; j < len(pos); j++ {
		t := pos[j]
		if t >= c {
			break
		}
		k := float64(j + 1)
		u := 1/t - 1/c
		a := min(1, max(0, k/m-(m-k)/(m*u*c)))
		gain := k * math.Log1p(a*u*c)
		if a < 1 {
			gain += (m - k) * math.Log1p(-a)
		}
		if gain > best {
			best, bestT = gain, t
		}
	}
	t := 0.0
	if best >= tolGain {
		t = bestT
	}
	// chance explains few violations: beyond tolChance of the links, the
	// violations are the clock's however they are spread
	if allowed := int(tolChance * float64(len(vs))); len(pos) > allowed {
		t = max(t, pos[len(pos)-allowed-1])
	}
	if t == 0 {
		return floor
	}
	return min(cap, max(floor, int64(t*tolMargin)))
}

// violations returns the violation of every certain link of the calls
// node n makes, found with the tolerance r.tol (the widest).
func (r *run) violations(n int32) []int64 {
	var vs []int64
	r.sweepTimes(n, func(c int32, cands []int32) {
		p := r.certain(c, cands)
		if p < 0 {
			return
		}
		cc, pc := &r.calls[c], &r.calls[p]
		v := int64(-1 << 62)
		if s := r.sendOf(c); s != noTime && pc.callMsg >= 0 && pc.arr != noTime {
			v = max(v, pc.arr-s)
		}
		if cc.retMsg >= 0 && cc.back != noTime && pc.retMsg >= 0 && pc.rep != noTime &&
			cc.flags&flagOneWay == 0 && pc.flags&flagOneWay == 0 {
			v = max(v, cc.back-pc.rep)
		}
		if v > -1<<62 {
			vs = append(vs, v)
		}
	})
	return vs
}

// certain returns the request the trace makes certain for call c among
// its candidates cands, -1 when none: the only candidate, the only one
// carrying c's propagated request id, or the only one served by the
// thread that sent c.
func (r *run) certain(c int32, cands []int32) int32 {
	if len(cands) == 1 {
		return cands[0]
	}
	cm := r.callMessage(c)
	if cm == nil || len(cands) == 0 {
		return -1
	}
	one := func(match func(p int32) bool) int32 {
		got := int32(-1)
		for _, p := range cands {
			if match(p) {
				if got >= 0 {
					return -1
				}
				got = p
			}
		}
		return got
	}
	if cm.ReqID != 0 {
		if p := one(func(p int32) bool {
			pm := r.callMessage(p)
			return pm != nil && pm.ReqID == cm.ReqID
		}); p >= 0 {
			return p
		}
	}
	if cm.Sender.Known() {
		return one(func(p int32) bool { return r.servedBy(p, cm.Sender) })
	}
	return -1
}

// tolCounts are the accounting's counters of the tolerance.
func (r *run) tolCounts() (lo, hi int64, byFrom [4]int64) {
	lo, hi = r.tol, r.tol
	if r.tols.at == nil {
		from := tolFixed
		if r.tols.stated {
			from = tolStated
		}
		byFrom[from] = int64(len(r.l.nodeSym))
		return lo, hi, byFrom
	}
	lo = hi
	for n, t := range r.tols.at {
		if len(r.childrenOf[n]) > 0 && len(r.parentsOf[n]) > 0 {
			lo = min(lo, t)
		}
		byFrom[r.tols.from[n]]++
	}
	return lo, hi, byFrom
}

// statesClock reports whether statedTolerance took the trace's stated
// clock error: the option is on and every node's offset is known.
func statesClock(opt Options, ms trace.Messages) bool {
	meta := ms.Metadata()
	if !opt.StatedClockError || meta == nil || len(meta.Offsets) == 0 {
		return false
	}
	for _, o := range meta.Offsets {
		if !o.Known {
			return false
		}
	}
	return true
}
