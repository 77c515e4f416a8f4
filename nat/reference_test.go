package nat

import (
	"math"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// refLearn is a slow, readable restatement of the Learner's matching: for
// every packet it looks back over all earlier packets instead of keeping a
// window index, and it keeps no free lists or rings. It supports inputs in
// time order with no TCP SYN, FIN or RST and no connection idle for the
// idle timeout (so no connection ends and none restarts). It returns the
// counters and, per link, the accumulated match figures.
func refLearn(pkts []pcapio.Packet, opts Options) (Stats, map[linkKey]*link) {
	var st Stats
	W := int64(opts.Window)
	type obs struct {
		key     connKey
		srcSlot uint8
		ts      int64
		sig     uint64
		ttlMin  uint8
		ttlMax  uint8
		body    uint64
	}
	var seen []obs            // observed packets so far
	var paired []bool         // per seen packet: matched already
	start := map[uint64]int{} // per body key: index in seen where its entry began
	repeatedEntry := map[uint64]bool{}
	recent := map[connKey][]uint64{}
	sinceMatch := map[connKey]uint32{}
	links := map[linkKey]*link{}

	// copiesAt returns the copies the window holds for body key b when the
	// packet at index i arrives: the last maxCopies earlier packets of the
	// entry, not older than the window.
	entryHist := func(i int, b uint64) []int {
		var h []int
		for j := start[b]; j < i; j++ {
			if seen[j].body == b {
				h = append(h, j)
			}
		}
		return h
	}
	copiesAt := func(i int, hist []int) []int {
		var cs []int
		for _, j := range hist {
			if j < i {
				cs = append(cs, j)
			}
		}
		if len(cs) > maxCopies {
			cs = cs[len(cs)-maxCopies:]
		}
		cutoff := seen[i].ts - W
		var out []int
		for _, j := range cs {
			if seen[j].ts >= cutoff {
				out = append(out, j)
			}
		}
		return out
	}

	for pi := range pkts {
		p := &pkts[pi]
		st.Packets++
		switch {
		case p.Status != pcapio.StatusOK || len(p.Obs) == 0:
			st.NotIP++
			continue
		case p.IsFragment():
			st.Fragments++
			continue
		case !translatable(p):
			st.NotTranslatable++
			continue
		}
		st.Observed++
		key, srcSlot := connOf(p)
		sig, tmin, tmax := observed(p.Obs)
		o := obs{key, srcSlot, p.TS(), sig, tmin, tmax, p.BodyKey}
		i := len(seen)
		seen = append(seen, o)
		paired = append(paired, false)
		sinceMatch[key]++

		repeat := false
		if p.Proto != pcapio.ProtoTCP {
			r := recent[key]
			if slices.Contains(r[max(0, len(r)-8):], p.BodyKey) {
				repeat = true
			} else {
				recent[key] = append(r, p.BodyKey)
			}
		}

		// The entry of this body key begins anew when none of its packets
		// is within the window any more.
		if _, ok := start[p.BodyKey]; !ok {
			start[p.BodyKey] = i
		}
		hist := entryHist(i, p.BodyKey)
		alive := false
		for _, j := range hist {
			if seen[j].ts >= o.ts-W {
				alive = true
			}
		}
		if !alive {
			start[p.BodyKey] = i
			hist = nil
			repeatedEntry[p.BodyKey] = false
		}
		all := append(slices.Clone(hist), i)
		var views []connKey
		for _, k := range all {
			if !slices.Contains(views, seen[k].key) {
				views = append(views, seen[k].key)
			}
		}
		ambiguous := len(views) > 2
		// The entry is repeated from the first packet that found a copy of
		// its own connection in the window.
		for _, c := range copiesAt(i, all) {
			if seen[c].key == o.key {
				repeatedEntry[p.BodyKey] = true
			}
		}
		repeated := repeatedEntry[p.BodyKey]
		partner := -1
		for _, c := range copiesAt(i, all) {
			if seen[c].key != o.key && !paired[c] {
				partner = c
				break
			}
		}
		if partner < 0 {
			continue
		}
		st.Candidates++
		q := seen[partner]
		ta := &copyRec{ttlMin: q.ttlMin, ttlMax: q.ttlMax}
		tb := &copyRec{ttlMin: o.ttlMin, ttlMax: o.ttlMax}
		switch {
		case ambiguous:
			st.RejectedAmbiguous++
			continue
		case q.key.v6 != o.key.v6:
			st.RejectedFamily++
			continue
		case q.sig == o.sig && ttlTie(ta, tb):
			st.RejectedSameCapture++
			continue
		case ttlGap(ta, tb) > maxTTLGap:
			st.RejectedTTLGap++
			continue
		}
		paired[partner], paired[i] = true, true
		st.Matches++

		// The link, with a the lower view.
		a, b := q, o
		if b.key.cmp(a.key) < 0 {
			a, b = b, a
		}
		lk := linkKey{v: [2]connKey{a.key, b.key}, crossed: a.srcSlot != b.srcSlot}
		L := links[lk]
		if L == nil {
			L = &link{key: lk, client: -1}
			links[lk] = L
		}
		// The copy whose TTLs are higher at both ends of their range was
		// seen first. When neither is, the time difference is kept, per
		// direction, for Finish.
		aFirst, byTTL := false, false
		aHigher := a.ttlMin >= b.ttlMin && a.ttlMax >= b.ttlMax && (a.ttlMin != b.ttlMin || a.ttlMax != b.ttlMax)
		bHigher := b.ttlMin >= a.ttlMin && b.ttlMax >= a.ttlMax && (a.ttlMin != b.ttlMin || a.ttlMax != b.ttlMax)
		switch {
		case aHigher:
			aFirst, byTTL = true, true
		case bHigher:
			byTTL = true
		default:
			L.byTime++
			L.tieDelta[a.srcSlot] += a.ts - b.ts
			L.tieN[a.srcSlot]++
		}
		if byTTL {
			L.byTTL++
			for s := 0; s < 2; s++ {
				t := s
				if lk.crossed {
					t = 1 - s
				}
				if a.key.ep[s] == b.key.ep[t] {
					continue
				}
				towardS := s != int(a.srcSlot) // the packet went to slot s
				if aFirst == towardS {
					L.vote[s] += voteTTL
				} else {
					L.vote[s] -= voteTTL
				}
				L.absVote[s] += voteTTL
			}
		}
		data := p.PayloadLen > 0
		random := p.IPVersion == 4 && p.IPID != 0
		if p.Proto == pcapio.ProtoTCP {
			random = p.Seq >= randomSeqCeiling || p.Ack >= randomSeqCeiling
		}
		w := 0.0
		if repeat || repeated {
			L.repeats++
			st.RepeatedBodies++
		} else if !byTTL {
			if data && random {
				w = weightData / 2
			}
		} else if data && random {
			w = weightData
		} else if data {
			w = weightDataPlain
		} else if random {
			w = weightBare
		}
		L.evidence += w
		if data && !(repeat || repeated) {
			L.data++
			if random {
				L.random++
			}
			L.dataWay[a.srcSlot]++ // data sent by this end
		}
		if L.matches > 0 {
			L.gap[0] += max(sinceMatch[a.key], 1) - 1
			L.gap[1] += max(sinceMatch[b.key], 1) - 1
		}
		sinceMatch[a.key], sinceMatch[b.key] = 0, 0
		L.matches++
	}
	st.Links = int64(len(links))
	return st, links
}

// compareWithReference runs the Learner and refLearn on pkts and reports
// every difference in the counters and the links.
func compareWithReference(t *testing.T, pkts []pcapio.Packet, opts Options) {
	t.Helper()
	l := NewLearner(opts)
	for i := range pkts {
		l.Observe(&pkts[i])
	}
	got := l.Stats()
	want, wantLinks := refLearn(pkts, opts)
	type counters struct {
		Packets, NotIP, Fragments, NotTranslatable, Observed, Candidates, Matches int64
		Ambiguous, SameCapture, Family, TTLGap, Repeated, Links                   int64
	}
	cnt := func(s Stats) counters {
		return counters{s.Packets, s.NotIP, s.Fragments, s.NotTranslatable, s.Observed, s.Candidates, s.Matches,
			s.RejectedAmbiguous, s.RejectedSameCapture, s.RejectedFamily, s.RejectedTTLGap, s.RepeatedBodies, s.Links}
	}
	if cnt(got) != cnt(want) {
		t.Fatalf("counters differ\n got %+v\nwant %+v", cnt(got), cnt(want))
	}
	for i := range l.links {
		g := &l.links[i]
		w := wantLinks[g.key]
		if w == nil {
			t.Fatalf("link %v not in the reference", g.key)
		}
		same := g.matches == w.matches && g.data == w.data && g.random == w.random && g.repeats == w.repeats &&
			math.Abs(g.evidence-w.evidence) < 1e-9 && g.vote == w.vote && g.absVote == w.absVote &&
			g.byTTL == w.byTTL && g.byTime == w.byTime && g.gap == w.gap && g.dataWay == w.dataWay &&
			g.tieDelta == w.tieDelta && g.tieN == w.tieN
		if !same {
			t.Fatalf("link %d differs\n got matches=%d data=%d random=%d repeats=%d ev=%v vote=%v abs=%v ttl=%d time=%d gap=%v way=%v\nwant matches=%d data=%d random=%d repeats=%d ev=%v vote=%v abs=%v ttl=%d time=%d gap=%v way=%v",
				i, g.matches, g.data, g.random, g.repeats, g.evidence, g.vote, g.absVote, g.byTTL, g.byTime, g.gap, g.dataWay,
				w.matches, w.data, w.random, w.repeats, w.evidence, w.vote, w.absVote, w.byTTL, w.byTime, w.gap, w.dataWay)
		}
	}
}

// TestMatchesReference compares the Learner with refLearn on the simulated
// load balancer (without the SYN/FIN the reference does not model) and on
// the adversarial traffic.
func TestMatchesReference(t *testing.T) {
	strip := func(pkts []pcapio.Packet) []pcapio.Packet {
		out := make([]pcapio.Packet, 0, len(pkts))
		for _, p := range pkts {
			if p.Proto == pcapio.ProtoTCP && p.TCPFlags&(pcapio.FlagSYN|pcapio.FlagFIN|pcapio.FlagRST) != 0 {
				continue
			}
			out = append(out, p)
		}
		return out
	}
	opts := DefaultOptions()
	opts.IdleTimeout = 1000 * opts.Window
	s, _ := lbScenario(21, 40, false)
	lb, _ := s.sorted()
	cases := map[string][]pcapio.Packet{
		"load-balancer": strip(lb),
		"heartbeats":    sortByTime(heartbeats(false)),
		"pure-acks":     sortByTime(pureACKs()),
		"twins":         sortByTime(twins(64, 63)),
		"fanout":        sortByTime(fanout(false)),
	}
	for name, pkts := range cases {
		t.Run(name, func(t *testing.T) { compareWithReference(t, pkts, opts) })
	}
}
