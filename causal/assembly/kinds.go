package assembly

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// A call's kind is what the engine learns its models by: the label the
// trace gives its CALL (an HTTP route, a Redis command), or else its
// signature: the caller's and the callee's names as patterns show them
// and the size cluster of the CALL (cluster). A call is a parent kind at its callee
// and a child kind at its caller.
type kindKey struct {
	caller, callee string
	label          trace.Sym
	size           int32
}

// kinds numbers the kinds of a trace's calls.
type kinds struct {
	ids  map[kindKey]int32
	keys []kindKey
	syms *trace.Symbols
	// clusters maps the request sizes of calls from one caller to one
	// callee endpoint to their size cluster (sizeClusters).
	clusters map[[2]string]map[int64]int32
	// rare holds the labels too rare to learn a kind from (rareLabels):
	// their calls are kinds by signature.
	rare map[labelKey]bool
	// memo remembers the kinds of recent calls by their messages'
	// symbols (kindOf), a direct-mapped cache.
	memo *[kindMemoSlots]kindMemo
}

// kindMemo is the kind of the calls whose CALL (or, ret, RETURN) has
// these node, endpoint and label symbols and, unless anyBytes, size.
type kindMemo struct {
	node, ep, label trace.Sym
	ret, anyBytes   bool
	bytes           int64
	id              int32 // -1: empty
}

// kindMemoSlots is the size of kinds.memo.
const kindMemoSlots = 64

// labelKey is a label of the calls from one caller to one callee
// endpoint.
type labelKey struct {
	names [2]string
	label trace.Sym
}

// retClass is the coarse class of a reply of b bytes (0: not seen): its
// order of magnitude in powers of two, which tells an empty answer (a
// cache miss, an error) from a full one.
func retClass(b int64) uint8 {
	if b < 0 {
		return 0
	}
	// 1 + the bits of b, at most 31
	return uint8(min(1+bits.Len64(uint64(b)), 31))
}

// names returns the caller's and callee endpoint's names of call c.
func names(l *loader, nm *causal.Namer, c *call) [2]string {
	if c.callMsg >= 0 {
		m := &l.msgs[c.callMsg]
		return [2]string{nm.Node(m.SrcNode), nm.Endpoint(m.Dst)}
	}
	m := &l.msgs[c.retMsg]
	return [2]string{nm.Node(m.DstNode), nm.Endpoint(m.Src)}
}

// cluster finds the size clusters of the calls' requests, for each
// caller and callee endpoint: sizes far apart (more than 2 bytes and 2 %)
// are different kinds of request (a GET and a SET, /item and /cart),
// sizes close together one kind (a value of varying size); a cluster with
// very few calls joins its nearest neighbour.
func (k *kinds) cluster(l *loader, nm *causal.Namer, calls []call) {
	k.rare = rareLabels(l, nm, calls)
	sizes := map[[2]string]map[int64]int{}
	for i := range calls {
		c := &calls[i]
		if c.callMsg < 0 {
			continue
		}
		key := names(l, nm, c)
		if lb := l.msgs[c.callMsg].Label; lb != 0 && !k.rare[labelKey{key, lb}] {
			continue
		}
		if sizes[key] == nil {
			sizes[key] = map[int64]int{}
		}
		sizes[key][c.reqBytes]++
	}
	k.clusters = make(map[[2]string]map[int64]int32, len(sizes))
	for key, m := range sizes {
		k.clusters[key] = sizeClusters(m)
	}
}

// sizeClusters clusters the sizes of m (size -> count).
func sizeClusters(m map[int64]int) map[int64]int32 {
	ds := make([]int64, 0, len(m))
	total := 0
	for s, n := range m {
		ds = append(ds, s)
		total += n
	}
	slices.Sort(ds)
	// groups of consecutive sizes: [start, end) into ds
	type group struct{ start, end, n int }
	var gs []group
	for i, s := range ds {
		if i == 0 || s-ds[i-1] > max(2, ds[i-1]/50) {
			gs = append(gs, group{start: i, end: i})
		}
		g := &gs[len(gs)-1]
		g.end = i + 1
		g.n += m[s]
	}
	minN := max(3, total/50)
	for changed := true; changed && len(gs) > 1; {
		changed = false
		for i := range gs {
			if gs[i].n >= minN {
				continue
			}
			// join the neighbour across the smaller gap
			j := i + 1
			if i == len(gs)-1 || i > 0 && ds[gs[i].start]-ds[gs[i-1].end-1] < ds[gs[i+1].start]-ds[gs[i].end-1] {
				j = i - 1
			}
			a, b := min(i, j), max(i, j)
			gs[a] = group{start: gs[a].start, end: gs[b].end, n: gs[a].n + gs[b].n}
			gs = slices.Delete(gs, b, b+1)
			changed = true
			break
		}
	}
	out := make(map[int64]int32, len(ds))
	for gi, g := range gs {
		for _, s := range ds[g.start:g.end] {
			out[s] = int32(gi)
		}
	}
	return out
}

