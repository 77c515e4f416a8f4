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
