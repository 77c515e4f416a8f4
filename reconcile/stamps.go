package reconcile

// cand is one candidate timestamp of a message end: when, on which clock
// domain (-1: none).
type cand struct {
	ts  int64
	dom int32
}

// Candidate slots, best first.
const (
	slotHome     = iota // the end's home capture point saw the whole message
	slotTrace           // the traced process's own call
	slotSide            // another capture point on the end's side saw it whole
	slotHomePart        // the home point saw part of it
	slotSidePart        // another point on the end's side saw part of it
	numSlots
)

// stamps returns the candidate timestamps of the send and the receive of
// lm, best first. A logical message that is only part of a sniffed message
// (several writes in one, BoundWrites) takes the traced times first unless
// raw is set: the sniffed first and last times belong to the whole.
func (r *Reconciler) stamps(st *state, lm *lmsg, raw bool) (send, recv [numSlots]cand) {
	for i := range send {
		send[i].dom, recv[i].dom = -1, -1
	}
	if lm.sa.ok() {
		send[slotTrace] = cand{lm.sa.ts(), st.hostDomain(lm.sa.c.Host)}
	}
	if lm.rb.ok() {
		recv[slotTrace] = cand{lm.rb.end(), st.hostDomain(lm.rb.c.Host)}
	}
	partial := (lm.fa >= 0 && !lm.faStart) || (lm.fb >= 0 && !lm.fbEnd)
	if !raw && (partial || st.remoteHome(lm.hs)) {
		send[slotHome], send[slotTrace] = send[slotTrace], cand{dom: -1}
	}
	if !raw && (partial || st.remoteHome(lm.hr)) {
		recv[slotHome], recv[slotTrace] = recv[slotTrace], cand{dom: -1}
	}
	ttl, seenPair := st.ttlOf(lm.hs, lm.hr)
	if lm.faStart {
		r.sniffedStamps(&send, st, lm.fa, lm.hs, seenPair, ttl[0], true)
	}
	if lm.fbEnd {
		r.sniffedStamps(&recv, st, lm.fb, lm.hr, seenPair, ttl[1], false)
	}
	return send, recv
}

// sniffedStamps fills the sniffer slots of one end of a message from the
// sightings of sniffed message f: the first times for the send (first
// set), the last times for the receive. The home point of host h goes to
// the home slots; another point that saw the message with sideTTL (on the
// end's side of the routers) to the side slots, the earliest first time or
// the latest last time among them.
func (r *Reconciler) sniffedStamps(cs *[numSlots]cand, st *state, f int32, h int32, seenPair bool, sideTTL uint8, first bool) {
	home := int32(-1)
	if h >= 0 {
		home = st.ht.hosts[h].home
	}
	for _, s := range r.sightsOf(&r.msgs[f]) {
		c := cand{s.last, int32(r.points[s.point].Sniffer)}
		if first {
			c.ts = s.first
		}
		switch {
		case int32(s.point) == home:
			if s.full && cs[slotHome].dom < 0 {
				cs[slotHome] = c
			} else if !s.full {
				cs[slotHomePart] = c
			}
		case seenPair && s.ttl == sideTTL:
			slot := slotSide
			if !s.full {
				slot = slotSidePart
			}
			if cs[slot].dom < 0 || (first && c.ts < cs[slot].ts) || (!first && c.ts > cs[slot].ts) {
				cs[slot] = c
			}
		}
	}
}

// ttlOf returns st.pairTTL of (sender host hs, receiver host hr) and
// whether the pair has one, remembering the last answer: consecutive
// messages (a connection's) mostly ask for the same pair.
func (st *state) ttlOf(hs, hr int32) ([2]uint8, bool) {
	k := [2]int32{hs, hr}
	if st.ttlMemo.ok && st.ttlMemo.k == k {
		return st.ttlMemo.v, st.ttlMemo.seen
	}
	v, seen := st.pairTTL[k]
	st.ttlMemo = ttlMemo{ok: true, k: k, v: v, seen: seen}
	return v, seen
}

// ttlMemo is the last answer of state.ttlOf.
type ttlMemo struct {
	ok, seen bool
	k        [2]int32
	v        [2]uint8
}

// remoteHome reports whether host h's home point is across a router from
// it (so its traced calls, where it has them, are nearer its ends).
func (st *state) remoteHome(h int32) bool {
	return h >= 0 && st.ht.hosts[h].remote
}

func best(cs *[numSlots]cand) cand {
	for _, c := range cs {
		if c.dom >= 0 {
			return c
		}
	}
	return cand{dom: -1}
}
