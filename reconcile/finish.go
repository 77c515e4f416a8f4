package reconcile

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// state is the working state of Finish.
type state struct {
	ht           *hostTable
	epHost       []int32
	pairTTL      map[[2]int32][2]uint8 // (sender, receiver host) -> highest, lowest TTL seen
	conns        []*rconn
	byPair       map[pairKey][]int32
	dgrams       map[dirKey]int32
	udpFrom      map[halfKey][]netip.Addr // sniffed datagrams: sender addresses by (sender port, receiver)
	udpTo        map[halfKey][]netip.Addr // receiver addresses by (receiver port, sender)
	rough        map[string]int64
	roughSamples map[string][]int64
	calls        map[*preload.Conn][]callStatus
	out          []lmsg
	eps          []epRef // every connection endpoint, by id (rconn.epi)
	epIdx        map[epRef]int32
	fixed        []bool // by endpoint id
	roles        map[int32][]string
	hostNames    map[int32]string
	roleNames    map[nodeKey]string
	nodeSyms     map[nodeKey]trace.Sym
	tr           *trace.Trace
	warns        []string
	// clock domains: sniffers 0..nSniffers-1, then traced hosts.
	nSniffers int32
	hostDom   map[string]int32
	domNames  []string
}

func newState() *state {
	return &state{
		ht:           newHostTable(),
		pairTTL:      map[[2]int32][2]uint8{},
		byPair:       map[pairKey][]int32{},
		dgrams:       map[dirKey]int32{},
		udpFrom:      map[halfKey][]netip.Addr{},
		udpTo:        map[halfKey][]netip.Addr{},
		rough:        map[string]int64{},
		roughSamples: map[string][]int64{},
		calls:        map[*preload.Conn][]callStatus{},
		epIdx:        map[epRef]int32{},
		roles:        map[int32][]string{},
		hostNames:    map[int32]string{},
		roleNames:    map[nodeKey]string{},
		nodeSyms:     map[nodeKey]trace.Sym{},
		hostDom:      map[string]int32{},
		tr:           &trace.Trace{},
	}
}

func (st *state) warn(format string, args ...any) {
	st.warns = append(st.warns, fmt.Sprintf(format, args...))
}

func (st *state) newConn(proto trace.Proto, dgram bool) int32 {
	id := int32(len(st.conns))
	st.conns = append(st.conns, &rconn{id: id, proto: proto, dgram: dgram, caller: -1})
	return id
}

// dgram returns the datagram group of direction k, creating it if needed.
func (st *state) dgram(k dirKey) *rconn {
	if id, ok := st.dgrams[k]; ok {
		return st.conns[id]
	}
	id := st.newConn(k.proto, true)
	rc := st.conns[id]
	rc.ep = [2]epRef{k.src, k.dst}
	st.dgrams[k] = id
	return rc
}

// roughOffsets estimates, per traced host, its clock minus the sniffers'
// (the median difference between a sniffed connection's first packet and
// the traced connect or accept), to find NAT translations and choose among
// connections that reused a 4-tuple. The real estimate comes later.
func (st *state) roughOffsets() {
	for h, xs := range st.roughSamples {
		slices.Sort(xs)
		st.rough[h] = xs[len(xs)/2]
	}
}

func (st *state) setCall(c *preload.Conn, i int32, s callStatus) {
	if c == nil {
		return
	}
	cs := st.calls[c]
	if cs == nil {
		cs = make([]callStatus, len(c.Msgs))
		st.calls[c] = cs
	}
	cs[i] = s
}

func (st *state) dropCall(c *preload.Conn, i int32, s callStatus) { st.setCall(c, i, s) }

func (st *state) dropCalls(c *preload.Conn, ss spans, s callStatus) {
	for _, x := range ss {
		st.setCall(c, x.i, s)
	}
}

func (st *state) dropConn(c *preload.Conn, s callStatus) {
	for i := range c.Msgs {
		st.setCall(c, int32(i), s)
	}
}

// hostDomain returns the clock domain of traced host name, creating it.
func (st *state) hostDomain(name string) int32 {
	if d, ok := st.hostDom[name]; ok {
		return d
	}
	d := int32(len(st.domNames))
	st.hostDom[name] = d
	st.domNames = append(st.domNames, name)
	return d
}

// cand is one candidate timestamp of a message end: when, on which clock
// domain (-1: none).
type cand struct {
	ts  int64
	dom int32
}

