package nat

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// The phases of Learner.Finish after learning: links are grouped into
// translation rules (aggregateRules), each rule judged against the
// thresholds (judge), the accepted links turned into the rename table
// (buildApply), and the sniffer clocks read from the translated copies
// (clockOffsets).

// ruleKey groups links into mappings.
type ruleKey struct {
	out, in   endpoint
	proto     uint8
	v6        bool
	kind      Kind
	anyPort   bool
	undecided bool
}

// ruleAgg is one candidate mapping and the figures its links add up to.
type ruleAgg struct {
	m             Mapping
	agree, total  float64
	cmatch, cgap  float64
	byTTL, byTime int
	accepted      bool
	firstSet      bool
}

// slotRule is what one slot of a link whose name changes says: the rule
// it belongs to, whether the direction votes decided which name is
// outside, whether which end opened the connection is known and whether
// this slot did, and, for an AnyPort rule, whether it kept its port.
type slotRule struct {
	key            ruleKey
	decided, known bool
	client, kept   bool
}

// aggregateRules finishes every link's votes and adds each changed slot
// of it to its rule, in the order the rules are first met.
func (l *Learner) aggregateRules() []ruleAgg {
	var rules []ruleAgg
	ruleIdx := make(map[ruleKey]int)
	for i := range l.links {
		L := &l.links[i]
		L.applied = false
		L.finishVotes()
		for s := 0; s < 2; s++ {
			L.rule[s] = -1
			sr, ok := L.slotRule(s)
			if !ok {
				continue
			}
			ri, found := ruleIdx[sr.key]
			if !found {
				ri = len(rules)
				ruleIdx[sr.key] = ri
				rules = append(rules, ruleAgg{m: sr.mapping()})
			}
			rules[ri].add(L, s, sr.kept)
			L.rule[s] = int32(ri)
		}
	}
	return rules
}

// other returns the slot of v[1] that slot s of v[0] corresponds to.
func (L *link) other(s int) int {
	if L.key.crossed {
		return 1 - s
	}
	return s
}

// slotRule returns the rule of slot s of v[0], false when its name does
// not change. The outside name is the one the votes say (undecided: the
// lower); the kind follows from who opened the connection.
func (L *link) slotRule(s int) (slotRule, bool) {
	v0, v1 := L.key.v[0], L.key.v[1]
	tt := L.other(s)
	a, b := v0.ep[s], v1.ep[tt]
	if a == b {
		return slotRule{}, false
	}
	sr := slotRule{key: ruleKey{proto: v0.proto, v6: v0.v6}, decided: L.fvote[s] != 0}
	var inside endpoint // the slot's inside name, and its peer's
	var peer endpoint
	switch {
	case !sr.decided:
		sr.key.undecided = true
		sr.key.out, sr.key.in = a, b
		if b.cmp(a) < 0 {
			sr.key.out, sr.key.in = b, a
		}
	case L.fvote[s] > 0:
		sr.key.out, sr.key.in = a, b
		inside, peer = v1.ep[tt], v1.ep[1-tt]
	default:
		sr.key.out, sr.key.in = b, a
		inside, peer = v0.ep[s], v0.ep[1-s]
	}
	sr.client, sr.known = L.opened(s, sr.decided, inside.port, peer.port)
	switch {
	case a.ip == b.ip:
		sr.key.kind = KindPort
	case !sr.known:
		sr.key.kind = KindUnknown
	case sr.client:
		sr.key.kind = KindSNAT
	default:
		sr.key.kind = KindDNAT
	}
	if sr.decided && sr.known && sr.client && hasPorts(sr.key.proto) {
		sr.key.anyPort = true
		sr.kept = sr.key.out.port == sr.key.in.port
		sr.key.out.port, sr.key.in.port = 0, 0
	}
	return sr, true
}

// opened says whether slot s is the end that opened the connection, and
// whether that is known: from a SYN or an echo request, else, once the
// direction is decided, from the ports seen inside (the higher is the
// client's ephemeral one).
func (L *link) opened(s int, decided bool, port, peerPort uint16) (client, known bool) {
	switch {
	case L.client >= 0:
		return int(L.client) == s, true
	case decided:
		return port > peerPort, port != peerPort
	}
	return false, false
}

