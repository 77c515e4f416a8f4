package reconcile

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// hostName names host h for NameHost: the roles map's name for one of its
// addresses (the primary first), else its primary address, else its traced
// host name.
func (st *state) hostName(r *Reconciler, h int32) string {
	if h < 0 {
		return ""
	}
	if n, ok := st.hostNames[h]; ok {
		return n
	}
	hs := st.ht.hosts[h]
	p := st.ht.primary(h)
	name := ""
	if n, ok := r.opts.Roles.Host(p); ok && p.IsValid() {
		name = n
	} else {
		for _, a := range hs.addrs {
			if n, ok := r.opts.Roles.Host(a); ok {
				name = n
				break
			}
		}
	}
	switch {
	case name != "":
	case p.IsValid():
		name = p.String()
	case hs.pname != "":
		name = hs.pname
	}
	st.hostNames[h] = name
	return name
}

// roleName names the fixed endpoint ep of host h: the roles map's name for
// the endpoint, else its host's name (the map's, or the address) and port.
// An endpoint on a traced host's loopback is named after that host.
func (st *state) roleName(r *Reconciler, ep int32, h int32) string {
	k := nodeKey{h: h, ep: ep}
	if n, ok := st.roleNames[k]; ok {
		return n
	}
	n := st.makeRoleName(r, st.eps[ep], h)
	st.roleNames[k] = n
	return n
}

func (st *state) makeRoleName(r *Reconciler, ep epRef, h int32) string {
	if ep.name != "" {
		return st.hostName(r, h) + ":" + strings.TrimPrefix(ep.name, "unix:")
	}
	if n, ok := r.opts.Roles.Endpoint(ep.ap); ok {
		return n
	}
	a := ep.ap.Addr()
	host := ""
	if n, ok := r.opts.Roles.Host(a); ok {
		host = n
	} else if !ownable(a) && h >= 0 {
		host = st.hostName(r, h)
	}
	port := strconv.Itoa(int(ep.ap.Port()))
	if host != "" {
		return host + ":" + port
	}
	return trace.JoinEndpoint(a.String(), port)
}

// nodeKey identifies a node name request.
type nodeKey struct {
	h  int32
	pc *preload.Conn
	ep int32
}

// nodeName names one end of a message: host h, traced process pc (nil if
// untraced), endpoint ep (an id: st.eps).
func (st *state) nodeName(r *Reconciler, h int32, pc *preload.Conn, ep int32) trace.Sym {
	k := nodeKey{h, pc, ep}
	if r.opts.Naming != NameProcess || pc == nil {
		k.pc = nil
	}
	if r.opts.Naming == NameHost {
		k.ep = -1
	}
	if s, ok := st.nodeSyms[k]; ok {
		return s
	}
	var name string
	switch {
	case r.opts.Naming == NameProcess && pc != nil:
		proc := pc.Process
		if proc == "" {
			if p := r.opts.Preload.Process(preload.ProcKey{Host: pc.Host, PID: pc.PID}); p != nil {
				proc = p.Name
			}
		}
		if proc == "" {
			proc = "?"
		}
		name = proc + "[" + strconv.Itoa(pc.PID) + "]@" + pc.Host
	case r.opts.Naming == NameHost:
		name = st.hostName(r, h)
	case st.fixed[ep]:
		name = st.roleName(r, ep, h)
	default:
		if h >= 0 && len(st.roles[h]) == 1 {
			name = st.roles[h][0]
		} else {
			name = st.hostName(r, h)
		}
	}
	if name == "" {
		name = st.eps[ep].String()
	}
	s := st.tr.Intern(name)
	st.nodeSyms[k] = s
	return s
}

// classifyPorts decides which endpoints are fixed from what the hosts
// did: a port is fixed because connections were opened to it (the side a
// connection was opened to, the receiver of a CALL and the sender of a
// RETURN, a traced socket that accepted connections), and ephemeral
// because it opened them (the other sides), whatever its peers: a client
// port reused for connections to several servers (behind a NAT load
// balancer, one port shows two or three peers) stays a client's. Only a
// port with neither evidence is fixed by WAP5's rule (section 2.5.1: it
// communicates with many other ports) or by being below 1024 (unless
// NoWellKnown). It then lists each host's roles.
func (r *Reconciler) classifyPorts(st *state, ranges [][2]int) {
	st.fixed = make([]bool, len(st.eps))
	opener := make([]bool, len(st.eps))
	peers := st.fixedByConn(ranges, opener)
	st.fixedByKind(opener)
	for id, ep := range st.eps {
		if st.fixed[id] || opener[id] {
			continue // what the hosts did decides
		}
		if peers[id] >= r.opts.MinPeers {
			st.fixed[id] = true
		}
		if !r.opts.NoWellKnown && ep.name == "" && ep.ap.Port() > 0 && ep.ap.Port() < 1024 {
			st.fixed[id] = true
		}
	}
	r.listRoles(st)
}

