package causal

import "github.com/wirepath/wirepath/trace"

// ClientName is the name aggregated client nodes get (WAP5 section 2.5.1).
const ClientName = "CLIENT"

// Naming controls how nodes and endpoints are named in patterns.
type Naming struct {
	// AggregateClients replaces the names of client nodes with "CLIENT", so
	// that paths started by different clients aggregate.
	AggregateClients bool
	// EphemeralPorts replaces ephemeral ports with "*" in endpoints.
	EphemeralPorts bool
	// Roles tunes the fixed/ephemeral and client/server classification.
	Roles trace.RoleOptions
}

// DefaultNaming aggregates clients and ephemeral ports as WAP5 does.
func DefaultNaming() Naming {
	return Naming{AggregateClients: true, EphemeralPorts: true, Roles: trace.DefaultRoleOptions()}
}

// Namer gives the pattern-level names of a trace's nodes and endpoints. It
// computes each name once and keeps one copy of each distinct name. It is
// not safe for concurrent use.
type Namer struct {
	syms  *trace.Symbols
	opt   Naming
	roles *trace.Roles
	node  []int32 // by Sym: index in names, -1 = not computed
	ep    []int32
	names []string
	index map[string]int32
}

// NewNamer classifies the roles of the messages of ms and returns a Namer
// for them.
func NewNamer(ms trace.Messages, opt Naming) *Namer {
	return NewNamerWithRoles(ms, opt, trace.ClassifyRoles(ms, opt.Roles))
}

// NewNamerWithRoles returns a Namer that uses roles, which must have been
// classified from ms (with opt.Roles), instead of classifying them again.
func NewNamerWithRoles(ms trace.Messages, opt Naming, roles *trace.Roles) *Namer {
	return newNamer(ms.Symbols(), opt, roles)
}

func newNamer(syms *trace.Symbols, opt Naming, roles *trace.Roles) *Namer {
	n := syms.Len()
	nm := &Namer{
		syms:  syms,
		opt:   opt,
		roles: roles,
		node:  make([]int32, n),
		ep:    make([]int32, n),
		index: make(map[string]int32),
	}
	for i := range nm.node {
		nm.node[i], nm.ep[i] = -1, -1
	}
	return nm
}

// Roles returns the classification the Namer uses.
func (n *Namer) Roles() *trace.Roles { return n.roles }

func (n *Namer) intern(s string) int32 {
	if id, ok := n.index[s]; ok {
		return id
	}
	id := int32(len(n.names))
	n.names = append(n.names, s)
	n.index[s] = id
	return id
}

// Node returns the pattern name of node s.
func (n *Namer) Node(s trace.Sym) string { return n.names[n.nodeIdx(s)] }

// Endpoint returns the pattern name of endpoint s.
func (n *Namer) Endpoint(s trace.Sym) string { return n.names[n.epIdx(s)] }

// nodeIdx returns the index of node s's pattern name in n.names.
func (n *Namer) nodeIdx(s trace.Sym) int32 {
	if int(s) >= len(n.node) {
		return n.intern(n.syms.String(s))
	}
	if n.node[s] < 0 {
		name := n.syms.String(s)
		if name == "" {
			name = "?"
		} else if n.opt.AggregateClients && n.roles.Client(s) {
			name = ClientName
		}
		n.node[s] = n.intern(name)
	}
	return n.node[s]
}

// epIdx returns the index of endpoint s's pattern name in n.names.
func (n *Namer) epIdx(s trace.Sym) int32 {
	if int(s) >= len(n.ep) {
		return n.intern(n.syms.String(s))
	}
	if n.ep[s] < 0 {
		name := n.syms.String(s)
		if n.opt.EphemeralPorts && s != 0 {
			name = n.roles.EndpointName(s)
		}
		n.ep[s] = n.intern(name)
	}
	return n.ep[s]
}
