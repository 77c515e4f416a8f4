package pcapio

import "math/rand/v2"

// packetTable maps wire keys to the pending packet that holds them, the
// merger's duplicate groups: open addressing with linear probing,
// deletion by backward shift (no tombstones), at most half full. It is a
// Go map's job (a look-up and an insertion for every packet, a deletion
// for every packet returned) done with less work: about 300 instructions
// a packet in the runtime's map code on the mix of
// scripts/bench-commands.sh. The slot of a key is a multiplicative hash
// of the key mixed with a random seed, so crafted frames cannot pile
// their keys onto one run of slots (nat's keyTable is the same design).
type packetTable struct {
	slots []packetSlot // a power of two of them, or none
	shift uint         // 64 - log2(len(slots))
	n     int
	seed  uint64
}

// packetSlot is one slot; p is nil when it is empty.
type packetSlot struct {
	key uint64
	p   *Packet
}

// home is key's preferred slot.
func (t *packetTable) home(key uint64) int {
	return int(((key ^ t.seed) * 0x9e3779b97f4a7c15) >> t.shift)
}

// find returns the slot of key and whether key is there (else the empty
// slot that ends its run). t has slots.
func (t *packetTable) find(key uint64) (int, bool) {
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.p == nil {
			return i, false
		}
		if s.key == key {
			return i, true
		}
	}
}

// get returns the packet of key, or nil.
func (t *packetTable) get(key uint64) *Packet {
	if t.n == 0 {
		return nil
	}
	i, ok := t.find(key)
	if !ok {
		return nil
	}
	return t.slots[i].p
}

// set makes p (not nil) the packet of key, replacing any other.
func (t *packetTable) set(key uint64, p *Packet) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	i, ok := t.find(key)
	if !ok {
		t.n++
	}
	t.slots[i] = packetSlot{key: key, p: p}
}

// delIf removes key if p is its packet, shifting back the keys after it
// that would no longer be found past the freed slot.
func (t *packetTable) delIf(key uint64, p *Packet) {
	if t.n == 0 {
		return
	}
	i, ok := t.find(key)
	if !ok || t.slots[i].p != p {
		return
	}
	mask := len(t.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.p == nil {
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
	t.slots[i] = packetSlot{}
	t.n--
}

// grow doubles the slots (64 at first) and places the keys again.
func (t *packetTable) grow() {
	old := t.slots
	n := max(64, 2*len(old))
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	t.slots = make([]packetSlot, n)
	t.shift = 64
	for k := n; k > 1; k >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, s := range old {
		if s.p != nil {
			t.set(s.key, s.p)
		}
	}
}