// Candidate slots, best first.
const (
	slotHome     = iota // the end's home capture point saw the whole message
	slotTrace           // the traced process's own call
	slotSide            // another capture point on the end's side saw it whole
	slotHomePart        // the home point saw part of it
	slotSidePart        // another point on the end's side saw part of it
	numSlots
)

// stamps returns the candidate timestamps of the send and the receive of
// lm, best first. A logical message that is only part of a sniffed message
// (several writes in one, BoundWrites) takes the traced times first unless
// raw is set: the sniffed first and last times belong to the whole.
func (r *Reconciler) stamps(st *state, lm *lmsg, raw bool) (send, recv [numSlots]cand) {
	for i := range send {
		send[i].dom, recv[i].dom = -1, -1
	}
	if lm.sa.ok() {
		send[slotTrace] = cand{lm.sa.ts(), st.hostDomain(lm.sa.c.Host)}
	}
	if lm.rb.ok() {
		recv[slotTrace] = cand{lm.rb.end(), st.hostDomain(lm.rb.c.Host)}
	}
	partial := (lm.fa >= 0 && !lm.faStart) || (lm.fb >= 0 && !lm.fbEnd)
	if !raw && (partial || st.remoteHome(lm.hs)) {
		send[slotHome], send[slotTrace] = send[slotTrace], cand{dom: -1}
	}
	if !raw && (partial || st.remoteHome(lm.hr)) {
		recv[slotHome], recv[slotTrace] = recv[slotTrace], cand{dom: -1}
	}
	ttl, seenPair := st.pairTTL[[2]int32{lm.hs, lm.hr}]
	if lm.faStart {
		r.sniffedStamps(&send, st, lm.fa, lm.hs, seenPair, ttl[0], true)
	}
	if lm.fbEnd {
		r.sniffedStamps(&recv, st, lm.fb, lm.hr, seenPair, ttl[1], false)
	}
	return send, recv
}

// sniffedStamps fills the sniffer slots of one end of a message from the
// sightings of sniffed message f: the first times for the send (first
// set), the last times for the receive. The home point of host h goes to
// the home slots; another point that saw the message with sideTTL (on the
// end's side of the routers) to the side slots, the earliest first time or
// the latest last time among them.
func (r *Reconciler) sniffedStamps(cs *[numSlots]cand, st *state, f int32, h int32, seenPair bool, sideTTL uint8, first bool) {
	home := int32(-1)
	if h >= 0 {
		home = st.ht.hosts[h].home
	}
	for _, s := range r.sightsOf(&r.msgs[f]) {
		c := cand{s.last, int32(r.points[s.point].Sniffer)}
		if first {
			c.ts = s.first
		}
		switch {
		case int32(s.point) == home:
			if s.full && cs[slotHome].dom < 0 {
				cs[slotHome] = c
			} else if !s.full {
				cs[slotHomePart] = c
			}
		case seenPair && s.ttl == sideTTL:
			slot := slotSide
			if !s.full {
				slot = slotSidePart
			}
			if cs[slot].dom < 0 || (first && c.ts < cs[slot].ts) || (!first && c.ts > cs[slot].ts) {
				cs[slot] = c
			}
		}
	}
}

// remoteHome reports whether host h's home point is across a router from
// it (so its traced calls, where it has them, are nearer its ends).
func (st *state) remoteHome(h int32) bool {
	return h >= 0 && st.ht.hosts[h].remote
}

func best(cs *[numSlots]cand) cand {
	for _, c := range cs {
		if c.dom >= 0 {
			return c
		}
	}
	return cand{dom: -1}
}

// pairTTLs records, per (sender host, receiver host), the highest and the
// lowest TTL any capture point saw their messages with: a sighting at the
// highest is on the sender's side of every router the messages crossed,
// one at the lowest on the receiver's.
func (r *Reconciler) pairTTLs(st *state) {
	for i := range r.msgs {
		m := &r.msgs[i]
		k := [2]int32{st.epHost[m.src], st.epHost[m.dst]}
		for _, s := range r.sightsOf(m) {
			v, ok := st.pairTTL[k]
			if !ok {
				v = [2]uint8{s.ttl, s.ttl}
			}
			st.pairTTL[k] = [2]uint8{max(v[0], s.ttl), min(v[1], s.ttl)}
		}
	}
}

