package nat

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// Kind is the kind of a translation.
type Kind uint8

// The translation kinds.
const (
	// KindUnknown: an address changes, but which end opened the
	// connections is not known.
	KindUnknown Kind = iota
	// KindDNAT: the server's address changes, as behind a load balancer or
	// a port forward: clients use the outside name.
	KindDNAT
	// KindSNAT: the client's address changes, as with masquerading: the
	// server sees the outside name.
	KindSNAT
	// KindPort: only the port changes.
	KindPort
)

var kindNames = [...]string{"nat", "dnat", "snat", "port"}

// String returns "nat", "dnat", "snat" or "port".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "nat"
}

// Mapping is one row of the translation table: an endpoint's outside name
// (the one its peers across the translation use or see) and its inside
// name (the real one, which the host owning the endpoint has).
type Mapping struct {
	// Proto is the IP protocol (pcapio.ProtoTCP, ProtoUDP, ...).
	Proto uint8
	// Kind is what was translated.
	Kind Kind
	// Outside and Inside are the two names. When AnyPort is set the row
	// aggregates the connections of one client address (source NAT) and
	// the ports are 0; otherwise it is one endpoint, port included.
	Outside, Inside netip.AddrPort
	AnyPort         bool
	// Direction says which way the connections were opened across the
	// translation: "outside->inside" (DNAT), "inside->outside" (SNAT), or
	// "" when unknown.
	Direction string
	// DecidedBy says what ordered the copies: "ttl", "time" or "ttl+time".
	DecidedBy string
	// Conns is the number of connections seen on both sides; PortsKept
	// how many of them kept their port (AnyPort rows).
	Conns     int
	PortsKept int
	// Matches counts packets seen on both sides, DataMatches those with a
	// payload that did not repeat, RandomMatches the data matches with a
	// random field; Evidence is the weighted sum of the matches.
	Matches       int
	DataMatches   int
	RandomMatches int
	Evidence      float64
	// TwoWay counts the connections on which data crossed both ways.
	TwoWay int
	// Agreement is the weighted share of direction votes that agree on
	// which name is outside; Coverage the share of packets between the
	// first and last match of each connection that matched.
	Agreement float64
	Coverage  float64
	// Score is the confidence in [0,1]:
	// (1-exp(-Evidence/3)) * Agreement * Coverage.
	Score float64
	// FirstNS and LastNS bound the matches, in corrected nanoseconds.
	FirstNS, LastNS int64
	// Reason says why a rejected mapping was rejected ("" if accepted).
	Reason string
}

// ProtoName returns "tcp", "udp" or the protocol number.
func ProtoName(proto uint8) string {
	switch proto {
	case pcapio.ProtoTCP:
		return "tcp"
	case pcapio.ProtoUDP:
		return "udp"
	case pcapio.ProtoICMP:
		return "icmp"
	case pcapio.ProtoICMPv6:
		return "icmpv6"
	}
	return fmt.Sprintf("ip%d", proto)
}

// hasPorts reports whether the protocol's endpoints have ports.
func hasPorts(proto uint8) bool { return proto == pcapio.ProtoTCP || proto == pcapio.ProtoUDP }

func endpointString(ap netip.AddrPort, anyPort bool) string {
	if !anyPort {
		return ap.String()
	}
	if ap.Addr().Is6() {
		return "[" + ap.Addr().String() + "]:*"
	}
	return ap.Addr().String() + ":*"
}

// OutsideString returns the outside name: "addr:port", "addr:*" for
// AnyPort rows, and the address alone for protocols without ports.
func (m *Mapping) OutsideString() string { return m.nameString(m.Outside) }

// InsideString returns the inside name, written as OutsideString.
func (m *Mapping) InsideString() string { return m.nameString(m.Inside) }

func (m *Mapping) nameString(ap netip.AddrPort) string {
	if !hasPorts(m.Proto) {
		return ap.Addr().String()
	}
	return endpointString(ap, m.AnyPort)
}

