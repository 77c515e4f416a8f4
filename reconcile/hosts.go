package reconcile

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/wirepath/wirepath/preload"
)

// host is one machine: the addresses it owns (one, unless a syscall trace
// shows it using several) and the syscall-traced host name, if any.
type host struct {
	addrs []netip.Addr
	pname string // preload host name, "" if not traced
	// use counts sniffed message ends per address, to pick the primary.
	use []int64
	// home is the capture point that sees its traffic best, -1 if none.
	home int32
	// stats of the home choice, for the report.
	homeNear, homeSeen, msgs int64
	// remote is set when the home point sees what the host sends with a
	// TTL below any initial TTL: a router lies between them, so the
	// host's own syscall trace, where there is one, is nearer.
	remote bool
}

// hostTable maps addresses and traced host names to hosts.
type hostTable struct {
	hosts  []*host
	byAddr map[netip.Addr]int32
	byName map[string]int32
}

func newHostTable() *hostTable {
	return &hostTable{byAddr: map[netip.Addr]int32{}, byName: map[string]int32{}}
}

// ownable reports whether a is an address that names one machine.
func ownable(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsMulticast()
}

// ofAddr returns the host owning a, creating one if needed.
func (t *hostTable) ofAddr(a netip.Addr) int32 {
	a = a.Unmap()
	if h, ok := t.byAddr[a]; ok {
		return h
	}
	h := int32(len(t.hosts))
	t.hosts = append(t.hosts, &host{addrs: []netip.Addr{a}, use: []int64{0}, home: -1})
	t.byAddr[a] = h
	return h
}

// ofName returns the traced host of that name, creating one if needed.
func (t *hostTable) ofName(name string) int32 {
	if h, ok := t.byName[name]; ok {
		return h
	}
	h := int32(len(t.hosts))
	t.hosts = append(t.hosts, &host{pname: name, home: -1})
	t.byName[name] = h
	return h
}

// learnPreload ties the addresses each traced host used as local
// endpoints to it. An address claimed by two traced hosts stays with the
// first; the conflict is returned as a warning.
func (t *hostTable) learnPreload(tab *preload.Table) []string {
	var warns []string
	for _, c := range tab.Conns {
		if c.Sock != preload.SockTCP && c.Sock != preload.SockUDP {
			continue
		}
		h := t.ofName(c.Host)
		ap, err := parseAddrPort(c.Local)
		if err != nil || !ownable(ap.Addr()) {
			continue
		}
		a := ap.Addr()
		if o, ok := t.byAddr[a]; ok {
			if o != h && t.hosts[o].pname != "" {
				warns = append(warns, fmt.Sprintf("address %s is used by traced hosts %q and %q; it stays with %q", a, t.hosts[o].pname, c.Host, t.hosts[o].pname))
			}
			continue
		}
		t.byAddr[a] = h
		t.hosts[h].addrs = append(t.hosts[h].addrs, a)
		t.hosts[h].use = append(t.hosts[h].use, 0)
	}
	return warns
}

// noteUse counts a sniffed message end at address a of host h.
func (t *hostTable) noteUse(h int32, a netip.Addr) {
	hs := t.hosts[h]
	for i, x := range hs.addrs {
		if x == a {
			hs.use[i]++
			return
		}
	}
}

// primary returns the address by which host h is best known (the one most
// sniffed messages used), or an invalid address when it has none.
func (t *hostTable) primary(h int32) netip.Addr {
	hs := t.hosts[h]
	best := -1
	for i := range hs.addrs {
		if best < 0 || hs.use[i] > hs.use[best] {
			best = i
		}
	}
	if best < 0 {
		return netip.Addr{}
	}
	return hs.addrs[best]
}