// fixedByConn marks the endpoints connections were opened to and those of
// listening traced sockets, marks in opener those that opened connections,
// and returns how many distinct peers each endpoint has (connections with
// messages only).
func (st *state) fixedByConn(ranges [][2]int, opener []bool) []int {
	peers := make([]int, len(st.eps))
	seen := map[[2]int32]bool{}
	for _, rc := range st.conns {
		if ranges[rc.id][0] == ranges[rc.id][1] {
			continue
		}
		a, b := rc.epi[0], rc.epi[1]
		if a > b {
			a, b = b, a
		}
		if !seen[[2]int32{a, b}] {
			seen[[2]int32{a, b}] = true
			peers[a]++
			peers[b]++
		}
		if rc.caller >= 0 && !rc.dgram {
			st.fixed[rc.epi[1-rc.caller]] = true
			opener[rc.epi[rc.caller]] = true
		}
		for e := range 2 {
			if c := rc.pc[e]; c != nil && c.Listening {
				st.fixed[rc.epi[e]] = true
			}
		}
	}
	return peers
}

// fixedByKind marks the receiver of every CALL and the sender of every
// RETURN, and in opener their peers.
func (st *state) fixedByKind(opener []bool) {
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		switch lm.kind {
		case trace.KindCall:
			st.fixed[rc.epi[1-lm.dir]] = true
			opener[rc.epi[lm.dir]] = true
		case trace.KindReturn:
			st.fixed[rc.epi[lm.dir]] = true
			opener[rc.epi[1-lm.dir]] = true
		}
	}
}

// listRoles lists, per host, the names of its fixed IP endpoints.
func (r *Reconciler) listRoles(st *state) {
	type hostEP struct{ h, ep int32 }
	done := map[hostEP]bool{}
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		for _, e := range [2]hostEP{{lm.hs, rc.epi[lm.dir]}, {lm.hr, rc.epi[1-lm.dir]}} {
			if e.h < 0 || !st.fixed[e.ep] || st.eps[e.ep].name != "" || done[e] {
				continue
			}
			done[e] = true
			n := st.roleName(r, e.ep, e.h)
			if !slices.Contains(st.roles[e.h], n) {
				st.roles[e.h] = append(st.roles[e.h], n)
			}
		}
	}
}

// messageEnds numbers the connections' endpoints (st.eps, rconn.epi) and
// gives each logical message the traced processes and the hosts at its
// ends.
func (st *state) messageEnds() {
	for _, rc := range st.conns {
		for e := range 2 {
			id, ok := st.epIdx[rc.ep[e]]
			if !ok {
				id = int32(len(st.eps))
				st.eps = append(st.eps, rc.ep[e])
				st.epIdx[rc.ep[e]] = id
			}
			rc.epi[e] = id
		}
	}
	// endHost gives the same answer to the same question: a message with
	// the connection, direction and traced processes of the last takes
	// its hosts.
	var last *lmsg
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		s, d := int(lm.dir), 1-int(lm.dir)
		lm.spc, lm.rpc = rc.pc[s], rc.pc[d]
		if lm.sa.ok() {
			lm.spc = lm.sa.c
		}
		if lm.rb.ok() {
			lm.rpc = lm.rb.c
		}
		if last != nil && last.rc == lm.rc && last.dir == lm.dir && last.spc == lm.spc && last.rpc == lm.rpc {
			lm.hs, lm.hr = last.hs, last.hr
		} else {
			lm.hs = st.endHost(rc, s, lm.spc)
			lm.hr = st.endHost(rc, d, lm.rpc)
		}
		last = lm
	}
}

// endHost returns the host at end e of rc, whose traced process there is
// pc (or nil): the owner of its address; for a loopback or UNIX-domain
// endpoint, the traced host of either end (both ends share it).
func (st *state) endHost(rc *rconn, e int, pc *preload.Conn) int32 {
	ep := rc.ep[e]
	local := ep.name != "" || !ownable(ep.ap.Addr())
	if !local {
		return st.ht.ofAddr(ep.ap.Addr())
	}
	switch {
	case pc != nil:
		return st.ht.ofName(pc.Host)
	case rc.pc[e] != nil:
		return st.ht.ofName(rc.pc[e].Host)
	case rc.pc[1-e] != nil && (ep.name != "" || ep.ap.Addr().IsLoopback()):
		return st.ht.ofName(rc.pc[1-e].Host)
	case ep.name == "" && ep.ap.IsValid():
		return st.ht.ofAddr(ep.ap.Addr())
	}
	return -1
}