// Alias returns the mapping as the trace's NAT alias record.
func (m *Mapping) Alias() trace.Alias {
	return trace.Alias{
		Outside:   m.OutsideString(),
		Inside:    m.InsideString(),
		Kind:      m.Kind.String(),
		Direction: m.Direction,
		Matches:   m.Matches,
		Score:     m.Score,
		FirstNS:   m.FirstNS,
		LastNS:    m.LastNS,
	}
}

// Table is what a Learner learned: the accepted and rejected mappings, the
// counters, and the per-connection translations a Canonicalizer applies.
type Table struct {
	// Mappings are the accepted translations, ordered by protocol, kind,
	// outside and inside name.
	Mappings []Mapping
	// Rejected are the candidate translations below the thresholds, in
	// the same order, each with its Reason.
	Rejected []Mapping
	// Stats are the learning counters.
	Stats Stats
	// Clocks are the offsets between sniffers on either side of a
	// translation that the translated packets show, after pcapio's
	// correction (which cannot relate sniffers that share no untranslated
	// packet).
	Clocks []ClockOffset

	// names are the sniffers' names, for reports (SetSnifferNames).
	names []string

	window int64
	// apply maps every name of a translated connection to its canonical
	// names, by time.
	apply map[connKey][]applyEntry
}

// applyEntry renames one view of a connection during its activity.
type applyEntry struct {
	from, to int64
	canon    [2]netip.AddrPort // canonical names of the view's slots 0 and 1
	rewrites bool              // canon differs from the view's own names
}

// ClockOffset is what the copies of translated packets say about the
// clocks of two sniffers, A < B, after pcapio's correction. Packets that
// crossed from A's side to B's took at least MinAB (B's corrected time
// minus A's), those the other way at least MinBA (A's minus B's). With
// symmetric smallest delays, B's corrected clock runs Offset ahead of A's
// (Offset = (MinAB - MinBA)/2), within Uncertainty ((MinAB + MinBA)/2). Both
// ways are needed: Known is false with copies one way only, and Offset is
// then 0.
type ClockOffset struct {
	A, B         pcapio.SnifferID
	Known        bool
	Offset       int64
	Uncertainty  int64
	MinAB, MinBA int64
	SamplesAB    int
	SamplesBA    int
}

// SetSnifferNames gives the sniffers' names, indexed by SnifferID (as
// pcapio.Merger.Sniffers lists them), for the reports.
func (t *Table) SetSnifferNames(names []string) { t.names = names }

func (t *Table) snifferName(id pcapio.SnifferID) string {
	if int(id) < len(t.names) && t.names[id] != "" {
		return t.names[id]
	}
	return fmt.Sprintf("sniffer %d", id)
}

// Aliases returns the accepted mappings as trace aliases.
func (t *Table) Aliases() []trace.Alias {
	out := make([]trace.Alias, len(t.Mappings))
	for i := range t.Mappings {
		out[i] = t.Mappings[i].Alias()
	}
	return out
}

// Accounting returns the learning counters as trace counts (stage "nat").
func (t *Table) Accounting() []trace.Count {
	s := &t.Stats
	c := func(name string, v int64) trace.Count { return trace.Count{Stage: "nat", Name: name, Value: v} }
	return []trace.Count{
		c("packets_examined", s.Packets),
		c("skipped_not_ip", s.NotIP),
		c("skipped_fragment", s.Fragments),
		c("skipped_not_translatable", s.NotTranslatable),
		c("packets_observed", s.Observed),
		c("candidate_matches", s.Candidates),
		c("matches", s.Matches),
		c("rejected_ambiguous_body", s.RejectedAmbiguous),
		c("rejected_same_capture_point", s.RejectedSameCapture),
		c("rejected_ip_family", s.RejectedFamily),
		c("rejected_ttl_gap", s.RejectedTTLGap),
		c("matches_repeated_body", s.RepeatedBodies),
		c("connection_pairs", s.Links),
		c("connection_pairs_applied", s.LinksApplied),
		c("connection_pairs_conflicting", s.LinksConflicted),
		c("mappings", s.Mappings),
		c("mappings_rejected", s.Rejected),
		c("packets_to_rewrite", s.PacketsToRewrite),
	}
}

