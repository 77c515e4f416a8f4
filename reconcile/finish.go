package reconcile

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/internal/runsort"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// state is the working state of Finish.
type state struct {
	ht           *hostTable
	epHost       []int32
	pairTTL      map[[2]int32][2]uint8 // (sender, receiver host) -> highest, lowest TTL seen
	ttlMemo      ttlMemo               // ttlOf's last answer (pairTTL is complete by then)
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
	// clock domains: sniffers 0..nSniffers-1, then traced hosts, and
	// their offsets against the reference domain ref (estimateClocks).
	nSniffers int32
	hostDom   map[string]int32
	domNames  []string
	est       []clock.Offset
	models    []clock.Model // each domain's offset over reference time
	ref       int32
	// The nodes (nodeClocks): each message's end nodes, each node's clock,
	// how many of its ends each clock timed, whether it is a server.
	ends    []msgEnds
	nodeDom map[trace.Sym]int32
	domOf   []int32 // nodeDom by node (0 for a symbol that is no node)
	nodeUse map[trace.Sym]map[int32]int64
	server  map[trace.Sym]bool
	// usedF says what became of each sniffed message (writeTrace): 1 used,
	// 2 dropped with the messages it made.
	usedF []uint8
}

// msgEnds are the nodes at the two ends of one logical message.
type msgEnds struct{ send, recv trace.Sym }

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

// Finish reconciles what was added with the syscall traces and returns the
// trace (messages in order of their corrected time) and the report. It
// may be called once.
//
// It runs in phases, each a method of its own:
//
//  1. findHosts: the hosts, their home capture points and the TTLs each
//     pair of hosts' messages were seen with;
//  2. logicalMessages: the connections, their traced ends and the logical
//     messages cut from them (st.out);
//  3. messageEnds and classifyPorts: each end's endpoint, host and traced
//     process; the fixed ports and each host's roles;
//  4. estimateClocks: the clock domains and their offsets;
//  5. nodeClocks: each end's node and each node's clock;
//  6. writeTrace: the messages, their times on their nodes' clocks, in
//     corrected time order;
//  7. the report: accountInputs, clockReport, hostReport, finishReport.
func (r *Reconciler) Finish() (*trace.Trace, *Report, error) {
	if r.finished {
		return nil, nil, errors.New("reconcile: Finish called twice")
	}
	r.finished = true
	st := newState()
	st.tr.Syms, r.syms = r.syms, trace.Symbols{} // the labels and request ids interned so far
	rep := &Report{Naming: r.opts.Naming.String(), Boundaries: []string{"fat", "writes"}[r.opts.Boundaries], Calls: map[string]int64{}}
	r.findHosts(st)
	ranges := r.logicalMessages(st)
	st.messageEnds()
	r.classifyPorts(st, ranges)
	r.estimateClocks(st)
	r.nodeClocks(st)
	r.writeTrace(st, rep)
	r.links(st)
	r.accountInputs(st, rep)
	r.clockReport(st, rep)
	r.hostReport(st, rep)
	r.finishReport(st, rep)
	return st.tr, rep, nil
}

// writeTrace puts each logical message's times on its nodes' clocks,
// drops those left with neither (marking what became of the sniffed
// messages in st.usedF), and orders the trace by corrected time.
func (r *Reconciler) writeTrace(st *state, rep *Report) {
	tr := st.tr
	tr.Meta.Source = "reconcile"
	tr.Messages = make([]trace.Message, 0, len(st.out))
	corr := make([]int64, 0, len(st.out))
	keep := make([]int32, 0, len(st.out))
	st.usedF = make([]uint8, len(r.msgs))
	w := traceWriter{r: r, st: st, rep: rep, epSyms: make([]trace.Sym, len(st.eps))}
	for i := range st.out {
		lm := &st.out[i]
		m := w.message(i)
		known := m.SendTS.Known() || m.RecvTS.Known()
		if !known {
			rep.DroppedNoTime++
		}
		st.markSniffed(lm, known)
		if !known {
			continue
		}
		tr.Messages = append(tr.Messages, m)
		corr = append(corr, st.correctedTime(&m, st.ends[i]))
		keep = append(keep, int32(i))
		r.countMessage(rep, &m, lm)
		r.countEvidence(&m)
	}
	idx := st.sortTrace(corr, keep)
	rep.Sources = r.sources(st, keep, idx)
}

// sources is Report.Sources: message i of the sorted trace is logical
// message st.out[keep[idx[i]]].
func (r *Reconciler) sources(st *state, keep, idx []int32) []flows.MessageID {
	src := make([]flows.MessageID, len(idx))
	for i, j := range idx {
		if lm := &st.out[keep[j]]; lm.fa >= 0 && lm.faStart {
			m := &r.msgs[lm.fa]
			src[i] = flows.MessageID{Conn: m.conn, Index: m.index}
		}
	}
	return src
}

