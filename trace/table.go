package trace

import (
	"math"
	"slices"
)

// Table is a trace kept compactly, for engines that read millions of
// messages: 24 bytes a message where a []Message takes 48. What many
// messages share — endpoints, nodes, kind and protocol, a Flow — is stored
// once; a message keeps one timestamp, the other as a 32-bit difference,
// its call id and its size. Values that do not fit (a receive time more
// than about two seconds from the send time, a size of 4 GiB or more) are
// kept aside, and if many do the Table switches to a full column for them,
// so it never loses information: At returns exactly the Message that was
// appended.
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

	// recvAt, when not nil, holds every message's receive time (set once
	// too many did not fit in a row); wideRecv holds those that did not
	// fit until then.
	recvAt   []Timestamp
	wideRecv map[int32]Timestamp
	// bigBytes holds the sizes that do not fit in a row.
	bigBytes map[int32]int64
}

// Flow is what a Table stores once for all the messages that share it:
// both endpoints and nodes, the kind and the protocol.
type Flow struct {
	Src, Dst, SrcNode, DstNode Sym
	Kind                       Kind
	Proto                      Proto
}

// row is one message of a Table.
type row struct {
	ts    Timestamp // SendTS, or RecvTS when the send was not seen
	dt    int32     // RecvTS - SendTS, or one of the dt* marks
	flow  uint32
	call  Sym
	bytes uint32 // bytesWide: in bigBytes
}

const (
	dtNoRecv = math.MinInt32     // RecvTS unknown (ts is SendTS, maybe NoTime)
	dtNoSend = math.MinInt32 + 1 // SendTS unknown, ts is RecvTS
	dtWide   = math.MinInt32 + 2 // RecvTS in wideRecv or recvAt
	dtMin    = math.MinInt32 + 3

	bytesWide = math.MaxUint32
)

// Len returns the number of messages.
func (t *Table) Len() int { return len(t.rows) }

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

// SendTS returns message i's send time (NoTime if not seen).
func (t *Table) SendTS(i int) Timestamp {
	if t.rows[i].dt == dtNoSend {
		return NoTime
	}
	return t.rows[i].ts
}

// RecvTS returns message i's receive time (NoTime if not seen).
func (t *Table) RecvTS(i int) Timestamp {
	r := &t.rows[i]
	switch {
	case r.dt >= dtMin:
		return r.ts + Timestamp(r.dt)
	case r.dt == dtNoSend:
		return r.ts
	case r.dt == dtNoRecv:
		return NoTime
	}
	return t.wideRecvOf(i)
}

func (t *Table) wideRecvOf(i int) Timestamp {
	if t.recvAt != nil {
		return t.recvAt[i]
	}
	return t.wideRecv[int32(i)]
}

// Time returns the timestamp engines sort by when they use one clock:
// SendTS when known, else RecvTS (Message.Time).
func (t *Table) Time(i int) Timestamp { return t.rows[i].ts }

// CallID returns message i's call id.
func (t *Table) CallID(i int) Sym { return t.rows[i].call }

// Bytes returns message i's size.
func (t *Table) Bytes(i int) int64 {
	if b := t.rows[i].bytes; b != bytesWide {
		return int64(b)
	}
	return t.bigBytes[int32(i)]
}

// At returns message i.
func (t *Table) At(i int) Message {
	r := &t.rows[i]
	if r.dt < dtMin || r.bytes == bytesWide {
		return t.atSlow(i)
	}
	f := &t.flows[r.flow]
	return Message{
		SendTS: r.ts, RecvTS: r.ts + Timestamp(r.dt),
		Src: f.Src, Dst: f.Dst, SrcNode: f.SrcNode, DstNode: f.DstNode,
		CallID: r.call, Kind: f.Kind, Proto: f.Proto,
		Bytes: int64(r.bytes),
	}
}

// atSlow is At for the messages with a time or a size kept aside.
func (t *Table) atSlow(i int) Message {
	r := &t.rows[i]
	f := &t.flows[r.flow]
	return Message{
		SendTS: t.SendTS(i), RecvTS: t.RecvTS(i),
		Src: f.Src, Dst: f.Dst, SrcNode: f.SrcNode, DstNode: f.DstNode,
		CallID: r.call, Kind: f.Kind, Proto: f.Proto,
		Bytes: t.Bytes(i),
	}
}

// Str returns the string a Sym of this table stands for.
func (t *Table) Str(id Sym) string { return t.Syms.String(id) }

// TimeRange returns the earliest and the latest known timestamp of the
// messages (send or receive), and false when there is none.
func (t *Table) TimeRange() (first, last Timestamp, ok bool) {
	first, last = NoTime, NoTime
	for i := range t.rows {
		for _, ts := range [2]Timestamp{t.SendTS(i), t.RecvTS(i)} {
			if !ts.Known() {
				continue
			}
			if first == NoTime || ts < first {
				first = ts
			}
			if last == NoTime || ts > last {
				last = ts
			}
		}
	}
	return first, last, first != NoTime
}

// Append adds m, whose Syms must be the table's.
func (t *Table) Append(m *Message) {
	if len(t.rows) >= math.MaxInt32 {
		panic("trace: a Table holds at most 2^31-1 messages")
	}
	i := int32(len(t.rows))
	r := row{ts: m.SendTS, dt: dtNoRecv, call: m.CallID, bytes: uint32(m.Bytes)}
	r.flow = t.flowOf(Flow{Src: m.Src, Dst: m.Dst, SrcNode: m.SrcNode, DstNode: m.DstNode, Kind: m.Kind, Proto: m.Proto})
	switch {
	case !m.RecvTS.Known():
	case !m.SendTS.Known():
		r.ts, r.dt = m.RecvTS, dtNoSend
	default:
		d := int64(m.RecvTS) - int64(m.SendTS)
		if d >= dtMin && d <= math.MaxInt32 && (d < 0) == (m.RecvTS < m.SendTS) {
			r.dt = int32(d)
		} else {
			r.dt = dtWide
		}
	}
	if m.Bytes < 0 || m.Bytes >= bytesWide {
		r.bytes = bytesWide
		if t.bigBytes == nil {
			t.bigBytes = make(map[int32]int64)
		}
		t.bigBytes[i] = m.Bytes
	}
	if t.recvAt != nil {
		t.recvAt = append(t.recvAt, m.RecvTS)
	} else if r.dt == dtWide {
		if t.wideRecv == nil {
			t.wideRecv = make(map[int32]Timestamp)
		}
		t.wideRecv[i] = m.RecvTS
		// Once wide receive times are common, a full column is smaller
		// and faster than the map.
		if len(t.wideRecv) >= 4096 && len(t.wideRecv) > len(t.rows)/32 {
			col := make([]Timestamp, len(t.rows), cap(t.rows))
			for j := range t.rows {
				col[j] = t.RecvTS(j)
			}
			t.recvAt = append(col, m.RecvTS)
			t.wideRecv = nil
		}
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
			if g := &t.flows[id-1]; g.Src == f.Src && g.Dst == f.Dst && g.SrcNode == f.SrcNode &&
				g.DstNode == f.DstNode && g.Kind == f.Kind && g.Proto == f.Proto {
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
		uint64(f.Kind)<<40 ^ uint64(f.Proto)<<48
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

// NewTable returns a Table of t's messages. It shares t's symbol table,
// so neither may intern new strings afterwards.
func NewTable(t *Trace) *Table {
	tab := &Table{Syms: t.Syms, Meta: t.Meta}
	tab.Grow(len(t.Messages))
	for i := range t.Messages {
		tab.Append(&t.Messages[i])
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