// ruleKey groups links into mappings.
type ruleKey struct {
	out, in   endpoint
	proto     uint8
	v6        bool
	kind      Kind
	anyPort   bool
	undecided bool
}

type ruleAgg struct {
	m             Mapping
	agree, total  float64
	cmatch, cgap  float64
	byTTL, byTime int
	accepted      bool
	firstSet      bool
}

// Finish ends learning and returns the table. Later calls return a table
// built from the same state.
func (l *Learner) Finish() *Table {
	if !l.finished {
		for _, id := range l.viewByKey {
			l.closeView(id)
		}
		l.finished = true
	}
	t := &Table{window: l.window, apply: make(map[connKey][]applyEntry)}
	var rules []ruleAgg
	ruleIdx := make(map[ruleKey]int)

	for i := range l.links {
		L := &l.links[i]
		L.applied = false
		L.finishVotes()
		v0, v1 := L.key.v[0], L.key.v[1]
		for s := 0; s < 2; s++ {
			L.rule[s] = -1
			tt := s
			if L.key.crossed {
				tt = 1 - s
			}
			a, b := v0.ep[s], v1.ep[tt]
			if a == b {
				continue
			}
			rk := ruleKey{proto: v0.proto, v6: v0.v6}
			var m Mapping
			decided := L.fvote[s] != 0
			var insideView connKey
			var insideSlot int
			if !decided {
				rk.undecided = true
				rk.out, rk.in = a, b
				if b.cmp(a) < 0 {
					rk.out, rk.in = b, a
				}
			} else if L.fvote[s] > 0 {
				rk.out, rk.in = a, b
				insideView, insideSlot = v1, tt
			} else {
				rk.out, rk.in = b, a
				insideView, insideSlot = v0, s
			}
			client := false
			known := true
			switch {
			case L.client >= 0:
				client = int(L.client) == s
			case decided:
				// Without a SYN, the higher port on the inside view is the
				// client's ephemeral one.
				this, other := insideView.ep[insideSlot].port, insideView.ep[1-insideSlot].port
				client, known = this > other, this != other
			default:
				known = false
			}
			switch {
			case a.ip == b.ip:
				rk.kind = KindPort
			case !known:
				rk.kind = KindUnknown
			case client:
				rk.kind = KindSNAT
			default:
				rk.kind = KindDNAT
			}
			kept := false
			if decided && known && client && hasPorts(rk.proto) {
				rk.anyPort = true
				kept = rk.out.port == rk.in.port
				rk.out.port, rk.in.port = 0, 0
			}
			ri, ok := ruleIdx[rk]
			if !ok {
				ri = len(rules)
				ruleIdx[rk] = ri
				m.Proto = rk.proto
				m.Kind = rk.kind
				m.Outside = rk.out.addrPort(rk.v6)
				m.Inside = rk.in.addrPort(rk.v6)
				m.AnyPort = rk.anyPort
				if decided && known {
					if client {
						m.Direction = "inside->outside"
					} else {
						m.Direction = "outside->inside"
					}
				}
				if rk.undecided {
					m.Reason = "direction undecided"
				}
				rules = append(rules, ruleAgg{m: m})
			}
			r := &rules[ri]
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
			maj := (L.fabs[s] + math.Abs(L.fvote[s])) / 2
			r.agree += maj
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
			L.rule[s] = int32(ri)
		}
	}

	for i := range rules {
		r := &rules[i]
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
		if r.accepted {
			t.Mappings = append(t.Mappings, *m)
		} else {
			t.Rejected = append(t.Rejected, *m)
		}
	}
	sortMappings(t.Mappings)
	sortMappings(t.Rejected)

	l.buildApply(t, rules)
	for k, cp := range l.clocks {
		co := ClockOffset{A: k[0], B: k[1], MinAB: cp.minXY, MinBA: cp.minYX, SamplesAB: cp.nXY, SamplesBA: cp.nYX}
		if cp.nXY > 0 && cp.nYX > 0 {
			co.Known = true
			co.Offset = (cp.minXY - cp.minYX) / 2
			co.Uncertainty = (cp.minXY + cp.minYX + 1) / 2
		}
		t.Clocks = append(t.Clocks, co)
	}
	slices.SortFunc(t.Clocks, func(a, b ClockOffset) int { return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B)) })
	l.stats.Mappings = int64(len(t.Mappings))
	l.stats.Rejected = int64(len(t.Rejected))
	t.Stats = l.stats
	return t
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

