package trace

import (
	"math"
	"slices"
	"unsafe"
)

// Table is a trace kept compactly, for engines that read millions of
// messages: 20 bytes a message where a []Message takes 96. What many
// messages share — endpoints, nodes, kind and protocol, a Flow — is stored
// once; a message keeps one timestamp as a 48-bit offset from the trace's
// first, the other as a 32-bit difference, its call id and its size in 16
// bits. Values that do not fit (a time more than 39 hours from the first,
// a receive time more than about two seconds from the send time, a size
// of 64 KiB or more) are kept aside, and if many do the Table switches to
// a full column for them, so it never loses information: At returns
// exactly the Message that was appended.
//
// A Table is built by appending (ReadTable and ReadFileTable do it while
// reading, without ever holding a []Message) and then only read. Reading
// methods may be called from several goroutines at once; Append may not.
type Table struct {
	// Syms holds the strings the messages' Syms stand for.
	Syms Symbols
	// Meta is what the producer learned about the trace.
	Meta Meta

	rows  []row
	flows []Flow
	// flowIdx is an open-addressing index of flows: 1 + flow id, 0 empty.
	flowIdx []uint32

	base  Timestamp // the first known timestamp; rows keep offsets from it
	based bool
	// the values that do not fit in their rows
	wideTS, wideRecv, wideSize aside[int64]
	// ev holds the evidence besides Conn; nil until a message has some.
	ev *tableEvidence
}

// Flow is what a Table stores once for all the messages that share it:
// both endpoints and nodes, the kind, the protocol and the connection
// (Evidence.Conn).
type Flow struct {
	Src, Dst, SrcNode, DstNode Sym
	Kind                       Kind
	Proto                      Proto
	Conn                       uint32
}

// flowOfMessage returns m's Flow.
func flowOfMessage(m *Message) Flow {
	return Flow{Src: m.Src, Dst: m.Dst, SrcNode: m.SrcNode, DstNode: m.DstNode, Kind: m.Kind, Proto: m.Proto, Conn: m.Conn}
}

// row is one message of a Table: ts is SendTS, or RecvTS when the send
// was not seen, as an offset from Table.base: tsHi<<32 | tsLo.
type row struct {
	tsLo uint32
	dt   int32 // RecvTS - SendTS, or one of the dt* marks
	flow uint32
	call Sym
	tsHi int16  // tsWide: ts in wideTS
	size uint16 // sizeWide: in wideSize
}

const (
	dtNoRecv = math.MinInt32     // RecvTS unknown, ts is SendTS
	dtNoSend = math.MinInt32 + 1 // SendTS unknown, ts is RecvTS
	dtNone   = math.MinInt32 + 2 // neither known
	dtWide   = math.MinInt32 + 3 // RecvTS in wideRecv
	dtMin    = math.MinInt32 + 4

	tsWide   = math.MinInt16
	sizeWide = math.MaxUint16
)

// aside holds values of rows that do not fit in them (or that few rows
// have): a map while they are few, a column for every row once they are
// common. A row without a value reads as the zero value.
type aside[T any] struct {
	m   map[int32]T
	col []T
}

func (a *aside[T]) get(i int) T {
	if a.col != nil {
		return a.col[i]
	}
	return a.m[int32(i)]
}

// set records v for row i, the last row of a table of rows rows (with
// capacity capacity).
func (a *aside[T]) set(i int, v T, capacity int) {
	if a.col != nil {
		a.pad(i)
		a.col[i] = v
		return
	}
	if a.m == nil {
		a.m = make(map[int32]T)
	}
	a.m[int32(i)] = v
	if len(a.m) >= 4096 && len(a.m) > (i+1)/32 {
		a.col = make([]T, i+1, max(capacity, i+1))
		for j, v := range a.m {
			a.col[j] = v
		}
		a.m = nil
	}
}

// pad keeps a column as long as the table when row i is added.
func (a *aside[T]) pad(i int) {
	if a.col != nil && len(a.col) <= i {
		var zero T
		a.col = append(a.col, zero)
	}
}

