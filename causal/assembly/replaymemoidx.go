package assembly

// The replay memo's index (replayMemo.idx): at 64 requests in flight a
// request's list held a hundred entries or more, and get scanned them
// all at every miss (550 instructions a look-up on ids-sniffed-64-grpc,
// 2 % of the engine's). The index maps a request's position and hash to
// its newest entry under that key, each entry leading to the one it was
// put before (a chain, for collisions of keys); get still checks an
// entry's request, hash and calls, so it answers what the scan answered:
// the score of the one entry of that request with those calls, put only
// after a miss (TestReplayMemoIndex).

// memoKey is the index's key of the request at position i and hash h.
func memoKey(i int32, h uint64) uint64 { return mix64(h ^ (uint64(uint32(i)) << 1)) }

// memoRef refers to entry k of the request at position i (never 0).
func memoRef(i int32, k int) uint64 { return uint64(uint32(i))<<32 | uint64(uint32(k+1)) }

// memoAt is the request position and entry index of ref.
func memoAt(ref uint64) (i int32, k int) { return int32(ref >> 32), int(uint32(ref)) - 1 }

// memoScanMax is the longest list of a request's entries get scans
// rather than looks up in the index: on the scale benchmark's trace a
// request has a few entries, read in one or two cache lines, where the
// index (a table of every entry of the node) costs a cache miss or two a
// look-up (replayMemo.get was 0.27 s of a run's CPU samples scanning,
// 0.93 s through the index; docs/performance.md). A request's entries
// are indexed from when its list outgrows the scan, all of them then.
const memoScanMax = 32

// indexNew indexes the newest entry of the request at position i, once
// its list is longer than memoScanMax; the list that has just outgrown
// it has every entry indexed, oldest first, so that its chains are those
// of an index kept from the start.
func (m *replayMemo) indexNew(i int32) {
	es := m.byReq[i]
	switch {
	case len(es) <= memoScanMax:
		return
	case len(es) == memoScanMax+1:
		for k := range es {
			m.index(i, k)
		}
	default:
		m.index(i, len(es)-1)
	}
}

// index puts entry k of the request at position i at the head of its
// key's chain.
func (m *replayMemo) index(i int32, k int) {
	e := &m.byReq[i][k]
	key := memoKey(i, e.h)
	head, _ := m.idx.get(key)
	m.idx.put(key, memoRef(i, k))
	e.next = head
}
