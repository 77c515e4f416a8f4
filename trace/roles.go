package trace

import (
	"net/netip"
	"slices"
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
	// connection, and the sender of a CALL and the receiver of a RETURN
	// (the side that opened it) as ephemeral whatever its peers: a client
	// port reused for connections to several servers is still a client's.
	UseKinds bool
}

// DefaultRoleOptions returns the options used unless a user says otherwise.
func DefaultRoleOptions() RoleOptions {
	return RoleOptions{MinPeers: 3, WellKnownFixed: true, UseKinds: true}
}

// Roles classifies the endpoints of a trace as fixed or ephemeral ports and
// its nodes as clients or servers (WAP5 section 2.5.1): a port is fixed if
// connections were opened to it (with UseKinds: it received CALLs or sent
// RETURNs), ephemeral if it opened them (it sent CALLs or received
// RETURNs), and otherwise fixed if it communicates with many other ports;
// a node is a server if it uses a fixed port at least once, and a client
// otherwise.
type Roles struct {
	// by Sym: roleFixed for fixed endpoints, roleHasPort for endpoints with
	// a port; roleServer for nodes with a fixed endpoint, roleKnown for
	// nodes with an endpoint with a port.
	flags []uint8
	syms  *Symbols
}

const (
	roleFixed uint8 = 1 << iota
	roleHasPort
	roleServer
	roleKnown
)

// ClassifyRoles computes the Roles of the messages of ms. It takes time
// O(n log n) and memory O(n) in the number of messages, with no maps. The
// classification depends only on which endpoints, nodes and kinds occur
// together, so on a *Table it works on the table's distinct flows: its
// cost then does not depend on the number of messages.
func ClassifyRoles(ms Messages, opt RoleOptions) *Roles {
	if t, ok := ms.(*Table); ok {
		return classifyRoles(&t.Syms, opt, len(t.flows), func(yield func(*Flow)) {
			for i := range t.flows {
				yield(&t.flows[i])
			}
		})
	}
	return classifyRoles(ms.Symbols(), opt, ms.Len(), func(yield func(*Flow)) {
		var m Message
		var f Flow
		msgs, isTrace := ms.(*Trace)
		for i := range ms.Len() {
			mp := &m
			if isTrace {
				mp = &msgs.Messages[i]
			} else {
				ms.Read(i, &m)
			}
			f = Flow{Src: mp.Src, Dst: mp.Dst, SrcNode: mp.SrcNode, DstNode: mp.DstNode, Kind: mp.Kind}
			yield(&f)
		}
	})
}

// classifyRoles classifies the endpoints and nodes of the n flows (or
// messages) that each hands to its yield function, in the same order
// every time it is called.
func classifyRoles(syms *Symbols, opt RoleOptions, n int, each func(yield func(*Flow))) *Roles {
	if opt.MinPeers <= 0 {
		opt.MinPeers = 3
	}
	ns := syms.Len()
	r := &Roles{flags: make([]uint8, ns), syms: syms}
	// Distinct peers: each unordered endpoint pair {a, b} that exchanged a
	// message makes a and b peers once.
	// An edge met recently (a table of the last ones, by a hash) is not
	// added again: the connections' messages repeat few edges, and the
	// duplicates would only be sorted to be skipped.
	edges := make([]uint64, 0, 1024)
	var recent [256]uint64
	each(func(m *Flow) {
		if m.Src == 0 || m.Dst == 0 {
			return
		}
		a, b := m.Src, m.Dst
		if a > b {
			a, b = b, a
		}
		e := uint64(a)<<32 | uint64(b)
		if h := e * 0x9e3779b97f4a7c15 >> 56; recent[h] != e {
			recent[h] = e
			edges = append(edges, e)
		}
	})
	slices.Sort(edges)
	peers := make([]int32, ns)
	for i, e := range edges {
		if i > 0 && edges[i-1] == e {
			continue
		}
		a, b := Sym(e>>32), Sym(uint32(e))
		peers[a]++
		if b != a {
			peers[b]++
		}
	}
	edges = nil
	evidence, opener := kindEvidence(ns, opt.UseKinds, each)
	// Endpoints: which have a port, which are fixed.
	done := make([]bool, ns)
	classify := func(ep Sym) {
		if ep == 0 || done[ep] {
			return
		}
		done[ep] = true
		_, p := SplitEndpoint(syms.String(ep))
		if p == "" {
			return
		}
		r.flags[ep] |= roleHasPort
		n, _ := strconv.Atoi(p)
		if evidence[ep] || !opener[ep] && (int(peers[ep]) >= opt.MinPeers || opt.WellKnownFixed && n > 0 && n < 1024) {
			r.flags[ep] |= roleFixed
		}
	}
	each(func(m *Flow) {
		for _, e := range [2]struct{ ep, node Sym }{{m.Src, m.SrcNode}, {m.Dst, m.DstNode}} {
			if e.node == 0 || e.ep == 0 {
				continue
			}
			classify(e.ep)
			if r.flags[e.ep]&roleHasPort != 0 {
				r.flags[e.node] |= roleKnown
			}
			if r.flags[e.ep]&roleFixed != 0 {
				r.flags[e.node] |= roleServer
			}
		}
	})
	return r
}

// kindEvidence returns, by Sym, the endpoints connections were opened to
// (they received CALLs or sent RETURNs) and those that opened them (they
// sent CALLs or received RETURNs); none unless useKinds.
func kindEvidence(ns int, useKinds bool, each func(yield func(*Flow))) (evidence, opener []bool) {
	evidence, opener = make([]bool, ns), make([]bool, ns)
	if !useKinds {
		return evidence, opener
	}
	each(func(m *Flow) {
		switch m.Kind {
		case KindCall:
			evidence[m.Dst], opener[m.Src] = true, true
		case KindReturn:
			evidence[m.Src], opener[m.Dst] = true, true
		}
	})
	return evidence, opener
}

func (r *Roles) flag(s Sym, f uint8) bool { return int(s) < len(r.flags) && r.flags[s]&f != 0 }

// Fixed reports whether endpoint ep is a fixed (server) port.
func (r *Roles) Fixed(ep Sym) bool { return r.flag(ep, roleFixed) }

// Client reports whether node is a client: it has endpoints with ports but
// none of them is fixed. Nodes the trace names without endpoints are never
// clients, because there is no evidence either way.
func (r *Roles) Client(node Sym) bool { return r.flag(node, roleKnown) && !r.flag(node, roleServer) }

// EndpointName returns ep with an ephemeral port replaced by "*", so that
// connections from different ephemeral ports aggregate.
func (r *Roles) EndpointName(ep Sym) string {
	s := r.syms.String(ep)
	if r.flag(ep, roleFixed) {
		return s
	}
	h, p := SplitEndpoint(s)
	if p == "" {
		return s
	}
	return JoinEndpoint(h, "*")
}
