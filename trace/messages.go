package trace

// Messages is a trace as the engines read it: a fixed number of messages,
// each read by index, with the symbol table their Syms refer to and what
// the producer learned about the trace. *Trace and the compact *Table
// implement it and give the same messages, so code written against
// Messages works on both: the causal engines and the Aggregator read
// nothing else.
//
// Read sets *m to message i (0 <= i < Len()); it may be called from several
// goroutines at once. Symbols and Metadata return the trace's own, which
// the reader must not modify.
type Messages interface {
	Len() int
	Read(i int, m *Message)
	Symbols() *Symbols
	Metadata() *Meta
}

// Len returns the number of messages.
func (t *Trace) Len() int { return len(t.Messages) }

// Read sets *m to message i.
func (t *Trace) Read(i int, m *Message) { *m = t.Messages[i] }

// Symbols returns the trace's symbol table.
func (t *Trace) Symbols() *Symbols { return &t.Syms }

// Metadata returns what the producer learned about the trace.
func (t *Trace) Metadata() *Meta { return &t.Meta }

// Symbols returns the table's symbol table.
func (t *Table) Symbols() *Symbols { return &t.Syms }

// Metadata returns what the producer learned about the trace.
func (t *Table) Metadata() *Meta { return &t.Meta }

// MessageSlice returns the messages of ms as a slice, for code that reads
// every message many times in random order: a *Trace's own slice (not a
// copy, so it must not be modified), else a new slice of ms's messages.
func MessageSlice(ms Messages) []Message {
	if t, ok := ms.(*Trace); ok {
		return t.Messages
	}
	out := make([]Message, ms.Len())
	for i := range out {
		ms.Read(i, &out[i])
	}
	return out
}

// AsTable returns ms as a Table: ms itself when it is one, else a new
// Table of its messages (NewTable).
func AsTable(ms Messages) *Table {
	if t, ok := ms.(*Table); ok {
		return t
	}
	return NewTable(ms)
}

// TimeRange returns the earliest and the latest known timestamp of the
// messages (send or receive), and false when there is none.
func TimeRange(ms Messages) (first, last Timestamp, ok bool) {
	if t, isTable := ms.(*Table); isTable {
		return t.TimeRange()
	}
	first, last = NoTime, NoTime
	var m Message
	t, isTrace := ms.(*Trace)
	for i := range ms.Len() {
		mp := &m
		if isTrace {
			mp = &t.Messages[i]
		} else {
			ms.Read(i, &m)
		}
		for _, ts := range [2]Timestamp{mp.SendTS, mp.RecvTS} {
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