// size returns about how many bytes a holds.
func (a *aside[T]) size() int64 {
	var zero T
	return int64(cap(a.col))*int64(unsafe.Sizeof(zero)) + int64(len(a.m))*(8+int64(unsafe.Sizeof(zero)))
}

// tableEvidence is the evidence of a Table's messages besides Conn: a bit
// per row saying whether the row has any, and a sparse column per field.
type tableEvidence struct {
	rows   []uint64 // bit i%64 of rows[i/64]: row i has evidence
	fields EvidenceColumns
	seq    aside[uint32]
	stream aside[uint64]
	reqID  aside[Sym]
	label  aside[Sym]
	tokens aside[TokenRef]
	// tasks holds 1 + the index in taskPairs of the row's (Sender,
	// Receiver): a traced thread sends and receives many messages.
	tasks     aside[uint32]
	taskPairs [][2]Task
	taskIdx   map[[2]Task]uint32
}

// has reports whether row i has evidence besides Conn.
func (e *tableEvidence) has(i int) bool {
	return i>>6 < len(e.rows) && e.rows[i>>6]&(1<<(i&63)) != 0
}

// read sets the fields of ev besides Conn to row i's.
func (e *tableEvidence) read(i int, ev *Evidence) {
	if !e.has(i) {
		return
	}
	f := e.fields
	if f&ColSeq != 0 {
		ev.Seq = e.seq.get(i)
	}
	if f&ColStream != 0 {
		ev.Stream = e.stream.get(i)
	}
	if f&(ColSendTask|ColRecvTask) != 0 {
		if k := e.tasks.get(i); k != 0 {
			p := e.taskPairs[k-1]
			ev.Sender, ev.Receiver = p[0], p[1]
		}
	}
	if f&ColReqID != 0 {
		ev.ReqID = e.reqID.get(i)
	}
	if f&ColLabel != 0 {
		ev.Label = e.label.get(i)
	}
	if f&ColTokens != 0 {
		ev.Tokens = e.tokens.get(i)
	}
}

// add records ev's fields besides Conn for row i (the last row, of a table
// with capacity capacity), or only keeps the columns as long as the table
// when ev has none.
func (e *tableEvidence) add(i int, ev *Evidence, capacity int) {
	for len(e.rows) <= i>>6 {
		e.rows = append(e.rows, 0)
	}
	e.seq.pad(i)
	e.stream.pad(i)
	e.tasks.pad(i)
	e.reqID.pad(i)
	e.label.pad(i)
	e.tokens.pad(i)
	f := ev.columnsOf() &^ ColConn
	if f == 0 {
		return
	}
	e.rows[i>>6] |= 1 << (i & 63)
	e.fields |= f
	if ev.Seq != 0 {
		e.seq.set(i, ev.Seq, capacity)
	}
	if ev.Stream != 0 {
		e.stream.set(i, ev.Stream, capacity)
	}
	if f&(ColSendTask|ColRecvTask) != 0 {
		e.tasks.set(i, e.taskPair(ev.Sender, ev.Receiver), capacity)
	}
	if ev.ReqID != 0 {
		e.reqID.set(i, ev.ReqID, capacity)
	}
	if ev.Label != 0 {
		e.label.set(i, ev.Label, capacity)
	}
	if ev.Tokens != 0 {
		e.tokens.set(i, ev.Tokens, capacity)
	}
}

// taskPair returns 1 + the index of the pair (s, r), adding it if new.
func (e *tableEvidence) taskPair(s, r Task) uint32 {
	k := [2]Task{s, r}
	if id, ok := e.taskIdx[k]; ok {
		return id
	}
	if e.taskIdx == nil {
		e.taskIdx = make(map[[2]Task]uint32)
	}
	e.taskPairs = append(e.taskPairs, k)
	id := uint32(len(e.taskPairs))
	e.taskIdx[k] = id
	return id
}

