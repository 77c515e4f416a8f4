package assembly

// u64Table maps uint64 keys (hashes already) to uint64 values, for the
// search's per-send tables that are emptied thousands of times a second:
// open addressing with linear probing, emptied by starting a new
// generation instead of clearing its array, and no allocation once it
// has grown to the largest size needed. An entry's key, value and
// generation are side by side, so a probe reads one cache line.
type u64Table struct {
	ents []u64Entry
	cur  uint32
	n    int
}

// u64Entry is an entry of a u64Table: used when gen is the table's cur.
type u64Entry struct {
	key, val uint64
	gen      uint32
}

// reset empties the table.
func (t *u64Table) reset() {
	t.cur++
	t.n = 0
	if t.cur == 0 { // the generations wrapped: clear for real
		clear(t.ents)
		t.cur = 1
	}
}

// slot returns where key k is, or the empty entry where it would go.
func (t *u64Table) slot(k uint64) int {
	mask := len(t.ents) - 1
	i := int((k*0x9e3779b97f4a7c15)>>32) & mask
	for {
		e := &t.ents[i]
		if e.gen != t.cur || e.key == k {
			return i
		}
		i = (i + 1) & mask
	}
}

// get returns the value of key k and whether it is held.
func (t *u64Table) get(k uint64) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	e := &t.ents[t.slot(k)]
	if e.gen != t.cur {
		return 0, false
	}
	return e.val, true
}

// put sets the value of key k.
func (t *u64Table) put(k, v uint64) {
	if 2*(t.n+1) > len(t.ents) {
		t.grow()
	}
	e := &t.ents[t.slot(k)]
	if e.gen != t.cur {
		e.gen = t.cur
		e.key = k
		t.n++
	}
	e.val = v
}

// grow doubles the table (at least 64 entries), keeping its entries.
func (t *u64Table) grow() {
	old, cur := t.ents, t.cur
	t.ents = make([]u64Entry, max(64, 2*len(old)))
	t.cur, t.n = 1, 0
	for i := range old {
		if old[i].gen == cur {
			t.put(old[i].key, old[i].val)
		}
	}
}
