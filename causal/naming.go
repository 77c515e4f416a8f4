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

// Namer gives the pattern-level names of a trace's nodes and endpoints.
type Namer struct {
	t     *trace.Trace
	opt   Naming
	roles *trace.Roles
	node  []string // by Sym; "" = not computed
	ep    []string
	nodeC []bool
	epC   []bool
}

// NewNamer classifies t's roles and returns a Namer for it.
func NewNamer(t *trace.Trace, opt Naming) *Namer {
	n := t.Syms.Len()
	return &Namer{
		t:     t,
		opt:   opt,
		roles: trace.ClassifyRoles(t, opt.Roles),
		node:  make([]string, n),
		ep:    make([]string, n),
		nodeC: make([]bool, n),
		epC:   make([]bool, n),
	}
}

// Roles returns the classification the Namer uses.
func (n *Namer) Roles() *trace.Roles { return n.roles }

// Node returns the pattern name of node s.
func (n *Namer) Node(s trace.Sym) string {
	if int(s) >= len(n.node) {
		return n.t.Str(s)
	}
	if !n.nodeC[s] {
		name := n.t.Str(s)
		if name == "" {
			name = "?"
		} else if n.opt.AggregateClients && n.roles.Client(s) {
			name = ClientName
		}
		n.node[s] = name
		n.nodeC[s] = true
	}
	return n.node[s]
}

// Endpoint returns the pattern name of endpoint s.
func (n *Namer) Endpoint(s trace.Sym) string {
	if int(s) >= len(n.ep) {
		return n.t.Str(s)
	}
	if !n.epC[s] {
		name := n.t.Str(s)
		if n.opt.EphemeralPorts && s != 0 {
			name = n.roles.EndpointName(s)
		}
		n.ep[s] = name
		n.epC[s] = true
	}
	return n.ep[s]
}