// size returns about how many bytes e holds.
func (e *tableEvidence) size() int64 {
	n := int64(cap(e.rows))*8 + int64(cap(e.taskPairs))*16 + int64(len(e.taskIdx))*24
	return n + e.seq.size() + e.stream.size() + e.tasks.size() + e.reqID.size() + e.label.size() + e.tokens.size()
}

// Len returns the number of messages.
func (t *Table) Len() int { return len(t.rows) }

// Size returns about how many bytes of memory the table holds: its rows
// (with the room made for more), flows, values kept aside and symbols.
func (t *Table) Size() int64 {
	n := int64(cap(t.rows))*int64(unsafe.Sizeof(row{})) + int64(cap(t.flows))*int64(unsafe.Sizeof(Flow{})) + int64(cap(t.flowIdx))*4
	for _, a := range []*aside[int64]{&t.wideTS, &t.wideRecv, &t.wideSize} {
		n += a.size()
	}
	if t.ev != nil {
		n += t.ev.size()
	}
	return n + t.Syms.size()
}

// Grow makes room for n more messages without reallocating.
func (t *Table) Grow(n int) {
	if len(t.rows) == 0 && cap(t.rows) < n {
		// a fresh allocation: its pages are not touched until written,
		// so room never used costs no memory
		t.rows = make([]row, 0, n)
		return
	}
	t.rows = slices.Grow(t.rows, n)
}

// Flows returns the distinct flows of the table, indexed by flow id. The
// slice must not be modified.
func (t *Table) Flows() []Flow { return t.flows }

// FlowID returns the id of message i's flow, an index into Flows.
func (t *Table) FlowID(i int) uint32 { return t.rows[i].flow }

// Flow returns message i's flow.
func (t *Table) Flow(i int) *Flow { return &t.flows[t.rows[i].flow] }

// ts returns row i's timestamp.
func (t *Table) ts(i int, r *row) Timestamp {
	if r.tsHi == tsWide {
		return Timestamp(t.wideTS.get(i))
	}
	return t.base + Timestamp(int64(r.tsHi)<<32|int64(r.tsLo))
}

// Time returns the timestamp engines sort by when they use one clock:
// SendTS when known, else RecvTS (Message.Time).
func (t *Table) Time(i int) Timestamp {
	r := &t.rows[i]
	if r.dt == dtNone {
		return NoTime
	}
	return t.ts(i, r)
}

// SendTS returns message i's send time (NoTime if not seen).
func (t *Table) SendTS(i int) Timestamp {
	r := &t.rows[i]
	if r.dt == dtNoSend || r.dt == dtNone {
		return NoTime
	}
	return t.ts(i, r)
}

// RecvTS returns message i's receive time (NoTime if not seen).
func (t *Table) RecvTS(i int) Timestamp {
	r := &t.rows[i]
	switch {
	case r.dt >= dtMin:
		return t.ts(i, r) + Timestamp(r.dt)
	case r.dt == dtNoSend:
		return t.ts(i, r)
	case r.dt == dtWide:
		return Timestamp(t.wideRecv.get(i))
	}
	return NoTime
}

// CallID returns message i's call id.
func (t *Table) CallID(i int) Sym { return t.rows[i].call }

// Evidence returns message i's evidence.
func (t *Table) Evidence(i int) Evidence {
	ev := Evidence{Conn: t.flows[t.rows[i].flow].Conn}
	if t.ev != nil {
		t.ev.read(i, &ev)
	}
	return ev
}

// EvidenceColumns returns the evidence fields some message of the table
// has (the columns WriteTSV writes for it).
func (t *Table) EvidenceColumns() EvidenceColumns {
	var c EvidenceColumns
	if t.ev != nil {
		c = t.ev.fields
	}
	for i := range t.flows {
		if t.flows[i].Conn != 0 {
			return c | ColConn
		}
	}
	return c
}