// mapping is the row a new rule starts as.
func (sr *slotRule) mapping() Mapping {
	rk := sr.key
	m := Mapping{Proto: rk.proto, Kind: rk.kind, Outside: rk.out.addrPort(rk.v6), Inside: rk.in.addrPort(rk.v6), AnyPort: rk.anyPort}
	if sr.decided && sr.known {
		m.Direction = "outside->inside"
		if sr.client {
			m.Direction = "inside->outside"
		}
	}
	if rk.undecided {
		m.Reason = "direction undecided"
	}
	return m
}

// add adds slot s of link L to the rule.
func (r *ruleAgg) add(L *link, s int, kept bool) {
	if kept {
		r.m.PortsKept++
	}
	r.m.Conns++
	r.m.Matches += int(L.matches)
	r.m.DataMatches += int(L.data)
	r.m.RandomMatches += int(L.random)
	if L.dataWay[0] > 0 && L.dataWay[1] > 0 {
		r.m.TwoWay++
	}
	r.m.Evidence += L.evidence
	r.agree += (L.fabs[s] + math.Abs(L.fvote[s])) / 2
	r.total += L.fabs[s]
	r.cmatch += float64(L.matches)
	r.cgap += float64(min(L.gap[0], L.gap[1]))
	r.byTTL += int(L.byTTL)
	r.byTime += int(L.byTime)
	if !r.firstSet || L.first < r.m.FirstNS {
		r.m.FirstNS = L.first
	}
	r.m.LastNS = max(r.m.LastNS, L.last)
	r.firstSet = true
}

// judge scores the rule (Agreement, Coverage, Score, DecidedBy) and
// accepts it, or says why not.
func (l *Learner) judge(r *ruleAgg) {
	m := &r.m
	if r.total > 0 {
		m.Agreement = r.agree / r.total
	}
	if r.cmatch > 0 {
		m.Coverage = r.cmatch / (r.cmatch + r.cgap)
	}
	m.Score = (1 - math.Exp(-m.Evidence/3)) * m.Agreement * m.Coverage
	switch {
	case r.byTTL > 0 && r.byTime > 0:
		m.DecidedBy = "ttl+time"
	case r.byTTL > 0:
		m.DecidedBy = "ttl"
	case r.byTime > 0:
		m.DecidedBy = "time"
	}
	switch {
	case m.Reason != "":
	case m.DataMatches < l.opts.MinData:
		m.Reason = fmt.Sprintf("%d data matches, need %d", m.DataMatches, l.opts.MinData)
	case m.RandomMatches == 0 && m.TwoWay == 0:
		m.Reason = "no data match with a random field, and data crossed one way only"
	case m.Evidence < l.opts.MinEvidence:
		m.Reason = fmt.Sprintf("evidence %.2f, need %.2f", m.Evidence, l.opts.MinEvidence)
	case m.Score < l.opts.MinScore:
		m.Reason = fmt.Sprintf("score %.2f, need %.2f", m.Score, l.opts.MinScore)
	default:
		r.accepted = true
	}
}

func sortMappings(ms []Mapping) {
	slices.SortStableFunc(ms, func(a, b Mapping) int {
		return cmp.Or(
			cmp.Compare(a.Proto, b.Proto),
			cmp.Compare(a.Kind, b.Kind),
			a.Outside.Addr().Compare(b.Outside.Addr()),
			cmp.Compare(a.Outside.Port(), b.Outside.Port()),
			a.Inside.Addr().Compare(b.Inside.Addr()),
			cmp.Compare(a.Inside.Port(), b.Inside.Port()),
		)
	})
}

// applyCand is a link that may be applied, with the rename of each of
// its views.
type applyCand struct {
	link int
	e    [2]applyEntry // per side
}

// buildApply picks the links to apply and builds the rename table. A view
// has one set of names at a time: when two links would rename one view
// differently at overlapping times, the one with more evidence wins and the
// other is a conflict.
func (l *Learner) buildApply(t *Table, rules []ruleAgg) {
	var cands []applyCand
	for i := range l.links {
		L := &l.links[i]
		L.applied = false
		if inside, ok := L.insideNames(rules); ok {
			cands = append(cands, applyCand{link: i, e: l.renames(L, inside)})
		}
	}
	slices.SortFunc(cands, func(a, b applyCand) int {
		return cmp.Or(cmp.Compare(l.links[b.link].evidence, l.links[a.link].evidence), cmp.Compare(a.link, b.link))
	})
	l.stats.LinksApplied, l.stats.LinksConflicted, l.stats.PacketsToRewrite, l.stats.RenamedLate = 0, 0, 0, 0
	for i := range cands {
		l.apply(t, &cands[i])
	}
	for _, es := range t.apply {
		slices.SortFunc(es, func(a, b applyEntry) int { return cmp.Compare(a.from, b.from) })
	}
}