// kindOf returns the kind id of call c.
func (k *kinds) kindOf(l *loader, nm *causal.Namer, c *call) int32 {
	// The kind depends on the names of the CALL's sender node and
	// receiver endpoint (the RETURN's receiver and sender without a
	// CALL), its label, and its size when the label is not used: the
	// same symbols give the same kind.
	mk := kindMemo{ret: c.callMsg < 0}
	if mk.ret {
		m := &l.msgs[c.retMsg]
		mk.node, mk.ep = m.DstNode, m.Src
	} else {
		m := &l.msgs[c.callMsg]
		mk.node, mk.ep, mk.label, mk.bytes = m.SrcNode, m.Dst, m.Label, m.Bytes
	}
	if k.memo == nil {
		k.memo = new([kindMemoSlots]kindMemo)
		for i := range k.memo {
			k.memo[i].id = -1
		}
	}
	h := (uint64(mk.node)*0x9e3779b97f4a7c15 ^ uint64(mk.ep)) * 0xc2b2ae3d27d4eb4f
	slot := &k.memo[(h^uint64(mk.label))*0x9e3779b97f4a7c15>>58]
	if slot.id >= 0 && slot.node == mk.node && slot.ep == mk.ep && slot.label == mk.label && slot.ret == mk.ret &&
		(slot.anyBytes || slot.bytes == mk.bytes) {
		return slot.id
	}
	id, sized := k.kindOfKey(l, nm, c)
	mk.id, mk.anyBytes = id, !sized
	*slot = mk
	return id
}

// kindOfKey returns the kind id of call c by its key, and whether its
// size made it.
func (k *kinds) kindOfKey(l *loader, nm *causal.Namer, c *call) (int32, bool) {
	key := kindKey{size: -1}
	var m *trace.Message
	if c.callMsg >= 0 {
		m = &l.msgs[c.callMsg]
		n := names(l, nm, c)
		key.caller, key.callee = n[0], n[1]
		key.label = m.Label
		if key.label != 0 && k.rare[labelKey{n, key.label}] {
			key.label = 0
		}
		if key.label == 0 {
			key.size = k.clusters[n][m.Bytes]
		}
	} else {
		m = &l.msgs[c.retMsg]
		key.caller, key.callee = nm.Node(m.DstNode), nm.Endpoint(m.Src)
	}
	sized := c.callMsg >= 0 && key.label == 0
	if id, ok := k.ids[key]; ok {
		return id, sized
	}
	id := int32(len(k.keys))
	k.ids[key] = id
	k.keys = append(k.keys, key)
	return id, sized
}

// name describes kind id for labels and accounting.
func (k *kinds) name(id int32) string {
	if id < 0 || int(id) >= len(k.keys) {
		return "?"
	}
	key := k.keys[id]
	if key.label != 0 {
		return k.syms.String(key.label)
	}
	if key.size < 0 {
		return fmt.Sprintf("%s->%s", key.caller, key.callee)
	}
	lo, hi := int64(math.MaxInt64), int64(-1)
	for s, c := range k.clusters[[2]string{key.caller, key.callee}] {
		if c == key.size {
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	if lo == hi {
		return fmt.Sprintf("%s->%s %dB", key.caller, key.callee, lo)
	}
	return fmt.Sprintf("%s->%s %d-%dB", key.caller, key.callee, lo, hi)
}

// rareLabels returns the labels of calls (from one caller to one callee
// endpoint) too rare to learn a kind from: fewer than minLabelCalls calls,
// or than 1 % of those between the two. A label that carries an
// identifier its route was not normalised from (GET /item/x85, one per
// value) makes a kind per request: the model of such a kind is learnt
// from one request's own assignment, which it then confirms (EM's fixed
// point), whatever the request did. Their calls are kinds by signature
// instead (size clusters), as unlabelled calls are, so that they are
// learnt together.
func rareLabels(l *loader, nm *causal.Namer, calls []call) map[labelKey]bool {
	counts := map[labelKey]int{}
	totals := map[[2]string]int{}
	// Calls are counted by their caller node, callee endpoint and label
	// first (a small key; the last one met is remembered), then each
	// distinct one by its names.
	type callKey struct {
		src, dst, label trace.Sym
	}
	type keyCount struct {
		call int // a call of the key, for its names
		n    int
	}
	idx := map[callKey]int{}
	var byKey []keyCount
	last, li := callKey{}, -1
	for i := range calls {
		c := &calls[i]
		if c.callMsg < 0 {
			continue
		}
		m := &l.msgs[c.callMsg]
		k := callKey{m.SrcNode, m.Dst, m.Label}
		if li < 0 || k != last {
			j, ok := idx[k]
			if !ok {
				j = len(byKey)
				idx[k] = j
				byKey = append(byKey, keyCount{call: i})
			}
			last, li = k, j
		}
		byKey[li].n++
	}
	for _, kc := range byKey {
		key := names(l, nm, &calls[kc.call])
		totals[key] += kc.n
		if lb := l.msgs[calls[kc.call].callMsg].Label; lb != 0 {
			counts[labelKey{key, lb}] += kc.n
		}
	}
	rare := map[labelKey]bool{}
	for lk, n := range counts {
		if n < minLabelCalls || n*100 < totals[lk.names] {
			rare[lk] = true
		}
	}
	return rare
}

// minLabelCalls is the fewest calls a label needs to be a kind of its own.
const minLabelCalls = 5