// Bytes returns message i's size.
func (t *Table) Bytes(i int) int64 {
	if b := t.rows[i].size; b != sizeWide {
		return int64(b)
	}
	return t.wideSize.get(i)
}

// Read sets *m to message i: At without copying the message out.
func (t *Table) Read(i int, m *Message) {
	r := &t.rows[i]
	if r.dt < dtMin || r.tsHi == tsWide || r.size == sizeWide {
		*m = t.atSlow(i)
		return
	}
	f := &t.flows[r.flow]
	ts := t.base + Timestamp(int64(r.tsHi)<<32|int64(r.tsLo))
	m.SendTS, m.RecvTS = ts, ts+Timestamp(r.dt)
	m.Src, m.Dst, m.SrcNode, m.DstNode = f.Src, f.Dst, f.SrcNode, f.DstNode
	m.CallID, m.Kind, m.Proto = r.call, f.Kind, f.Proto
	m.Bytes = int64(r.size)
	m.Evidence = Evidence{Conn: f.Conn}
	if t.ev != nil {
		t.ev.read(i, &m.Evidence)
	}
}

// At returns message i.
func (t *Table) At(i int) Message {
	var m Message
	t.Read(i, &m)
	return m
}

// atSlow is At for the messages with a time or a size kept aside.
func (t *Table) atSlow(i int) Message {
	r := &t.rows[i]
	f := &t.flows[r.flow]
	m := Message{
		SendTS: t.SendTS(i), RecvTS: t.RecvTS(i),
		Src: f.Src, Dst: f.Dst, SrcNode: f.SrcNode, DstNode: f.DstNode,
		CallID: r.call, Kind: f.Kind, Proto: f.Proto,
		Bytes: t.Bytes(i),
	}
	m.Conn = f.Conn
	if t.ev != nil {
		t.ev.read(i, &m.Evidence)
	}
	return m
}

// Str returns the string a Sym of this table stands for.
func (t *Table) Str(id Sym) string { return t.Syms.String(id) }

// TimeRange returns the earliest and the latest known timestamp of the
// messages (send or receive), and false when there is none.
func (t *Table) TimeRange() (first, last Timestamp, ok bool) {
	// Offsets from base compare like the times; rows with a value aside
	// or a receive time of their own are looked at in full.
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	first, last = NoTime, NoTime
	see := func(ts Timestamp) {
		if !ts.Known() {
			return
		}
		if first == NoTime || ts < first {
			first = ts
		}
		if last == NoTime || ts > last {
			last = ts
		}
	}
	for i := range t.rows {
		r := &t.rows[i]
		if r.dt < dtMin || r.tsHi == tsWide {
			see(t.SendTS(i))
			see(t.RecvTS(i))
			continue
		}
		off := int64(r.tsHi)<<32 | int64(r.tsLo)
		lo = min(lo, off, off+int64(r.dt))
		hi = max(hi, off, off+int64(r.dt))
	}
	if lo <= hi {
		see(t.base + Timestamp(lo))
		see(t.base + Timestamp(hi))
	}
	return first, last, first != NoTime
}

// Append adds m, whose Syms and TokenRef must be the table's.
func (t *Table) Append(m *Message) {
	t.appendRow(m, t.flowOf(flowOfMessage(m)))
}

