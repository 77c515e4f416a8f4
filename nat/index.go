package nat

import (
	"github.com/wirepath/wirepath/internal/keytab"
	"github.com/wirepath/wirepath/pcapio"
)

// maxCopies is how many recent copies of one body key the window keeps;
// older ones make room. More than two connections per key is ambiguous
// anyway, so only repeats on one connection need the room.
const maxCopies = 4

// copyRec is one packet in the body window.
type copyRec struct {
	ts      int64  // corrected time of the first observation
	sig     uint64 // signature of the capture points that saw it
	view    uint32 // the connection (view) it belongs to
	ttlMin  uint8
	ttlMax  uint8
	srcSlot uint8            // which endpoint of the view sent it
	paired  bool             // already matched with a copy on another view
	sniffer pcapio.SnifferID // the sniffer of the first observation
}

// bodyEntry holds the recent copies of one body key. The fields every
// packet's expiry and look-up read (key, refs, n, the views) come first,
// in the entry's first cache line, and the copies after them.
type bodyEntry struct {
	key uint64
	// refs counts the window records that point here; the entry is freed
	// when the last one leaves the window.
	refs uint32
	n    uint8
	// nviews counts views; a third distinct one makes the key ambiguous.
	nviews    uint8
	ambiguous bool
	// repeated is set when one connection carried the key twice.
	repeated bool
	// views are the distinct connections the key was seen on while the
	// entry lived.
	views  [2]uint32
	copies [maxCopies]copyRec
}

// prune drops copies older than cutoff (copies are in arrival order).
func (e *bodyEntry) prune(cutoff int64) {
	k := 0
	for k < int(e.n) && e.copies[k].ts < cutoff {
		k++
	}
	if k > 0 {
		copy(e.copies[:], e.copies[k:e.n])
		e.n -= uint8(k)
	}
}

// push appends c, dropping the oldest copy when full.
func (e *bodyEntry) push(c copyRec) {
	if int(e.n) == maxCopies {
		copy(e.copies[:], e.copies[1:])
		e.n--
	}
	e.copies[e.n] = c
	e.n++
}

// noteView records that the key was seen on view v; a third distinct view
// makes the entry ambiguous.
func (e *bodyEntry) noteView(v uint32) {
	for i := 0; i < int(e.nviews); i++ {
		if e.views[i] == v {
			return
		}
	}
	if e.nviews < 2 {
		e.views[e.nviews] = v
		e.nviews++
		return
	}
	e.ambiguous = true
}

// windowRec is one packet's entry in the time-ordered window queue.
type windowRec struct {
	ts    int64
	entry uint32
}

// ring is a growable FIFO of window records.
type ring struct {
	buf  []windowRec
	head int
	n    int
}

func (r *ring) push(w windowRec) {
	if r.n == len(r.buf) {
		nb := make([]windowRec, max(64, 2*len(r.buf)))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = w
	r.n++
}

func (r *ring) front() *windowRec { return &r.buf[r.head] }

func (r *ring) pop() {
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
}

// bodyIndex is the body window: for every body key seen within the last
// Window of corrected time, its recent copies. Its size is bounded by the
// packets of one window.
type bodyIndex struct {
	byKey   keytab.Table[uint32] // entry id+1 by body key
	entries []bodyEntry
	free    []uint32
	q       ring
}

func newBodyIndex() bodyIndex {
	return bodyIndex{}
}

// entry returns the entry of key, creating it if needed (one probe of
// the table: the id a new entry would get is offered to it).
func (b *bodyIndex) entry(key uint64) uint32 {
	var id uint32
	n := len(b.free)
	if n > 0 {
		id = b.free[n-1]
	} else {
		id = uint32(len(b.entries))
	}
	if got, found := b.byKey.GetOrSet(key, id+1); found {
		return got - 1
	}
	if n > 0 {
		b.free = b.free[:n-1]
		b.entries[id] = bodyEntry{key: key}
	} else {
		b.entries = append(b.entries, bodyEntry{key: key})
	}
	return id
}

// add records that a copy with time ts was added to entry id.
func (b *bodyIndex) add(id uint32, ts int64) {
	b.entries[id].refs++
	b.q.push(windowRec{ts: ts, entry: id})
}

// expire removes window records older than cutoff and frees entries no
// record points to any more.
func (b *bodyIndex) expire(cutoff int64) {
	for b.q.n > 0 && b.q.front().ts < cutoff {
		id := b.q.front().entry
		b.q.pop()
		e := &b.entries[id]
		e.refs--
		if e.refs == 0 {
			b.byKey.Delete(e.key)
			b.free = append(b.free, id)
		}
	}
}