// preloadKinds labels the messages of a connection that no sniffer saw (a
// whole connection, or the part before or after the capture): the side
// that connected calls, each of its messages a CALL with a new id; the
// other side's next message is the RETURN of the last CALL. Sniffed
// messages keep flows' labels and take part in the pairing. The order is
// the traced caller's own sequence of calls (or the callee's when only it
// was traced); without one, nothing is labelled.
func (r *Reconciler) preloadKinds(st *state, ranges [][2]int) {
	for _, rc := range st.conns {
		if rc.dgram || rc.caller < 0 {
			continue
		}
		lo, hi := ranges[rc.id][0], ranges[rc.id][1]
		unsniffed := false
		for i := lo; i < hi; i++ {
			unsniffed = unsniffed || st.out[i].fa < 0
		}
		if !unsniffed {
			continue
		}
		caller := rc.caller
		view := rc.pc[caller]
		if view == nil {
			view = rc.pc[1-caller]
		}
		if view == nil {
			continue
		}
		ok := true
		for i := lo; i < hi && ok; i++ {
			lm := &st.out[i]
			switch {
			case lm.sa.ok() && lm.sa.c == view:
				lm.order = int64(lm.sa.i)
			case lm.rb.ok() && lm.rb.c == view:
				lm.order = int64(lm.rb.i)
			default:
				ok = false
			}
		}
		if !ok {
			continue
		}
		ms := st.out[lo:hi]
		slices.SortStableFunc(ms, func(a, b lmsg) int { return cmp.Compare(a.order, b.order) })
		var pending flows.CallID
		pendingP := false
		n := uint32(0)
		for i := range ms {
			lm := &ms[i]
			switch {
			case lm.fa >= 0 && lm.kind == trace.KindCall:
				pending, pendingP = lm.call, lm.pcall
			case lm.fa >= 0:
				if lm.kind == trace.KindReturn {
					pending = flows.CallID{}
				}
			case lm.dir == caller:
				lm.kind = trace.KindCall
				lm.call, lm.pcall = flows.CallID{Conn: uint64(rc.id), Index: n}, true
				n++
				pending, pendingP = lm.call, true
			case !pending.IsZero() || pendingP:
				lm.kind = trace.KindReturn
				lm.call, lm.pcall = pending, pendingP
				pending, pendingP = flows.CallID{}, false
			}
		}
	}
}

