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
			case KindReturn:
				evidence[m.Src] = true
			}
		}
	}
	isFixed := func(ep Sym) bool {
		_, p := SplitEndpoint(t.Str(ep))
		if p == "" {
			return false
		}
		n, _ := strconv.Atoi(p)
		return peers[ep] >= opt.MinPeers || evidence[ep] || (opt.WellKnownFixed && n > 0 && n < 1024)
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
