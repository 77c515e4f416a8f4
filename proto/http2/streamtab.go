package http2

// streamTable holds a connection's open streams by id: an open-addressed
// table with linear probing, where Go's map cost a hash call, and on
// every stream an insertion and a deletion, for each of a call's frames.
// It is at most half full; it does not shrink (MaxStreams bounds it).
type streamTable struct {
	slots []*stream // a power of two of them; nil: empty
	n     int
}

// minStreamSlots is the size of a table's first allocation.
const minStreamSlots = 16

// home returns the slot where a search for id starts (Fibonacci hashing:
// consecutive ids, the common case, land far apart).
func (t *streamTable) home(id uint32) int {
	return int(uint64(id)*0x9e3779b97f4a7c15>>32) & (len(t.slots) - 1)
}

// get returns stream id, or nil.
func (t *streamTable) get(id uint32) *stream {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		st := t.slots[i]
		if st == nil || st.id == id {
			return st
		}
	}
}

// put adds st, whose id the table does not hold.
func (t *streamTable) put(st *stream) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.insert(st)
	t.n++
}

// insert places st in the first free slot from its home.
func (t *streamTable) insert(st *stream) {
	mask := len(t.slots) - 1
	i := t.home(st.id)
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = st
}

// grow doubles the table.
func (t *streamTable) grow() {
	old := t.slots
	t.slots = make([]*stream, max(2*len(old), minStreamSlots))
	for _, st := range old {
		if st != nil {
			t.insert(st)
		}
	}
}

// del removes stream id, if held, moving back the streams after it that
// its slot would hide from their searches.
func (t *streamTable) del(id uint32) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for {
		st := t.slots[i]
		if st == nil {
			return
		}
		if st.id == id {
			break
		}
		i = (i + 1) & mask
	}
	t.n--
	// i is empty now; a stream further on may move into it unless its
	// home lies cyclically in (i, j].
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		st := t.slots[j]
		if st == nil {
			t.slots[i] = nil
			return
		}
		if h := t.home(st.id); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = st
			i = j
		}
	}
}

// len returns the number of streams held.
func (t *streamTable) len() int { return t.n }

// all returns the streams held, in no particular order, appended to dst.
func (t *streamTable) all(dst []*stream) []*stream {
	if t.n == 0 {
		return dst
	}
	for _, st := range t.slots {
		if st != nil {
			dst = append(dst, st)
		}
	}
	return dst
}