// Finish reconciles what was added with the syscall traces and returns the
// trace (messages in order of their corrected time) and the report. It
// may be called once.
func (r *Reconciler) Finish() (*trace.Trace, *Report, error) {
	if r.finished {
		return nil, nil, errors.New("reconcile: Finish called twice")
	}
	r.finished = true
	st := newState()
	rep := &Report{Naming: r.opts.Naming.String(), Boundaries: []string{"fat", "writes"}[r.opts.Boundaries], Calls: map[string]int64{}}

	// Hosts and their home capture points.
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

	// Connections, their traced ends, and the logical messages.
	r.buildSniffed(st)
	r.attachPreload(st)
	ranges := make([][2]int, len(st.conns))
	st.out = make([]lmsg, 0, len(r.msgs)+int(r.preloadCalls()))
	for _, rc := range st.conns {
		lo := len(st.out)
		if rc.dgram {
			r.datagrams(st, rc)
		} else {
			r.streamDir(st, rc, 0)
			r.streamDir(st, rc, 1)
		}
		ranges[rc.id] = [2]int{lo, len(st.out)}
	}
	r.preloadKinds(st, ranges)
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
		lm.hs = st.endHost(rc, s, lm.spc)
		lm.hr = st.endHost(rc, d, lm.rpc)
	}
	r.classifyPorts(st, ranges)

	// Clock domains: sniffers first, then traced hosts.
	nSn := len(r.opts.Sniffers)
	for _, p := range r.points {
		nSn = max(nSn, int(p.Sniffer)+1)
	}
	st.nSniffers = int32(nSn)
	for i := range nSn {
		st.domNames = append(st.domNames, r.snifferName(pcapio.SnifferID(i)))
	}
	if tab := r.opts.Preload; tab != nil {
		for _, p := range tab.Processes() {
			st.hostDomain(p.Host)
		}
	}

	// Samples for the clocks: every message with both ends, and every
	// traced call next to the sniffer sighting of its bytes.
	cs := newClockSamples()
	domStamps := map[int32]int64{}
	for i := range st.out {
		lm := &st.out[i]
		send, recv := r.stamps(st, lm, false)
		bs, br := best(&send), best(&recv)
		if bs.dom >= 0 {
			domStamps[bs.dom]++
		}
		if br.dom >= 0 {
			domStamps[br.dom]++
		}
		if bs.dom >= 0 && br.dom >= 0 {
			cs.add(bs.dom, bs.ts, br.dom, br.ts)
		}
		send, recv = r.stamps(st, lm, true)
		if t := send[slotTrace]; t.dom >= 0 {
			for _, sl := range []int{slotHome, slotSide} {
				if s := send[sl]; s.dom >= 0 {
					cs.add(t.dom, t.ts, s.dom, s.ts)
					break
				}
			}
		}
		if t := recv[slotTrace]; t.dom >= 0 {
			for _, sl := range []int{slotHome, slotSide} {
				if s := recv[sl]; s.dom >= 0 {
					cs.add(s.dom, s.ts, t.dom, t.ts)
					break
				}
			}
		}
	}
	ref := int32(-1)
	var fixed []edge
	for i, sn := range r.opts.Sniffers {
		if sn.Reference {
			ref = int32(i)
		}
	}
	for i, sn := range r.opts.Sniffers {
		if sn.Known && !sn.Reference && ref >= 0 {
			fixed = append(fixed, edge{a: ref, b: int32(i), unc: sn.UncertaintyNS, samples: sn.Samples})
		}
	}
	if ref < 0 && nSn > 0 {
		ref = 0
	}
	if ref < 0 {
		var n int64
		for d, c := range domStamps {
			if c > n || (c == n && d < ref) {
				ref, n = d, c
			}
		}
	}
	est, bad := solveClocks(len(st.domNames), ref, cs, fixed)
	for _, k := range bad {
		st.warn("clocks %q and %q: the two directions' smallest delays have a negative sum (drifting clocks, or events paired wrongly); their offset is unreliable", st.domNames[k[0]], st.domNames[k[1]])
	}

	// Each node's clock: its host's home sniffer's, or its traced host's
	// where no sniffer saw it (or only the traced clock is tied to the
	// reference). A node keeps one clock, so node delays need no offset.
	endDom := func(h int32) int32 {
		if h < 0 {
			return -1
		}
		hs := st.ht.hosts[h]
		sn, hd := int32(-1), int32(-1)
		if hs.home >= 0 {
			sn = int32(r.points[hs.home].Sniffer)
		}
		if d, ok := st.hostDom[hs.pname]; ok && hs.pname != "" && int(d) < len(est) {
			hd = d
		}
		switch {
		case sn >= 0 && hd >= 0 && !est[sn].Known && est[hd].Known:
			return hd
		case sn >= 0:
			return sn
		}
		return hd
	}
	nodeDoms := map[trace.Sym]map[int32]int64{}
	server := map[trace.Sym]bool{}
	type ends struct{ sNode, rNode trace.Sym }
	endNodes := make([]ends, len(st.out))
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		sn := st.nodeName(r, lm.hs, lm.spc, rc.epi[lm.dir])
		rn := st.nodeName(r, lm.hr, lm.rpc, rc.epi[1-lm.dir])
		endNodes[i] = ends{sn, rn}
		server[sn] = server[sn] || st.fixed[rc.epi[lm.dir]]
		server[rn] = server[rn] || st.fixed[rc.epi[1-lm.dir]]
		for _, e := range []struct {
			n trace.Sym
			h int32
		}{{sn, lm.hs}, {rn, lm.hr}} {
			m := nodeDoms[e.n]
			if m == nil {
				m = map[int32]int64{}
				nodeDoms[e.n] = m
			}
			m[endDom(e.h)]++
		}
	}
	nodeDom := map[trace.Sym]int32{}
	for n, m := range nodeDoms {
		d, c := int32(-1), int64(-1)
		for x, k := range m {
			if x >= 0 && (k > c || (k == c && x < d)) {
				d, c = x, k
			}
		}
		nodeDom[n] = d
	}

	// The messages, each end's time on its node's clock.
	tr := st.tr
	tr.Meta.Source = "reconcile"
	tr.Messages = make([]trace.Message, 0, len(st.out))
	corr := make([]int64, 0, len(st.out))
	keep := make([]int32, 0, len(st.out))
	epSyms := make([]trace.Sym, len(st.eps))
	epSym := func(id int32) trace.Sym {
		if epSyms[id] == 0 {
			epSyms[id] = tr.Intern(st.eps[id].String())
		}
		return epSyms[id]
	}
	usedF := make([]uint8, len(r.msgs)) // 1 used, 2 dropped
	var callBuf []byte
	pick := func(cs *[numSlots]cand, d int32) trace.Timestamp {
		for _, c := range cs {
			switch {
			case c.dom < 0 || d < 0:
			case c.dom == d:
				return trace.Timestamp(c.ts)
			case est[c.dom].Known && est[d].Known:
				rep.Converted++
				return trace.Timestamp(c.ts - est[c.dom].Offset + est[d].Offset)
			}
		}
		return trace.NoTime
	}
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		en := endNodes[i]
		send, recv := r.stamps(st, lm, false)
		ds, dr := nodeDom[en.sNode], nodeDom[en.rNode]
		m := trace.Message{
			SendTS: pick(&send, ds), RecvTS: pick(&recv, dr),
			Bytes: lm.bytes, Src: epSym(rc.epi[lm.dir]), Dst: epSym(rc.epi[1-lm.dir]),
			SrcNode: en.sNode, DstNode: en.rNode, Kind: lm.kind, Proto: rc.proto,
		}
		if lm.pcall || !lm.call.IsZero() {
			callBuf = lm.call.AppendText(callBuf[:0])
			if lm.pcall {
				callBuf[0] = 'p'
			}
			m.CallID = tr.Syms.InternBytes(callBuf)
		}
		mark := uint8(1)
		if !m.SendTS.Known() && !m.RecvTS.Known() {
			rep.DroppedNoTime++
			mark = 2
		}
		for j := lm.fFrom; j < lm.fTo; j++ {
			f := rc.fmsgs[lm.dir][j]
			if usedF[f] != 1 {
				usedF[f] = mark
			}
		}
		if mark == 2 {
			continue
		}
		var t int64
		switch {
		case m.SendTS.Known():
			t = int64(m.SendTS)
			if ds >= 0 && est[ds].Known {
				t -= est[ds].Offset
			}
		default:
			t = int64(m.RecvTS)
			if dr >= 0 && est[dr].Known {
				t -= est[dr].Offset
			}
		}
		tr.Messages = append(tr.Messages, m)
		corr = append(corr, t)
		keep = append(keep, int32(i))
		r.countMessage(rep, &m, lm)
	}
	// Order by corrected time; ties by connection, direction, position.
	idx := make([]int32, len(tr.Messages))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		la, lb := &st.out[keep[a]], &st.out[keep[b]]
		return cmp.Or(cmp.Compare(corr[a], corr[b]), cmp.Compare(la.rc, lb.rc), cmp.Compare(la.dir, lb.dir), cmp.Compare(la.off, lb.off))
	})
	sorted := make([]trace.Message, len(idx))
	for i, j := range idx {
		sorted[i] = tr.Messages[j]
	}
	tr.Messages = sorted

	// Accounting.
	rep.FlowsIn = int64(len(r.msgs))
	for _, u := range usedF {
		switch u {
		case 1:
			rep.FlowsUsed++
		case 2:
			rep.FlowsDropped++
		default:
			rep.FlowsUnplaced++
		}
	}
	if tab := r.opts.Preload; tab != nil {
		for _, c := range tab.Conns {
			if len(c.Msgs) == 0 {
				continue
			}
			rep.PreloadConns++
			cs := st.calls[c]
			for i := range c.Msgs {
				s := callUnset
				if cs != nil {
					s = cs[i]
				}
				rep.PreloadCalls++
				rep.Calls[callStatusNames[s]]++
			}
		}
		for _, rc := range st.conns {
			if rc.sniffed && !rc.dgram {
				for e := range 2 {
					if rc.pc[e] != nil {
						rep.SniffedConns++
					}
				}
			}
		}
	}
	r.clockReport(st, rep, est, ref, nodeDom, nodeDoms)
	r.hostReport(st, rep)
	rep.Nodes = len(nodeDom)
	for _, v := range server {
		if v {
			rep.Servers++
		}
	}
	if n := len(st.warns); n > r.opts.MaxWarnings {
		st.warns = append(st.warns[:r.opts.MaxWarnings], fmt.Sprintf("... and %d more warnings", n-r.opts.MaxWarnings))
	}
	rep.Warnings = st.warns
	tr.Meta.Warnings = append(tr.Meta.Warnings, st.warns...)
	tr.Meta.Accounting = append(tr.Meta.Accounting, rep.Accounting()...)
	tr.Meta.Clocks = rep.Clocks
	tr.Meta.Offsets = rep.Offsets
	return tr, rep, nil
}

