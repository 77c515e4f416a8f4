package assembly

import (
	"slices"
)

// A timer behind a busy pool. A health check, a refresh or a ping that
// shares a small connection pool with the node's requests waits for a
// connection like any of their calls: the timer fires a period after the
// last call (or its reply), and the call leaves when a connection is
// freed, up to milliseconds later. The intervals between its calls are
// then the period plus a wait — never shorter than the period, spread
// above it — and no longer within beatWidth of their median (the unseen
// background system at 16 requests in flight: the web tier's health
// checks every 5 ms, 56 of 57 handed a connection just freed, intervals
// 5.0 / 5.9 / 6.9 / 7.9 / 8.8 ms at 5 / 25 / 50 / 75 / 95 %). What is
// left of the rhythm is its floor: a timer does not fire twice within
// its period, where a kind of call that requests make, arriving on their
// own, leaves intervals of every length down to zero (the same trace's
// requests' database reads: 5th percentile 0.08 of the median; the
// health checks' 0.72, the database pings' 0.82). Such a rhythm is
// broader than a beat and gains fewer nats an interval over the
// exponential (1.5 for the pings), so it is taken at a lower gain, once
// its floor is shown.
const (
	// floorShare is the share of the median below which at most
	// floorMiss of a timer's intervals fall.
	floorShare = 0.5
	// floorMiss is the share of intervals allowed below the floor (a
	// second source, a beat fired early).
	floorMiss = 0.05
	// minFloorGain is minRhythmGain for a rhythm shown by its floor.
	minFloorGain = 1.0
)

// onFloor reports whether the intervals gs are a timer's behind a pool:
// all but floorMiss of them at least floorShare of their median, which
// is at least beatSpread of their mean.
func onFloor(gs []int64) bool {
	if len(gs) == 0 {
		return false
	}
	s := slices.Clone(gs)
	slices.Sort(s)
	med := float64(s[len(s)/2])
	sum := 0.0
	below := 0
	for _, g := range s {
		sum += float64(g)
		if float64(g) < floorShare*med {
			below++
		}
	}
	if med < beatSpread*sum/float64(len(s)) {
		return false
	}
	return float64(below) <= floorMiss*float64(len(s))
}

// rhythmGate returns whether the intervals gs may have a rhythm and the
// gain an interval its density must reach: on a floor, where the calls
// waited for a pooled connection (pooled), minFloorGain (a beat blurred
// by the waits can still be within beatWidth of its median half the
// time); on a beat minRhythmGain.
func rhythmGate(gs []int64, pooled bool) (bool, float64) {
	switch {
	case pooled && onFloor(gs):
		return true, minFloorGain
	case onBeat(gs):
		return true, minRhythmGain
	}
	return false, 0
}

// mostHanded reports whether at least half of the calls cs were handed a
// serial connection just freed (handoffs): calls that may have waited
// for one.
func (r *run) mostHanded(cs []int32) bool {
	h := 0
	for _, c := range cs {
		if r.freed[c] != noTime {
			h++
		}
	}
	return 2*h >= len(cs) && h > 0
}