// traceWriter makes the trace's messages, interning their endpoints and
// call ids.
type traceWriter struct {
	r      *Reconciler
	st     *state
	rep    *Report
	epSyms []trace.Sym // by endpoint id, 0 until interned
	// calls are the call ids interned, by connection (rconn) and call
	// index: a call's CALL and RETURN take the same symbol, looked up
	// once.
	calls   [][]callSym
	callBuf []byte
	toks    []uint64
}

// message returns logical message i with its times on its nodes' clocks.
func (w *traceWriter) message(i int) trace.Message {
	st := w.st
	lm := &st.out[i]
	rc := st.conns[lm.rc]
	en := st.ends[i]
	send, recv := w.r.stamps(st, lm, false)
	m := trace.Message{
		SendTS: w.pick(&send, st.domOf[en.send]), RecvTS: w.pick(&recv, st.domOf[en.recv]),
		Bytes: lm.bytes, Src: w.endpoint(rc.epi[lm.dir]), Dst: w.endpoint(rc.epi[1-lm.dir]),
		SrcNode: en.send, DstNode: en.recv, Kind: lm.kind, Proto: rc.proto,
	}
	if lm.pcall || !lm.call.IsZero() {
		m.CallID = w.callID(lm)
	}
	w.evidenceOf(lm, &m)
	return m
}

// callSym is a call id's symbol and the flows connection it is of.
type callSym struct {
	conn uint64
	sym  trace.Sym
}

// maxCallMemo bounds the call indexes callID remembers (per connection).
const maxCallMemo = 1 << 20

// callID returns the symbol of lm's call id, interning it the first time.
func (w *traceWriter) callID(lm *lmsg) trace.Sym {
	var slot *callSym
	if id := lm.call; !lm.pcall && id.Index < maxCallMemo {
		if w.calls == nil {
			w.calls = make([][]callSym, len(w.st.conns))
		}
		cs := w.calls[lm.rc]
		if int(id.Index) >= len(cs) {
			// Sized at first for a call per two of the connection's
			// sniffed messages, what a request/response protocol makes.
			fm := &w.st.conns[lm.rc].fmsgs
			n := max(int(id.Index)+1, (len(fm[0])+len(fm[1]))/2+1)
			cs = append(cs, make([]callSym, n-len(cs))...)
			cs = cs[:cap(cs)]
			w.calls[lm.rc] = cs
		}
		if slot = &cs[id.Index]; slot.sym != 0 && slot.conn == id.Conn {
			return slot.sym
		}
	}
	w.callBuf = lm.call.AppendText(w.callBuf[:0])
	if lm.pcall {
		w.callBuf[0] = 'p'
	}
	sym := w.st.tr.Syms.InternBytes(w.callBuf)
	if slot != nil {
		*slot = callSym{conn: lm.call.Conn, sym: sym}
	}
	return sym
}

// pick returns the best candidate time on domain d: one taken on d, or
// one converted from another domain where both are tied to the reference.
// A domain whose clock drifts or stepped has its times written on its
// clock as if it had not (reference time plus its offset, st.onDomain),
// so that the trace's constant node offsets hold at every time.
func (w *traceWriter) pick(cs *[numSlots]cand, d int32) trace.Timestamp {
	est := w.st.est
	for _, c := range cs {
		switch {
		case c.dom < 0 || d < 0:
		case c.dom == d:
			return trace.Timestamp(w.st.onDomain(c.ts, c.dom, d))
		case est[c.dom].Known && est[d].Known:
			w.rep.Converted++
			return trace.Timestamp(w.st.onDomain(c.ts, c.dom, d))
		}
	}
	return trace.NoTime
}

// onDomain converts time t, read on domain from's clock, to domain d's
// clock without its drift and steps: the reference time (from's model
// undone) plus d's constant offset (st.est). A domain not tied to the
// reference keeps its times.
func (st *state) onDomain(t int64, from, d int32) int64 {
	if !st.est[from].Known || !st.est[d].Known {
		return t
	}
	return st.models[from].Local(t) + st.est[d].Offset
}

func (w *traceWriter) endpoint(id int32) trace.Sym {
	if w.epSyms[id] == 0 {
		w.epSyms[id] = w.st.tr.Intern(w.st.eps[id].String())
	}
	return w.epSyms[id]
}

// markSniffed records that the sniffed messages lm covers were used, or
// dropped with it unless another message used them.
func (st *state) markSniffed(lm *lmsg, used bool) {
	mark := uint8(2)
	if used {
		mark = 1
	}
	fm := st.conns[lm.rc].fmsgs[lm.dir]
	for _, f := range fm[lm.fFrom:lm.fTo] {
		if st.usedF[f] != 1 {
			st.usedF[f] = mark
		}
	}
}

// correctedTime is m's send time (else its receive time) on the
// reference clock, for ordering.
func (st *state) correctedTime(m *trace.Message, en msgEnds) int64 {
	t, d := int64(m.SendTS), st.domOf[en.send]
	if !m.SendTS.Known() {
		t, d = int64(m.RecvTS), st.domOf[en.recv]
	}
	if d >= 0 && st.est[d].Known {
		t -= st.est[d].Offset
	}
	return t
}