// countMessage adds one output message to the report.
func (r *Reconciler) countMessage(rep *Report, m *trace.Message, lm *lmsg) {
	rep.Messages++
	switch {
	case m.SendTS.Known() && m.RecvTS.Known():
		rep.BothEnds++
	case m.SendTS.Known():
		rep.SendOnly++
	default:
		rep.RecvOnly++
	}
	traced := lm.spc != nil || lm.rpc != nil
	switch {
	case lm.fa < 0:
		rep.PreloadOnly++
	case traced:
		rep.Merged++
	default:
		rep.SniffedOnly++
	}
	if traced {
		rep.ProcessEnds++
	}
	if lm.spc != nil && lm.rpc != nil {
		rep.ProcessBoth++
	}
}

// clockReport fills the clocks (sniffers and traced hosts against the
// reference clock) and the node offsets (against the reference node).
func (r *Reconciler) clockReport(st *state, rep *Report, est []Estimate, ref int32, nodeDom map[trace.Sym]int32, nodeDoms map[trace.Sym]map[int32]int64) {
	refName := ""
	if ref >= 0 {
		refName = st.domNames[ref]
	}
	for i := range st.nSniffers {
		c := trace.Clock{Name: st.domNames[i], Kind: "sniffer", Reference: refName}
		if int(i) < len(r.opts.Sniffers) && r.opts.Sniffers[i].Known {
			sn := r.opts.Sniffers[i]
			c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, sn.OffsetNS, sn.UncertaintyNS, sn.Samples, sn.Method
		} else if est[i].Known {
			c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, est[i].Offset, est[i].Uncertainty, est[i].Samples, "messages"
		} else {
			c.Method = "unknown"
		}
		rep.Clocks = append(rep.Clocks, c)
	}
	for d := st.nSniffers; d < int32(len(st.domNames)); d++ {
		c := trace.Clock{Name: st.domNames[d], Kind: "host", Reference: refName, Method: "unknown"}
		if est[d].Known {
			c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, est[d].Offset, est[d].Uncertainty, est[d].Samples, "messages"
			if d == ref {
				c.Method = "reference"
			}
		}
		rep.Clocks = append(rep.Clocks, c)
	}
	// The reference node: the busiest node on the reference clock, else
	// the busiest on a clock tied to it.
	var refNode trace.Sym
	var refN int64 = -1
	for _, pass := range []bool{true, false} {
		for n, d := range nodeDom {
			if d < 0 || !est[d].Known || (pass && d != ref) {
				continue
			}
			var c int64
			for _, k := range nodeDoms[n] {
				c += k
			}
			if c > refN || (c == refN && st.tr.Str(n) < st.tr.Str(refNode)) {
				refNode, refN = n, c
			}
		}
		if refN >= 0 {
			break
		}
	}
	if refN < 0 {
		return
	}
	rep.Reference = st.tr.Str(refNode)
	rd := nodeDom[refNode]
	names := make([]trace.Sym, 0, len(nodeDom))
	for n := range nodeDom {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b trace.Sym) int { return cmp.Compare(st.tr.Str(a), st.tr.Str(b)) })
	for _, n := range names {
		d := nodeDom[n]
		o := trace.Offset{Node: st.tr.Str(n), Reference: rep.Reference}
		if d >= 0 && est[d].Known {
			o.Known = true
			o.OffsetNS = est[d].Offset - est[rd].Offset
			if d != rd {
				o.UncertaintyNS = est[d].Uncertainty + est[rd].Uncertainty
				o.Samples = est[d].Samples
				if est[rd].Samples > 0 {
					o.Samples = min(o.Samples, est[rd].Samples)
				}
			}
		}
		rep.Offsets = append(rep.Offsets, o)
	}
}

// hostReport lists each host's home capture point.
func (r *Reconciler) hostReport(st *state, rep *Report) {
	for h, hs := range st.ht.hosts {
		if hs.msgs == 0 && hs.pname == "" {
			continue
		}
		rep.Hosts = append(rep.Hosts, HostReport{
			Host: st.hostName(r, int32(h)), Traced: hs.pname, Home: r.pointName(hs.home),
			Near: hs.homeNear, Seen: hs.homeSeen, Messages: hs.msgs,
		})
	}
	slices.SortFunc(rep.Hosts, func(a, b HostReport) int { return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Traced, b.Traced)) })
}

// preloadCalls counts the traced data calls.
func (r *Reconciler) preloadCalls() int64 {
	var n int64
	if r.opts.Preload != nil {
		for _, c := range r.opts.Preload.Conns {
			n += int64(len(c.Msgs))
		}
	}
	return n
}
