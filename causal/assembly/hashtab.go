package assembly

// u64Table maps uint64 keys (hashes already) to uint64 values, for the
// search's per-send tables that are emptied thousands of times a second:
// open addressing with linear probing, emptied by starting a new
// generation instead of clearing its arrays, and no allocation once it
// has grown to the largest size needed.
type u64Table struct {
	keys []uint64
	vals []uint64
	gen  []uint32 // an entry is used when its gen is cur
	cur  uint32
	n    int
}

// reset empties the table.
func (t *u64Table) reset() {
	t.cur++
	t.n = 0
	if t.cur == 0 { // the generations wrapped: clear for real
		clear(t.gen)
		t.cur = 1
	}
}

// slot returns where key k is, or the empty entry where it would go.
func (t *u64Table) slot(k uint64) int {
	mask := len(t.keys) - 1
	i := int((k*0x9e3779b97f4a7c15)>>32) & mask
	for t.gen[i] == t.cur && t.keys[i] != k {
		i = (i + 1) & mask
	}
	return i
}

// get returns the value of key k and whether it is held.
func (t *u64Table) get(k uint64) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	i := t.slot(k)
	if t.gen[i] != t.cur {
		return 0, false
	}
	return t.vals[i], true
}

// put sets the value of key k.
func (t *u64Table) put(k, v uint64) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	i := t.slot(k)
	if t.gen[i] != t.cur {
		t.gen[i] = t.cur
		t.keys[i] = k
		t.n++
	}
	t.vals[i] = v
}

// grow doubles the table (at least 64 entries), keeping its entries.
func (t *u64Table) grow() {
	oldK, oldV, oldG, cur := t.keys, t.vals, t.gen, t.cur
	size := max(64, 2*len(oldK))
	t.keys, t.vals, t.gen = make([]uint64, size), make([]uint64, size), make([]uint32, size)
	t.cur, t.n = 1, 0
	for i, g := range oldG {
		if g == cur {
			t.put(oldK[i], oldV[i])
		}
	}
}
