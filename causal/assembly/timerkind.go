package assembly

// A kind of call that only a timer makes. kindRhythms finds, before any
// assignment, the kinds whose calls all together keep a timer's rhythm
// that the node's requests do not explain: a health check, a ping with a
// label of its own. The renewal model scores each of their calls as
// background (scoreRhythm), but the search still weighs that against
// the request that could hold it, and the request's side is learnt from
// the last pass: where the node is never idle the first pass had no
// background rate to leave them out by, hung them under requests, and
// the call graph and delays learnt from those requests then held them
// there pass after pass (the unseen background system at 16 requests in
// flight: 28 of the web tier's 57 health checks, each read as the next
// call of the request whose own call had just freed the connection, at
// the handoff's delay of 0 ns the same requests had taught). A kind all
// of whose calls are a timer's is no request's: where most of its calls
// were handed a connection (the timers a pool hides), the fit reads them
// as background whatever the assignment, so that no request learns to
// make them, and the search is left their rhythm against the requests'
// own calls. Elsewhere the renewal score alone speaks for them: a whole
// kind's rhythm can also be requests' calls at a fixed delay after
// periodic arrivals that kindRhythms does not see as a beat (two
// arrivals every 10 ms, TestSoftFitRecoversMixture), and there the fit
// must still learn their delays.

// timerAsg returns asg with the calls of node n's kinds that only a
// timer makes (kindRhythms) and that mostly waited for a pooled
// connection (mostHanded) read as background.
func (r *run) timerAsg(n int32, asg func(int32) int32) func(int32) int32 {
	whole := r.kindRhythms(n)
	if len(whole) == 0 {
		return asg
	}
	var timer map[int32]bool
	for k, cs := range r.callsByKind(n) {
		if whole[k] != nil && r.mostHanded(cs) {
			if timer == nil {
				timer = map[int32]bool{}
			}
			timer[k] = true
		}
	}
	if timer == nil {
		return asg
	}
	return func(c int32) int32 {
		if timer[r.calls[c].kind] {
			return -1
		}
		return asg(c)
	}
}