// appendRow adds m, whose flow is flow.
func (t *Table) appendRow(m *Message, flow uint32) {
	i := len(t.rows)
	if i >= math.MaxInt32 {
		panic("trace: a Table holds at most 2^31-1 messages")
	}
	r := row{call: m.CallID, size: uint16(m.Bytes), flow: flow}
	ts := m.SendTS
	switch {
	case m.SendTS.Known() && m.RecvTS.Known():
		d := int64(m.RecvTS) - int64(m.SendTS)
		if d >= dtMin && d <= math.MaxInt32 && (d < 0) == (m.RecvTS < m.SendTS) {
			r.dt = int32(d)
		} else {
			r.dt = dtWide
			t.wideRecv.set(i, int64(m.RecvTS), cap(t.rows))
		}
	case m.SendTS.Known():
		r.dt = dtNoRecv
	case m.RecvTS.Known():
		r.dt, ts = dtNoSend, m.RecvTS
	default:
		r.dt = dtNone
	}
	if r.dt != dtNone {
		if !t.based {
			t.base, t.based = ts, true
		}
		off := int64(ts) - int64(t.base)
		if hi := off >> 32; hi > math.MinInt16 && hi <= math.MaxInt16 && (off < 0) == (ts < t.base) {
			r.tsLo, r.tsHi = uint32(off), int16(hi)
		} else {
			r.tsHi = tsWide
			t.wideTS.set(i, int64(ts), cap(t.rows))
		}
	}
	if m.Bytes < 0 || m.Bytes >= sizeWide {
		r.size = sizeWide
		t.wideSize.set(i, m.Bytes, cap(t.rows))
	}
	t.wideTS.pad(i)
	t.wideRecv.pad(i)
	t.wideSize.pad(i)
	if t.ev != nil || m.Evidence.columnsOf()&^ColConn != 0 {
		if t.ev == nil {
			t.ev = &tableEvidence{}
		}
		t.ev.add(i, &m.Evidence, cap(t.rows))
	}
	t.rows = append(t.rows, r)
}

// flowOf returns the id of flow f, adding it if it is new.
func (t *Table) flowOf(f Flow) uint32 {
	h := flowHash(f)
	if len(t.flowIdx) > 0 {
		mask := uint64(len(t.flowIdx) - 1)
		for i := h & mask; ; i = (i + 1) & mask {
			id := t.flowIdx[i]
			if id == 0 {
				break
			}
			if t.flows[id-1] == f {
				return id - 1
			}
		}
	}
	id := uint32(len(t.flows))
	t.flows = append(t.flows, f)
	if 4*len(t.flows) > 3*len(t.flowIdx) {
		n := max(64, 2*len(t.flowIdx))
		t.flowIdx = make([]uint32, n)
		for j, g := range t.flows[:id] {
			t.flowIdx[t.flowSlot(g)] = uint32(j + 1)
		}
	}
	t.flowIdx[t.flowSlot(f)] = id + 1
	return id
}

func flowHash(f Flow) uint64 {
	h := uint64(f.Src)*0x9e3779b97f4a7c15 ^ uint64(f.Dst)*0xc2b2ae3d27d4eb4f ^
		uint64(f.SrcNode)*0x165667b19e3779f9 ^ uint64(f.DstNode)*0xd6e8feb86659fd93 ^
		uint64(f.Kind)<<40 ^ uint64(f.Proto)<<48 ^ uint64(f.Conn)*0x94d049bb133111eb
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return h
}

// flowSlot returns the first empty slot of f's probe sequence.
func (t *Table) flowSlot(f Flow) uint64 {
	h := flowHash(f)
	mask := uint64(len(t.flowIdx) - 1)
	i := h & mask
	for t.flowIdx[i] != 0 {
		i = (i + 1) & mask
	}
	return i
}

// NewTable returns a Table of the messages of ms (a Trace, or another
// Table). It shares ms's symbol table, so neither may intern new strings
// afterwards.
func NewTable(ms Messages) *Table {
	tab := &Table{Syms: *ms.Symbols(), Meta: *ms.Metadata()}
	n := ms.Len()
	tab.Grow(n)
	if t, ok := ms.(*Trace); ok {
		for i := range t.Messages {
			tab.Append(&t.Messages[i])
		}
		return tab
	}
	var m Message
	for i := range n {
		ms.Read(i, &m)
		tab.Append(&m)
	}
	return tab
}

// Trace returns the table's messages as a Trace that shares the table's
// symbol table.
func (t *Table) Trace() *Trace {
	out := &Trace{Syms: t.Syms, Meta: t.Meta, Messages: make([]Message, len(t.rows))}
	for i := range t.rows {
		out.Messages[i] = t.At(i)
	}
	return out
}
