package reconcile

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// Naming is how nodes are named in the trace (WAP5 section 2.5).
type Naming uint8

// The namings.
const (
	// NameHost names a node by its host: its IP address, or the name a
	// roles map gives it. A host known from syscall traces to own several
	// addresses is one node.
	NameHost Naming = iota
	// NameRole names a server by host and fixed port ("10.0.0.5:5432",
	// "db:5432", or the roles map's name for the endpoint); the client
	// side of its outgoing connections belongs to its role when the host
	// has exactly one, else to the host. Hosts with no fixed port are
	// named as by NameHost.
	NameRole
	// NameProcess names a node by process, "name[pid]@host", where a
	// syscall trace covers the end; other ends are named as by NameRole.
	NameProcess
)

var namingNames = [...]string{"host", "role", "process"}

// String returns "host", "role" or "process".
func (n Naming) String() string {
	if int(n) < len(namingNames) {
		return namingNames[n]
	}
	return fmt.Sprintf("naming(%d)", n)
}

// ParseNaming parses the names String returns.
func ParseNaming(s string) (Naming, error) {
	for i, n := range namingNames {
		if strings.EqualFold(s, n) {
			return Naming(i), nil
		}
	}
	return 0, fmt.Errorf("unknown naming %q (want host, role or process)", s)
}

// Boundaries says where a message ends when a syscall trace shows the
// sender's writes.
type Boundaries uint8

// The boundary rules.
const (
	// BoundFat cuts where the sniffed messages and the sender's writes
	// agree: never inside one write (so a pause or a protocol boundary
	// that flows found inside a single write is not a cut), never inside
	// one sniffed message (adjacent writes between direction changes
	// coalesce into a fat message, as WAP5 section 2.3 does before
	// analysis). Bytes no sniffer saw are cut at the sender's direction
	// changes.
	BoundFat Boundaries = iota
	// BoundWrites makes every write of a traced sender a message of its
	// own; bytes of untraced senders keep the sniffed boundaries.
	BoundWrites
)

// CanonicalFunc renames the endpoints of a connection as seen by a host
// (its syscall trace's local and remote names) to the canonical names the
// sniffed messages carry after NAT was undone, at about corrected time ts.
// ok is false when the connection was not translated. nat.Table.Lookup has
// this form (with the IP protocol number).
type CanonicalFunc func(proto uint8, src, dst netip.AddrPort, ts int64) (csrc, cdst netip.AddrPort, ok bool)

// Sniffer describes one capture point's clock to the reconciler, as
// pcapio.Merger.Sniffers and Offsets give it.
type Sniffer struct {
	Name string
	// Known is true when pcapio corrected the sniffer's timestamps onto
	// the reference sniffer's clock (Reference itself included).
	Known bool
	// Reference marks the reference sniffer.
	Reference bool
	// OffsetNS, UncertaintyNS, Samples and Method are pcapio's estimate
	// (the sniffer's clock minus the reference's), for the report.
	OffsetNS      int64
	UncertaintyNS int64
	Samples       int
	Method        string
	// EpochNS, DriftKnown, DriftPPM, DriftUncertaintyPPM and Steps are
	// pcapio's drift estimate, for the report (as in trace.Clock).
	EpochNS             int64
	DriftKnown          bool
	DriftPPM            float64
	DriftUncertaintyPPM float64
	Steps               []trace.ClockStep
}

// Options configure a Reconciler. The zero value names nodes by host,
// cuts fat messages and has no syscall traces.
type Options struct {
	// Naming is how nodes are named.
	Naming Naming
	// Roles maps addresses and endpoints to names (see ParseRoles); nil
	// for none.
	Roles *RoleMap
	// Boundaries is the message boundary rule where syscall traces show
	// writes.
	Boundaries Boundaries
	// Preload holds the syscall traces; nil for none.
	Preload *preload.Table
	// Canonical renames syscall-traced endpoints across NAT; nil when no
	// translation was undone.
	Canonical CanonicalFunc
	// Sniffers describes the capture points, indexed by pcapio.SnifferID.
	// Sightings of sniffers beyond it count as sniffers with unknown
	// offsets.
	Sniffers []Sniffer
	// MinPeers is how many distinct peer endpoints make a port fixed
	// (WAP5 section 2.5.1); 0 means 3.
	MinPeers int
	// NoWellKnown stops ports below 1024 from counting as fixed on their
	// number alone.
	NoWellKnown bool
	// MaxWarnings bounds the warnings kept (0 means 20).
	MaxWarnings int
	// MaxTokens caps the content tokens kept per message: 0 means
	// DefaultMaxTokens (the protocol decoders' default), a negative
	// value keeps none; at most trace.MaxTokens. A message's set is cut to
	// its smallest hashes (a bottom-k sample: two messages cut alike still
	// share what they shared among them).
	MaxTokens int
	// ClockFit tunes the fit of clock offsets, drifts and steps between
	// clock domains (package clock; the zero value: its defaults).
	ClockFit clock.FitOptions
	// TrustClockFits applies every pair's fit as it is, even one that is
	// inconsistent or very uncertain (warning about it), instead of
	// comparing it with no offset (see estimateClocks).
	TrustClockFits bool
	// LocalClocks keeps every timestamp on its node's own clock, the
	// offsets in Meta.Offsets only, as traces were before reconcile put
	// them on the reference clock (the reference implementation of the
	// tests compares those).
	LocalClocks bool
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.Naming > NameProcess {
		return fmt.Errorf("reconcile: unknown naming %d", o.Naming)
	}
	if o.Boundaries > BoundWrites {
		return fmt.Errorf("reconcile: unknown boundary rule %d", o.Boundaries)
	}
	if o.MinPeers < 0 {
		return fmt.Errorf("reconcile: MinPeers must not be negative")
	}
	if o.MaxTokens > trace.MaxTokens {
		return fmt.Errorf("reconcile: MaxTokens %d is more than a trace holds (%d)", o.MaxTokens, trace.MaxTokens)
	}
	return nil
}
