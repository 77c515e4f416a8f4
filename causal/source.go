package causal

import "github.com/wirepath/wirepath/trace"

// source is the trace an engine or the Aggregator reads: a *trace.Trace or
// a compact *trace.Table. The Table is for the largest traces (a command
// reads it without ever holding a []trace.Message); code that takes a
// source works on both and gives the same results.
type source struct {
	tr   *trace.Trace // a Trace
	msgs []trace.Message
	tab  *trace.Table // or a Table
	syms *trace.Symbols
	meta *trace.Meta
}

func traceSource(t *trace.Trace) source {
	return source{tr: t, msgs: t.Messages, syms: &t.Syms, meta: &t.Meta}
}

func tableSource(t *trace.Table) source {
	return source{tab: t, syms: &t.Syms, meta: &t.Meta}
}

// len returns the number of messages.
func (s *source) len() int {
	if s.tab != nil {
		return s.tab.Len()
	}
	return len(s.msgs)
}

// at returns message i.
func (s *source) at(i int32) trace.Message {
	if s.tab != nil {
		return s.tab.At(int(i))
	}
	return s.msgs[i]
}

// read sets *m to message i.
func (s *source) read(i int32, m *trace.Message) {
	if s.tab != nil {
		s.tab.Read(int(i), m)
		return
	}
	*m = s.msgs[i]
}

// str returns the string of a Sym.
func (s *source) str(id trace.Sym) string { return s.syms.String(id) }

// roles classifies the source's endpoints and nodes (trace.ClassifyRoles).
func (s *source) roles(opt trace.RoleOptions) *trace.Roles {
	if s.tab != nil {
		return trace.ClassifyTableRoles(s.tab, opt)
	}
	return trace.ClassifyRoles(s.tr, opt)
}

// summarize is Summarize of the source.
func (s *source) summarize() TraceSummary {
	if s.tab != nil {
		return SummarizeTable(s.tab)
	}
	return Summarize(s.tr)
}

// SummarizeTable is Summarize for a Table: it gives the same summary as
// Summarize of the same messages, in time that does not depend on their
// number.
func SummarizeTable(t *trace.Table) TraceSummary {
	s := TraceSummary{
		Source:     t.Meta.Source,
		Messages:   t.Len(),
		Offsets:    t.Meta.Offsets,
		Clocks:     t.Meta.Clocks,
		Aliases:    t.Meta.Aliases,
		Accounting: t.Meta.Accounting,
		Warnings:   t.Meta.Warnings,
	}
	nodes := make(map[trace.Sym]struct{})
	for _, f := range t.Flows() {
		nodes[f.SrcNode] = struct{}{}
		nodes[f.DstNode] = struct{}{}
	}
	delete(nodes, 0)
	s.Nodes = len(nodes)
	if first, last, ok := t.TimeRange(); ok {
		s.StartNS, s.EndNS = int64(first), int64(last)
	}
	return s
}
