package assembly

import (
	"cmp"
	"slices"

	"github.com/wirepath/wirepath/internal/runsort"
)

// The loader sorts every message twice (spreadTicks, pair) and every call
// once, by keys the trace mostly lists in order already: a trace is in
// time order, and what one host sends, or one connection carries, comes
// in the order it happened. Comparison sorts of the whole input cost
// n log n compares of keys spread over other slices; the sorts here copy
// the keys side by side, bucket them by their first key (a host, a
// connection), and merge the runs already in order within each bucket,
// so their cost follows the disorder. Every key they sort by is total
// (it ends with a message's index), so the order is the one any sort by
// the same key gives.

// bucketSort sorts s, whose elements' first key is firsts[i] (the sort's
// primary key) and whose class[i] (0 or 1) only groups the elements
// likely in order with each other: it places the elements by the rank of
// their first key, each class of a bucket in s's order (a counting sort),
// and merges each bucket's runs (runsort.Sort). It returns the sorted
// elements, in s or in a new slice.
func bucketSort[E any, P runsort.Lesser[E]](s []E, firsts []uint32, class []uint8) []E {
	rank, nb := ranks(firsts)
	start := make([]int, 2*nb+1)
	for i := range s {
		start[2*int(rank[i])+int(class[i])+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	placed := make([]E, len(s))
	next := slices.Clone(start[:2*nb])
	for i := range s {
		b := 2*int(rank[i]) + int(class[i])
		placed[next[b]] = s[i]
		next[b]++
	}
	for b := range nb { // s is free now: the merges' other half
		lo, hi := start[2*b], start[2*b+2]
		if sorted, _ := runsort.Sort[E, P](placed[lo:hi:hi], s[lo:hi:hi]); hi > lo && &sorted[0] != &placed[lo] {
			copy(placed[lo:hi], sorted)
		}
	}
	return placed
}

// ranks returns each key's rank among the distinct keys (0 for the
// smallest), and how many distinct keys there are.
func ranks(keys []uint32) (rank []int32, n int) {
	var top uint32
	for _, k := range keys {
		top = max(top, k)
	}
	rank = make([]int32, len(keys))
	if int64(top) > 2*int64(len(keys))+1024 {
		return sparseRanks(keys, rank)
	}
	// Small keys (symbols, connection numbers): a table by key.
	byKey := make([]int32, int(top)+1)
	for _, k := range keys {
		byKey[k] = 1
	}
	for k, seen := range byKey {
		if seen != 0 {
			byKey[k] = int32(n)
			n++
		}
	}
	for i, k := range keys {
		rank[i] = byKey[k]
	}
	return rank, n
}

// sparseRanks is ranks for keys too large to index a table by, filling
// rank.
func sparseRanks(keys []uint32, rank []int32) ([]int32, int) {
	ids := make(map[uint32]int32)
	var distinct []uint32
	last, lastID := uint32(0), int32(-1)
	for i, k := range keys {
		if lastID < 0 || k != last {
			id, ok := ids[k]
			if !ok {
				id = int32(len(distinct))
				ids[k] = id
				distinct = append(distinct, k)
			}
			last, lastID = k, id
		}
		rank[i] = lastID
	}
	order := make([]int32, len(distinct))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(distinct[a], distinct[b]) })
	byID := make([]int32, len(distinct))
	for r, id := range order {
		byID[id] = int32(r)
	}
	for i, id := range rank {
		rank[i] = byID[id]
	}
	return rank, len(distinct)
}