// sortTrace orders the trace's messages (logical messages keep, at times
// corr) by corrected time; ties by connection, direction, position. The
// connections are numbered in that order (numberConns).
func (st *state) sortTrace(corr []int64, keep []int32) []int32 {
	tr := st.tr
	// The keys are copied next to each other, and the index breaks ties,
	// which makes the order a stable sort's.
	keys := make([]traceKey, len(tr.Messages))
	for i := range keys {
		lm := &st.out[keep[i]]
		keys[i] = traceKey{t: corr[i], off: lm.off, rc: lm.rc, i: int32(i), dir: lm.dir}
	}
	keys, _ = runsort.Sort[traceKey](keys, nil)
	idx := make([]int32, len(keys))
	sorted := make([]trace.Message, len(idx))
	for i, k := range keys {
		idx[i] = k.i
		sorted[i] = tr.Messages[k.i]
	}
	st.numberConns(sorted, idx, keep)
	tr.Messages = sorted
	return idx
}

// traceKey is what sortTrace orders a trace message by: its corrected
// time, connection, direction and position, and its index.
type traceKey struct {
	t, off int64
	rc, i  int32
	dir    int8
}

// Less orders trace keys: by time, connection, direction, position and
// index, a total order (no two keys have the same index).
func (a *traceKey) Less(b *traceKey) bool {
	switch {
	case a.t != b.t:
		return a.t < b.t
	case a.rc != b.rc:
		return a.rc < b.rc
	case a.dir != b.dir:
		return a.dir < b.dir
	case a.off != b.off:
		return a.off < b.off
	}
	return a.i < b.i
}

// accountInputs counts what became of the sniffed messages and of the
// traced calls.
func (r *Reconciler) accountInputs(st *state, rep *Report) {
	rep.FlowsIn = int64(len(r.msgs))
	for _, u := range st.usedF {
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
		st.accountTraced(rep, tab)
	}
}

// accountTraced counts the traced connections with data, the traced calls
// by what became of them, and the traced ends of sniffed connections.
func (st *state) accountTraced(rep *Report, tab *preload.Table) {
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
		if !rc.sniffed || rc.dgram {
			continue
		}
		for e := range 2 {
			if rc.pc[e] != nil {
				rep.SniffedConns++
			}
		}
	}
}

// finishReport counts the nodes and servers, bounds the warnings, and
// copies the report into the trace's Meta.
func (r *Reconciler) finishReport(st *state, rep *Report) {
	rep.Nodes = len(st.nodeDom)
	for _, v := range st.server {
		if v {
			rep.Servers++
		}
	}
	if n := len(st.warns); n > r.opts.MaxWarnings {
		st.warns = append(st.warns[:r.opts.MaxWarnings], fmt.Sprintf("... and %d more warnings", n-r.opts.MaxWarnings))
	}
	r.oneClock(st, rep)
	rep.Warnings = st.warns
	ev := &r.ev
	rep.WithReqID, rep.WithTokens, rep.WithLabel, rep.WithTask = ev.withReqID, ev.withTokens, ev.withLabel, ev.withTask
	rep.SkippedLong, rep.SkippedBinary, rep.TokensCut = ev.long, ev.binary, ev.tokensCut
	tr := st.tr
	tr.Meta.Warnings = append(tr.Meta.Warnings, st.warns...)
	tr.Meta.Accounting = append(tr.Meta.Accounting, rep.Accounting()...)
	tr.Meta.Clocks = rep.Clocks
}

// oneClock puts the trace on the reference clock: every known node
// offset is removed from its node's timestamps (trace.ApplyOffsets; the
// offsets keep what was applied), so that no engine or report sees a
// message received before it was sent because the two ends' clocks
// differ. What the offsets' own error leaves (a receive a few
// microseconds before the send) is clamped to the send and counted; a
// node whose offset is unknown keeps its clock, and a warning says so.
func (r *Reconciler) oneClock(st *state, rep *Report) {
	tr := st.tr
	tr.Meta.Offsets = rep.Offsets
	if r.opts.LocalClocks {
		return
	}
	changed, unknown := trace.ApplyOffsets(tr)
	rep.OnReference = int64(changed)
	if len(unknown) > 0 {
		st.warns = append(st.warns, fmt.Sprintf("%d node(s) share no message with the reference and keep their own clocks (%s): their network delays are not measured", len(unknown), strings.Join(firstN(unknown, 5), ", ")))
	}
	n, worst := trace.ClampReceives(tr)
	rep.RecvClamped, rep.RecvClampedMaxNS = int64(n), int64(worst)
	if n > 0 {
		st.warns = append(st.warns, fmt.Sprintf("%d message(s) arrived before they were sent, by up to %v, after the clock offsets were applied (the offsets' error): their receive times were set to their send times", n, time.Duration(worst)))
	}
}

// firstN returns the first n of s, with "..." for the rest.
func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), "...")
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
