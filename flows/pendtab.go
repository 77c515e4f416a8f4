package flows

// pendTable holds a connection's pending Keys (a request's or a
// response's, waiting for the other half of their call) with their call
// index: an open-addressed table with linear probing, for the Go map
// that cost a hash call, an insertion, a look-up and a deletion per call
// of a multiplexed connection (HTTP/2's stream ids, Kafka's correlation
// ids). Key 0 is never held (it marks an empty slot; a Unit with Key 0
// is not paired by Key). The table is at most half full; it keeps its
// memory when cleared, and maxPendingKeys bounds it.
type pendTable struct {
	slots []pendSlot // a power of two of them
	n     int
}

// pendSlot is one slot of a pendTable: key 0 is empty.
type pendSlot struct {
	key, val uint64
}

// minPendSlots is the size of a table's first allocation.
const minPendSlots = 16

// home returns the slot where a search for key starts (Fibonacci
// hashing: consecutive keys, the common case, land far apart).
func (t *pendTable) home(key uint64) int {
	return int((key*0x9e3779b97f4a7c15)>>32) & (len(t.slots) - 1)
}

// len returns the number of keys held.
func (t *pendTable) len() int { return t.n }

// get returns the value held under key, if any.
func (t *pendTable) get(key uint64) (uint64, bool) {
	i := t.slot(key)
	if i < 0 {
		return 0, false
	}
	return t.slots[i].val, true
}

// slot returns the index of the slot holding key, or -1 when key is not
// held.
func (t *pendTable) slot(key uint64) int {
	if t.n == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return i
		}
		if s.key == 0 {
			return -1
		}
	}
}

// put holds v under key (not 0), replacing what key held.
func (t *pendTable) put(key, v uint64) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for t.slots[i].key != 0 {
		if t.slots[i].key == key {
			t.slots[i].val = v
			return
		}
		i = (i + 1) & mask
	}
	t.slots[i] = pendSlot{key, v}
	t.n++
}

// grow doubles the table.
func (t *pendTable) grow() {
	old := t.slots
	t.slots = make([]pendSlot, max(2*len(old), minPendSlots))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := t.home(s.key)
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// del removes key, if held.
func (t *pendTable) del(key uint64) {
	if i := t.slot(key); i >= 0 {
		t.delAt(i)
	}
}

// delAt removes the key of slot i, which holds one, moving back the keys
// after it that its slot would hide from their searches.
func (t *pendTable) delAt(i int) {
	mask := len(t.slots) - 1
	t.n--
	// i is empty now; a key further on may move into it unless its home
	// lies cyclically in (i, j].
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := t.slots[j]
		if s.key == 0 {
			t.slots[i] = pendSlot{}
			return
		}
		if h := t.home(s.key); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
}

// each calls f with every value held, in no particular order.
func (t *pendTable) each(f func(v uint64)) {
	if t.n == 0 {
		return
	}
	for _, s := range t.slots {
		if s.key != 0 {
			f(s.val)
		}
	}
}

// clear removes every key, keeping the table's memory.
func (t *pendTable) clear() {
	if t.n == 0 {
		return
	}
	clear(t.slots)
	t.n = 0
}
