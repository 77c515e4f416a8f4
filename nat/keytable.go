package nat

import "math/rand/v2"

// keyTable maps body keys to entry ids for the body window: open
// addressing with linear probing, deletion by backward shift (no
// tombstones), at most half full. It is a Go map's job done with less
// work per packet: every observed packet looks its key up, and one
// insertion and one deletion per body pass through the window. The slot
// of a key is a multiplicative hash of the key mixed with a random seed,
// so crafted payloads cannot pile their keys onto one run of slots.
type keyTable struct {
	slots []keySlot // a power of two of them, or none
	shift uint      // 64 - log2(len(slots))
	n     int
	seed  uint64
}

// keySlot is one slot: id+1 (0: empty) and its key.
type keySlot struct {
	key uint64
	id  uint32
}

// home is key's preferred slot.
func (t *keyTable) home(key uint64) int {
	return int(((key ^ t.seed) * 0x9e3779b97f4a7c15) >> t.shift)
}

// get returns the id of key.
func (t *keyTable) get(key uint64) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// put adds key (not in t) with id.
func (t *keyTable) put(key uint64, id uint32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = keySlot{key: key, id: id + 1}
	t.n++
}

// del removes key, if present, shifting back the keys after it that
// would no longer be found past the freed slot.
func (t *keyTable) del(key uint64) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for t.slots[i].key != key || t.slots[i].id == 0 {
		if t.slots[i].id == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.id == 0 {
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
	t.slots[i] = keySlot{}
	t.n--
}

// grow doubles the slots (64 at first) and places the keys again.
func (t *keyTable) grow() {
	old := t.slots
	n := max(64, 2*len(old))
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	t.slots = make([]keySlot, n)
	t.shift = 64
	for k := n; k > 1; k >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, s := range old {
		if s.id != 0 {
			t.put(s.key, s.id-1)
		}
	}
}
