// Package keytab is a hash table from 64-bit keys to small values for the
// per-packet paths (nat's body window and view look-up, pcapio's
// duplicate groups): open addressing with linear probing, deletion by
// backward shift (no tombstones), at most half full. It does a Go map's
// job with less work per packet. The slot of a key is a multiplicative
// hash of the key mixed with a random seed, so crafted frames cannot pile
// their keys onto one run of slots.
package keytab

import "math/rand/v2"

// Table maps uint64 keys to values of V; V's zero value marks an empty
// slot, so it cannot be stored.
type Table[V comparable] struct {
	slots []slot[V] // a power of two of them, or none
	shift uint      // 64 - log2(len(slots))
	n     int
	seed  uint64
}

type slot[V comparable] struct {
	key uint64
	v   V
}

// Len returns how many keys the table holds.
func (t *Table[V]) Len() int { return t.n }

// home is key's preferred slot.
func (t *Table[V]) home(key uint64) int {
	return int(((key ^ t.seed) * 0x9e3779b97f4a7c15) >> t.shift)
}

// find returns the slot of key and whether key is there (else the empty
// slot that ends its run). t has slots.
func (t *Table[V]) find(key uint64) (int, bool) {
	var zero V
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == zero {
			return i, false
		}
		if s.key == key {
			return i, true
		}
	}
}

// Get returns the value of key and whether it is there.
func (t *Table[V]) Get(key uint64) (V, bool) {
	var zero V
	if t.n == 0 {
		return zero, false
	}
	i, ok := t.find(key)
	if !ok {
		return zero, false
	}
	return t.slots[i].v, true
}

// Set makes v (not V's zero) the value of key, replacing any other.
func (t *Table[V]) Set(key uint64, v V) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	i, ok := t.find(key)
	if !ok {
		t.n++
	}
	t.slots[i] = slot[V]{key: key, v: v}
}

// GetOrSet returns the value of key and true when key is there; else it
// makes v (not V's zero) the value of key and returns v and false. It
// probes the slots once where a Get and a Set probe them twice.
func (t *Table[V]) GetOrSet(key uint64, v V) (V, bool) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	i, ok := t.find(key)
	if ok {
		return t.slots[i].v, true
	}
	t.n++
	t.slots[i] = slot[V]{key: key, v: v}
	return v, false
}

// Delete removes key, if present.
func (t *Table[V]) Delete(key uint64) {
	if t.n == 0 {
		return
	}
	if i, ok := t.find(key); ok {
		t.remove(i)
	}
}

// DeleteIf removes key if v is its value.
func (t *Table[V]) DeleteIf(key uint64, v V) {
	if t.n == 0 {
		return
	}
	if i, ok := t.find(key); ok && t.slots[i].v == v {
		t.remove(i)
	}
}

// remove empties slot i, shifting back the keys after it that would no
// longer be found past the freed slot.
func (t *Table[V]) remove(i int) {
	var zero V
	mask := len(t.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.v == zero {
			break
		}
		// s stays if its home lies cyclically in (i, j].
		h := t.home(s.key)
		if i <= j && i < h && h <= j || i > j && (i < h || h <= j) {
			continue
		}
		t.slots[i] = s
		i = j
	}
	t.slots[i] = slot[V]{}
	t.n--
}

// grow doubles the slots (64 at first) and places the keys again.
func (t *Table[V]) grow() {
	var zero V
	old := t.slots
	n := max(64, 2*len(old))
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	t.slots = make([]slot[V], n)
	t.shift = 64
	for k := n; k > 1; k >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, s := range old {
		if s.v != zero {
			t.Set(s.key, s.v)
		}
	}
}
