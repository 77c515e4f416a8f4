// Package runsort sorts slices that are mostly in order already (a
// trace's messages by time, one connection's or one host's events) by
// merging the runs already in order, pairwise, until one is left: a
// natural merge sort, whose cost follows the disorder rather than
// n log n compares. It is stable: of two equal elements, the earlier
// stays first.
package runsort

import "slices"

// Lesser is a sort key: Less reports whether it orders before o.
type Lesser[E any] interface {
	*E
	Less(o *E) bool
}

// Sort sorts s, using buf (grown when shorter than s) as the other half
// of each merge. It returns the sorted elements (in s or in buf) and buf
// (the other one), so a caller sorting repeatedly can keep both.
func Sort[E any, P Lesser[E]](s, buf []E) (sorted, other []E) {
	var runs []int // where each run starts, then len(s)
	for i := range s {
		if i == 0 || P(&s[i]).Less(&s[i-1]) {
			runs = append(runs, i)
		}
	}
	runs = append(runs, len(s))
	if len(runs) <= 2 {
		return s, buf
	}
	buf = slices.Grow(buf[:0], len(s))[:len(s)]
	for len(runs) > 2 {
		next := runs[:0] // written behind what the loop reads
		for j := 0; j+1 < len(runs); j += 2 {
			lo, mid := runs[j], runs[j+1]
			hi := mid
			if j+2 < len(runs) {
				hi = runs[j+2]
			}
			mergeInto[E, P](buf[lo:hi], s[lo:mid], s[mid:hi])
			next = append(next, lo)
		}
		next = append(next, len(s))
		s, buf, runs = buf, s, next
	}
	return s, buf
}

// mergeInto merges the sorted a and b into dst (len(a) + len(b) long),
// a's element first of two equal ones.
func mergeInto[E any, P Lesser[E]](dst, a, b []E) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if P(&b[j]).Less(&a[i]) {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}