// buildApply picks the links to apply and builds the rename table. A view
// has one set of names at a time: when two links would rename one view
// differently at overlapping times, the one with more evidence wins and the
// other is a conflict.
func (l *Learner) buildApply(t *Table, rules []ruleAgg) {
	type cand struct {
		link int
		e    [2]applyEntry // per side
	}
	var cands []cand
	for i := range l.links {
		L := &l.links[i]
		L.applied = false
		v0, v1 := L.key.v[0], L.key.v[1]
		var inside [2]endpoint // inside name of each slot of v0
		ok, anyAccepted := true, false
		for s := 0; s < 2; s++ {
			tt := s
			if L.key.crossed {
				tt = 1 - s
			}
			inside[s] = v0.ep[s]
			if v0.ep[s] == v1.ep[tt] {
				continue
			}
			if L.fvote[s] == 0 || L.rule[s] < 0 {
				ok = false
				continue
			}
			if L.fvote[s] > 0 {
				inside[s] = v1.ep[tt]
			}
			if rules[L.rule[s]].accepted {
				anyAccepted = true
			}
		}
		if !ok || !anyAccepted {
			continue
		}
		c := cand{link: i}
		for side := 0; side < 2; side++ {
			vk := L.key.v[side]
			e := &c.e[side]
			if L.hasSpan[side] {
				e.from, e.to = L.span[side][0], L.span[side][1]
			} else {
				e.from, e.to = L.first, L.last
			}
			e.from -= l.window
			e.to += l.window
			for s := 0; s < 2; s++ {
				s0 := s // the slot of v0 that slot s of this view corresponds to
				if side == 1 && L.key.crossed {
					s0 = 1 - s
				}
				e.canon[s] = inside[s0].addrPort(vk.v6)
				if inside[s0] != vk.ep[s] {
					e.rewrites = true
				}
			}
		}
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(l.links[b.link].evidence, l.links[a.link].evidence), cmp.Compare(a.link, b.link))
	})
	// Two renames of one view conflict when they overlap in time and give
	// it different names; the same names from two links (a connection seen
	// under three names, as behind two translations) agree.
	overlaps := func(es []applyEntry, e *applyEntry) bool {
		for i := range es {
			if es[i].from <= e.to && e.from <= es[i].to && es[i].canon != e.canon {
				return true
			}
		}
		return false
	}
	l.stats.LinksApplied, l.stats.LinksConflicted, l.stats.PacketsToRewrite = 0, 0, 0
	for i := range cands {
		c := &cands[i]
		L := &l.links[c.link]
		if overlaps(t.apply[L.key.v[0]], &c.e[0]) || overlaps(t.apply[L.key.v[1]], &c.e[1]) {
			l.stats.LinksConflicted++
			continue
		}
		L.applied = true
		l.stats.LinksApplied++
		for side := 0; side < 2; side++ {
			vk := L.key.v[side]
			t.apply[vk] = append(t.apply[vk], c.e[side])
			if c.e[side].rewrites {
				l.stats.PacketsToRewrite += L.pkts[side]
			}
		}
	}
	for _, es := range t.apply {
		slices.SortFunc(es, func(a, b applyEntry) int { return cmp.Compare(a.from, b.from) })
	}
}