// insideNames returns the inside name of each slot of v[0], if the link
// can be applied: every changed slot's direction is decided and one of
// its rules was accepted.
func (L *link) insideNames(rules []ruleAgg) ([2]endpoint, bool) {
	v0, v1 := L.key.v[0], L.key.v[1]
	var inside [2]endpoint
	anyAccepted := false
	for s := 0; s < 2; s++ {
		tt := L.other(s)
		inside[s] = v0.ep[s]
		if v0.ep[s] == v1.ep[tt] {
			continue
		}
		if L.fvote[s] == 0 || L.rule[s] < 0 {
			return inside, false
		}
		if L.fvote[s] > 0 {
			inside[s] = v1.ep[tt]
		}
		anyAccepted = anyAccepted || rules[L.rule[s]].accepted
	}
	return inside, anyAccepted
}

// renames returns the rename of each view of L: the inside names, during
// the view's activity (or the link's matches) widened by the window.
func (l *Learner) renames(L *link, inside [2]endpoint) [2]applyEntry {
	var es [2]applyEntry
	for side := 0; side < 2; side++ {
		vk := L.key.v[side]
		e := &es[side]
		if L.hasSpan[side] {
			e.from, e.to = L.span[side][0], L.span[side][1]
		} else {
			e.from, e.to = L.first, L.last
		}
		e.from -= l.window
		e.to += l.window
		if first, open := l.openActivity(vk, L); open {
			// A snapshot: the view is still active, so its rename holds
			// from the start of this activity on.
			e.from, e.to = min(e.from, first-l.window), math.MaxInt64
		}
		for s := 0; s < 2; s++ {
			s0 := s // the slot of v0 that slot s of this view corresponds to
			if side == 1 {
				s0 = L.other(s)
			}
			e.canon[s] = inside[s0].addrPort(vk.v6)
			if inside[s0] != vk.ep[s] {
				e.rewrites = true
			}
		}
	}
	return es
}

// apply adds c's renames to the table unless one of its views is renamed
// otherwise at an overlapping time already (a conflict). The same names
// from two links (a connection seen under three names, as behind two
// translations) agree.
func (l *Learner) apply(t *Table, c *applyCand) {
	L := &l.links[c.link]
	if renamedOtherwise(t.apply[L.key.v[0]], &c.e[0]) || renamedOtherwise(t.apply[L.key.v[1]], &c.e[1]) {
		l.stats.LinksConflicted++
		return
	}
	L.applied = true
	l.stats.LinksApplied++
	for side := 0; side < 2; side++ {
		vk := L.key.v[side]
		t.apply[vk] = append(t.apply[vk], c.e[side])
		if c.e[side].rewrites {
			l.stats.PacketsToRewrite += L.pkts[side]
			l.stats.RenamedLate += L.plain[side]
		}
	}
}

// renamedOtherwise reports whether an entry of es overlaps e in time and
// gives other names.
func renamedOtherwise(es []applyEntry, e *applyEntry) bool {
	for i := range es {
		if es[i].from <= e.to && e.from <= es[i].to && es[i].canon != e.canon {
			return true
		}
	}
	return false
}

// clockOffsets returns what the translated copies say about the clocks
// of each pair of sniffers (package clock's estimate), by sniffer ids.
func (l *Learner) clockOffsets() []ClockOffset {
	var out []ClockOffset
	for k, p := range l.clocks {
		e := p.Estimate()
		co := ClockOffset{A: k[0], B: k[1], Known: e.Known, Offset: e.Offset, Uncertainty: e.Uncertainty, SamplesAB: p.AB.N, SamplesBA: p.BA.N}
		if p.AB.N > 0 {
			co.MinAB = p.AB.MinDelay()
		}
		if p.BA.N > 0 {
			co.MinBA = p.BA.MinDelay()
		}
		out = append(out, co)
	}
	slices.SortFunc(out, func(a, b ClockOffset) int { return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B)) })
	return out
}
