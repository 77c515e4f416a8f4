package nat

import (
	"fmt"
	"net/netip"

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
	if m.Proto != 0 && !hasPorts(m.Proto) { // 0: a given row for every protocol
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
	// given is the table the user gave (NewGivenTable, SetGiven): it
	// renames what apply does not.
	given *Given
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
// (Offset = (MinAB - MinBA)/2 rounded down), within Uncertainty
// (|MinAB + MinBA|/2 rounded up): package clock's estimate. Both ways are
// needed: Known is false with copies one way only, and Offset is then 0.
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

// NewGivenTable returns a Table that renames with the given table alone
// (no learning): its Mappings are the given rows applied.
func NewGivenTable(g *Given) *Table {
	return &Table{given: g, apply: map[connKey][]applyEntry{}}
}

// SetGiven makes t rename, besides what it learned, what g renames (the
// learned renames first).
func (t *Table) SetGiven(g *Given) { t.given = g }

// Given returns the table given by the user, nil if none.
func (t *Table) Given() *Given { return t.given }

// Aliases returns the accepted mappings, then the given table's rows
// applied, as trace aliases.
func (t *Table) Aliases() []trace.Alias {
	out := make([]trace.Alias, 0, len(t.Mappings))
	for i := range t.Mappings {
		out = append(out, t.Mappings[i].Alias())
	}
	if t.given != nil {
		for i := range t.given.Applied {
			out = append(out, t.given.Applied[i].Alias())
		}
	}
	return out
}

// Accounting returns the learning counters as trace counts (stage trace.StageNAT).
func (t *Table) Accounting() []trace.Count {
	s := &t.Stats
	c := func(name string, v int64) trace.Count {
		return trace.Count{Stage: trace.StageNAT, Name: name, Value: v}
	}
	out := []trace.Count{
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
	if g := t.given; g != nil {
		out = append(out, c("table_rows", int64(len(g.Rows))), c("table_rows_applied", int64(len(g.Applied))),
			c("table_rows_ambiguous", int64(g.Ambiguous)), c("table_rows_port_unknown", int64(g.PortUnknown)))
	}
	return out
}