// parseAddrPort parses an endpoint as the preload format writes it.
func parseAddrPort(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, err
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// findHosts ties the traced hosts to the addresses their sockets used,
// gives every sniffed endpoint its host, picks each host's home capture
// point and records the TTLs each pair of hosts' messages were seen with.
func (r *Reconciler) findHosts(st *state) {
	if tab := r.opts.Preload; tab != nil {
		st.warns = append(st.warns, st.ht.learnPreload(tab)...)
	}
	st.epHost = make([]int32, len(r.eps))
	for i, ap := range r.eps {
		st.epHost[i] = st.ht.ofAddr(ap.Addr())
	}
	for i := range r.msgs {
		m := &r.msgs[i]
		st.ht.noteUse(st.epHost[m.src], r.eps[m.src].Addr())
		st.ht.noteUse(st.epHost[m.dst], r.eps[m.dst].Addr())
	}
	r.chooseHomes(st.ht, st.epHost)
	r.pairTTLs(st)
}

// pairTTLs records, per (sender host, receiver host), the highest and the
// lowest TTL any capture point saw their messages with: a sighting at the
// highest is on the sender's side of every router the messages crossed,
// one at the lowest on the receiver's.
// The pair being counted is kept aside while consecutive messages share it
// (a connection's run of messages), and stored when the pair changes.
func (r *Reconciler) pairTTLs(st *state) {
	var k [2]int32
	var v [2]uint8
	have := false
	for i := range r.msgs {
		m := &r.msgs[i]
		sights := r.sightsOf(m)
		if len(sights) == 0 {
			continue
		}
		if nk := [2]int32{st.epHost[m.src], st.epHost[m.dst]}; !have || nk != k {
			if have {
				st.pairTTL[k] = v
			}
			k, have = nk, true
			var ok bool
			if v, ok = st.pairTTL[k]; !ok {
				v = [2]uint8{sights[0].ttl, sights[0].ttl}
			}
		}
		for _, s := range sights {
			v = [2]uint8{max(v[0], s.ttl), min(v[1], s.ttl)}
		}
	}
	if have {
		st.pairTTL[k] = v
	}
}

// homeCount is what one capture point saw of one host's messages.
type homeCount struct {
	near int64 // messages it saw whole, on the host's side of every router
	seen int64 // messages it saw at all
	// sentTTL is the highest TTL of a message the host sent, here.
	sentTTL uint8
}

// chooseHomes picks each host's home capture point (WAP5 section 7): the
// point that sees its messages whole and on its side of the routers (the
// highest TTL of a message the host sent, the lowest of one it received)
// most often — every message for a sniffer on the host's own switch —,
// then the one that sees most of them, then the lowest sniffer id.
func (r *Reconciler) chooseHomes(ht *hostTable, epHost []int32) {
	counts := map[[2]int32]*homeCount{}
	// The messages of a connection come in runs: the last two counts
	// (the senders' and the receivers') are remembered.
	var memoK [2][2]int32
	var memoC [2]*homeCount
	get := func(side int, h int32, pt uint16) *homeCount {
		k := [2]int32{h, int32(pt)}
		if memoC[side] != nil && memoK[side] == k {
			return memoC[side]
		}
		c := counts[k]
		if c == nil {
			c = &homeCount{}
			counts[k] = c
		}
		memoK[side], memoC[side] = k, c
		return c
	}
	for i := range r.msgs {
		m := &r.msgs[i]
		ss := r.sightsOf(m)
		if len(ss) == 0 {
			continue
		}
		hi, lo := ss[0].ttl, ss[0].ttl
		for _, s := range ss[1:] {
			hi, lo = max(hi, s.ttl), min(lo, s.ttl)
		}
		sh, dh := epHost[m.src], epHost[m.dst]
		ht.hosts[sh].msgs++
		ht.hosts[dh].msgs++
		for _, s := range ss {
			c := get(0, sh, s.point)
			c.seen++
			c.sentTTL = max(c.sentTTL, s.ttl)
			if s.full && s.ttl == hi {
				c.near++
			}
			c = get(1, dh, s.point)
			c.seen++
			if s.full && s.ttl == lo {
				c.near++
			}
		}
	}
	type cand struct {
		h  int32
		pt uint16
		c  *homeCount
	}
	cands := make([]cand, 0, len(counts))
	for k, c := range counts {
		cands = append(cands, cand{k[0], uint16(k[1]), c})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.h, b.h),
			-cmp.Compare(a.c.near, b.c.near),
			-cmp.Compare(a.c.seen, b.c.seen),
			cmp.Compare(r.points[a.pt].Sniffer, r.points[b.pt].Sniffer),
			cmp.Compare(r.points[a.pt].Interface, r.points[b.pt].Interface))
	})
	for _, c := range cands {
		hs := ht.hosts[c.h]
		if hs.home < 0 {
			hs.home = int32(c.pt)
			hs.homeNear, hs.homeSeen = c.c.near, c.c.seen
			hs.remote = c.c.sentTTL > 0 && !initialTTL(c.c.sentTTL)
		}
	}
}

// pointName names a capture point for reports.
func (r *Reconciler) pointName(pt int32) string {
	if pt < 0 {
		return "-"
	}
	p := r.points[pt]
	name := r.snifferName(int(p.Sniffer))
	if p.Interface != 0 {
		name += "/" + strconv.Itoa(int(p.Interface))
	}
	return name
}

// snifferName names sniffer id (a pcapio.SnifferID) for reports.
func (r *Reconciler) snifferName(id int) string {
	if id < len(r.opts.Sniffers) && r.opts.Sniffers[id].Name != "" {
		return r.opts.Sniffers[id].Name
	}
	return "sniffer " + strconv.Itoa(id)
}

// initialTTL reports whether ttl is one that stacks send with (Linux and
// most Unixes 64, Windows 128, network gear 255, some old stacks 32): a
// packet seen with another has crossed a router.
func initialTTL(ttl uint8) bool {
	return ttl == 64 || ttl == 128 || ttl == 255 || ttl == 32
}
