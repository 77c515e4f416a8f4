package assembly

import (
	"maps"
	"slices"
)

// randDelta's sums (the sizes' totals and the products of a difference)
// walked the model's maps of sizes at every difference a size relation
// had not scored yet, tens of thousands a run, each a walk of a few
// hundred sizes: the maps' iteration was 4 % of the engine's
// instructions at 64 requests in flight. The sizes are counts (addSize
// adds one), fixed once the model is built (fit.go adds them before the
// relations are decided), so every sum of their products is an integer
// below 2^53, exact in any order: the model keeps each kind's sizes as a
// list with its total, built at the first difference scored, and
// randDeltaOf walks the list, giving randDelta's value bit for bit
// (TestRandDeltaOf).

// sizeTab names one of a node model's tables of sizes.
type sizeTab uint8

const (
	tabRet sizeTab = iota // retSizes: a child kind's reply sizes
	tabReq                // reqSizes: a child kind's request sizes
	tabRep                // repSizes: a parent kind's reply sizes
	tabArr                // arrSizes: a parent kind's request sizes
)

// sizeListKey names one kind's sizes in one table.
type sizeListKey struct {
	tab  sizeTab
	kind int32
}

// sizeList is one kind's sizes as a list (in increasing size) with their
// counts and the counts' total.
type sizeList struct {
	x []int64
	v []float64
	n float64
}

// sizeTable returns table t.
func (m *nodeModel) sizeTable(t sizeTab) map[int32]map[int64]float64 {
	switch t {
	case tabRet:
		return m.retSizes
	case tabReq:
		return m.reqSizes
	case tabRep:
		return m.repSizes
	}
	return m.arrSizes
}

// sizeList returns kind k's sizes in table t as a list, made at the first
// call.
func (m *nodeModel) sizeList(t sizeTab, k int32) *sizeList {
	key := sizeListKey{t, k}
	if l := m.sizeLists[key]; l != nil {
		return l
	}
	if m.sizeLists == nil {
		m.sizeLists = make(map[sizeListKey]*sizeList)
	}
	s := m.sizeTable(t)[k]
	l := &sizeList{x: slices.Sorted(maps.Keys(s))}
	l.v = make([]float64, len(l.x))
	for i, x := range l.x {
		l.v[i] = s[x]
		l.n += s[x]
	}
	m.sizeLists[key] = l
	return l
}

// randDeltaOf is randDelta of kind pk's sizes in table pt against kind
// nk's in table nt.
func (m *nodeModel) randDeltaOf(pt sizeTab, pk int32, nt sizeTab, nk int32, delta int64) float64 {
	prev, next := m.sizeList(pt, pk), m.sizeList(nt, nk)
	if prev.n == 0 || next.n == 0 {
		return 0
	}
	ns := m.sizeTable(nt)[nk]
	p := 0.0
	for i, x := range prev.x {
		p += prev.v[i] * ns[x+delta]
	}
	return p / (prev.n * next.n)
}

// nextTab returns the table and kind of the sizes of what is sent in a
// relation of next kind next under a request of kind pk: its reply's
// (endKind) or the call's (nextSizes, originNext).
func nextTab(next, pk int32) (sizeTab, int32) {
	if next == endKind {
		return tabRep, pk
	}
	return tabReq, next
}
