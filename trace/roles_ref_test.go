package trace

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// refRoles is the first, map-based implementation of ClassifyRoles, kept
// as a slow, readable oracle for the dense one.
type refRoles struct {
	fixed  map[Sym]bool
	server map[Sym]bool
	known  map[Sym]bool
	t      *Trace
}

func refClassifyRoles(t *Trace, opt RoleOptions) *refRoles {
	if opt.MinPeers <= 0 {
		opt.MinPeers = 3
	}
	r := &refRoles{fixed: map[Sym]bool{}, server: map[Sym]bool{}, known: map[Sym]bool{}, t: t}
	type pair struct{ a, b Sym }
	peers := map[Sym]int{}
	seen := map[pair]bool{}
	evidence := map[Sym]bool{}
	opener := map[Sym]bool{}
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
				evidence[m.Dst] = true
				opener[m.Src] = true
			case KindReturn:
				evidence[m.Src] = true
				opener[m.Dst] = true
			}
		}
	}
	isFixed := func(ep Sym) bool {
		_, p := SplitEndpoint(t.Str(ep))
		if p == "" {
			return false
		}
		n, _ := strconv.Atoi(p)
		if evidence[ep] {
			return true
		}
		if opener[ep] {
			return false
		}
		return peers[ep] >= opt.MinPeers || (opt.WellKnownFixed && n > 0 && n < 1024)
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, e := range [2]struct{ ep, node Sym }{{m.Src, m.SrcNode}, {m.Dst, m.DstNode}} {
			if e.node == 0 || e.ep == 0 {
				continue
			}
			if _, p := SplitEndpoint(t.Str(e.ep)); p != "" {
				r.known[e.node] = true
			}
			if isFixed(e.ep) {
				r.fixed[e.ep] = true
				r.server[e.node] = true
			}
		}
	}
	return r
}

func (r *refRoles) client(node Sym) bool { return r.known[node] && !r.server[node] }

func (r *refRoles) endpointName(ep Sym) string {
	s := r.t.Str(ep)
	h, p := SplitEndpoint(s)
	if p == "" || r.fixed[ep] {
		return s
	}
	return JoinEndpoint(h, "*")
}

// TestClassifyRolesMatchesReference compares ClassifyRoles with the
// map-based oracle on random traces with few and many peers per port,
// well-known ports, kinds, self-talk and missing endpoints.
func TestClassifyRolesMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		tr := &Trace{}
		eps := []string{"", "unix:/run/a.sock", "nohost", "[::1]:53"}
		for i := 0; i < 40; i++ {
			eps = append(eps, fmt.Sprintf("10.0.0.%d:%d", r.IntN(6), []int{80, 5432, 40000 + r.IntN(50), 1023, 1024}[r.IntN(5)]))
		}
		nodes := []string{"", "a", "b", "c", "d"}
		for i := 0; i < 300; i++ {
			tr.Messages = append(tr.Messages, Message{
				Src: tr.Intern(eps[r.IntN(len(eps))]), Dst: tr.Intern(eps[r.IntN(len(eps))]),
				SrcNode: tr.Intern(nodes[r.IntN(len(nodes))]), DstNode: tr.Intern(nodes[r.IntN(len(nodes))]),
				Kind: Kind(r.IntN(3)),
			})
		}
		for _, opt := range []RoleOptions{DefaultRoleOptions(), {MinPeers: 1}, {MinPeers: 5, UseKinds: true}, {}} {
			got, want := ClassifyRoles(tr, opt), refClassifyRoles(tr, opt)
			for s := Sym(0); int(s) < tr.Syms.Len()+2; s++ {
				if got.Fixed(s) != want.fixed[s] || got.Client(s) != want.client(s) {
					t.Fatalf("seed %d opt %+v sym %d %q: fixed %v client %v, want %v %v", seed, opt, s, tr.Str(s), got.Fixed(s), got.Client(s), want.fixed[s], want.client(s))
				}
				if int(s) < tr.Syms.Len() && got.EndpointName(s) != want.endpointName(s) {
					t.Fatalf("seed %d sym %q: name %q, want %q", seed, tr.Str(s), got.EndpointName(s), want.endpointName(s))
				}
			}
		}
	}
}

// A client port reused for connections to three servers (behind a NAT
// load balancer, or because the client's port range wrapped) has three
// peers, but it sent CALLs and received RETURNs: it is the client's, and
// its host stays a client (issue 10: one such host was taken for a server
// and half the requests lost their client root).
func TestClassifyRolesReusedClientPort(t *testing.T) {
	tr := &Trace{}
	cli := tr.Intern("198.51.100.2:40000")
	node := tr.Intern("198.51.100.2")
	for i, srv := range []string{"203.0.113.11:80", "203.0.113.12:80", "198.51.100.100:80"} {
		s, sn := tr.Intern(srv), tr.Intern(fmt.Sprintf("web%d", i))
		tr.Messages = append(tr.Messages,
			Message{Src: cli, Dst: s, SrcNode: node, DstNode: sn, Kind: KindCall},
			Message{Src: s, Dst: cli, SrcNode: sn, DstNode: node, Kind: KindReturn})
	}
	r := ClassifyRoles(tr, DefaultRoleOptions())
	if r.Fixed(cli) || !r.Client(node) {
		t.Errorf("client port fixed %v, client host a client %v", r.Fixed(cli), r.Client(node))
	}
	// Without kinds, its three peers make it fixed (WAP5's rule).
	if r := ClassifyRoles(tr, RoleOptions{MinPeers: 3}); !r.Fixed(cli) {
		t.Errorf("without kinds: not fixed")
	}
}
