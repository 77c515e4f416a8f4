package trace

import (
	"net/netip"
	"strconv"
	"strings"
)

// SplitEndpoint splits an endpoint name into host and port. It accepts
// "1.2.3.4:80", "[::1]:53", "host:80" and names without a port (port "" then).
// UNIX-domain endpoints ("unix:/path") have no port.
func SplitEndpoint(ep string) (host, port string) {
	if strings.HasPrefix(ep, "unix:") {
		return ep, ""
	}
	if strings.HasPrefix(ep, "[") {
		if i := strings.LastIndex(ep, "]:"); i > 0 {
			return ep[1:i], ep[i+2:]
		}
		return strings.Trim(ep, "[]"), ""
	}
	i := strings.LastIndexByte(ep, ':')
	if i < 0 || strings.IndexByte(ep[:i], ':') >= 0 { // no port, or a bare IPv6 address
		return ep, ""
	}
	if _, err := strconv.ParseUint(ep[i+1:], 10, 16); err != nil {
		return ep, ""
	}
	return ep[:i], ep[i+1:]
}

// JoinEndpoint is the inverse of SplitEndpoint: it brackets IPv6 hosts.
func JoinEndpoint(host, port string) string {
	if port == "" {
		return host
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() && !a.Is4In6() {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// RoleOptions tunes the fixed/ephemeral port and client/server
// classification of WAP5 section 2.5.1.
type RoleOptions struct {
	// MinPeers is how many distinct peer endpoints make a port fixed.
	// WAP5 says "many"; the default is 3.
	MinPeers int
	// WellKnownFixed treats ports below 1024 as fixed even with few peers.
	WellKnownFixed bool
	// UseKinds treats the receiver of a CALL and the sender of a RETURN as
	// the fixed (server) end, as flows labels the side that accepted a
	// connection.
	UseKinds bool
}

// DefaultRoleOptions returns the options used unless a user says otherwise.
func DefaultRoleOptions() RoleOptions {
	return RoleOptions{MinPeers: 3, WellKnownFixed: true, UseKinds: true}
}

// Roles classifies the endpoints of a trace as fixed or ephemeral ports and
// its nodes as clients or servers (WAP5 section 2.5.1): a port is fixed if it
// communicates with many other ports; a node is a server if it uses a fixed
// port at least once, and a client otherwise.
type Roles struct {
	fixed    map[Sym]bool // endpoint -> fixed
	server   map[Sym]bool // node -> has a fixed endpoint
	known    map[Sym]bool // nodes with at least one endpoint with a port
	hostPort map[Sym][2]string
	t        *Trace
}

// ClassifyRoles computes Roles for t.
func ClassifyRoles(t *Trace, opt RoleOptions) *Roles {
	if opt.MinPeers <= 0 {
		opt.MinPeers = 3
	}
	r := &Roles{
		fixed:    make(map[Sym]bool),
		server:   make(map[Sym]bool),
		known:    make(map[Sym]bool),
		hostPort: make(map[Sym][2]string),
		t:        t,
	}
	type pair struct{ a, b Sym }
	peers := make(map[Sym]int)
	seen := make(map[pair]bool)
	evidence := make(map[Sym]bool)
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, p := range [2]pair{{m.Src, m.Dst}, {m.Dst, m.Src}} {
			if p.a == 0 || p.b == 0 || seen[p] {
				continue
			}
			seen[p] = true
			peers[p.a]++
		}
		if opt.UseKinds {
			switch m.Kind {
			case KindCall:
				if m.Dst != 0 {
					evidence[m.Dst] = true
				}
			case KindReturn:
				if m.Src != 0 {
					evidence[m.Src] = true
				}
			}
		}
	}
	port := func(ep Sym) string {
		if hp, ok := r.hostPort[ep]; ok {
			return hp[1]
		}
		h, p := SplitEndpoint(t.Str(ep))
		r.hostPort[ep] = [2]string{h, p}
		return p
	}
	isFixed := func(ep Sym) bool {
		if ep == 0 {
			return false
		}
		if v, ok := r.fixed[ep]; ok {
			return v
		}
		p := port(ep)
		v := false
		if p != "" {
			n, _ := strconv.Atoi(p)
			v = peers[ep] >= opt.MinPeers || evidence[ep] || (opt.WellKnownFixed && n > 0 && n < 1024)
		}
		r.fixed[ep] = v
		return v
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, e := range [2]struct{ ep, node Sym }{{m.Src, m.SrcNode}, {m.Dst, m.DstNode}} {
			if e.node == 0 || e.ep == 0 {
				continue
			}
			if port(e.ep) != "" {
				r.known[e.node] = true
			}
			if isFixed(e.ep) {
				r.server[e.node] = true
			}
		}
	}
	return r
}

// Fixed reports whether endpoint ep is a fixed (server) port.
func (r *Roles) Fixed(ep Sym) bool { return r.fixed[ep] }

// Client reports whether node is a client: it has endpoints with ports but
// none of them is fixed. Nodes the trace names without endpoints are never
// clients, because there is no evidence either way.
func (r *Roles) Client(node Sym) bool { return r.known[node] && !r.server[node] }

// EndpointName returns ep with an ephemeral port replaced by "*", so that
// connections from different ephemeral ports aggregate.
func (r *Roles) EndpointName(ep Sym) string {
	s := r.t.Str(ep)
	hp, ok := r.hostPort[ep]
	if !ok {
		h, p := SplitEndpoint(s)
		hp = [2]string{h, p}
	}
	if hp[1] == "" || r.fixed[ep] {
		return s
	}
	return JoinEndpoint(hp[0], "*")
}
