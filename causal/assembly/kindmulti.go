package assembly

// Requests that make one call of a kind, told from the search's
// mistakes.
//
// The kind matchings (kindmatch.go, kindpair.go) give each request at
// most one call of the kind they match, so they are tried only for
// kinds the node's requests make once: at most kindMatchMaxMulti of the
// requests holding a call of the kind may hold more. Counted over the
// assignment the matchings are to correct, that share counts the
// mistakes they undo: a row of requests each holding the next one's
// call ends in a request holding two. On http/ids/sniffed/64 (main
// b7745dd) the last pass left 12 of the 209 requests holding a
// memcached set holding two (5.7 %) and 8 of the 94 holding a Redis
// LRANGE (8.5 %), where the truth has none: the two kinds were not
// matched, and no set of kinds holding them was tried by the kind-pair
// matching, which with the background rate read in the idle time
// (bgidle.go) left 109 of the app's cache calls wrong (45 without it,
// when the same shares were 2.8 % and 4.1 %).
//
// Requests of a kind that make several calls of another do so as a
// rule: the fan-out's aggregator, a loop over a list. The search's
// mistakes do not: they hang a second call on a few requests of each
// kind. So a request holding more than one call counts against the
// kind only in a kind of request where most of its holders hold more
// than one; the few doubles of a kind of request whose requests
// otherwise hold one each are left for the matching to undo, and the
// matching, refined, is kept only where the node's objective rises
// (keepIfGain).

// oneKindPerRequest reports whether node n's requests make one call of
// kind k each: at most kindMatchMaxMulti of the requests holding a call
// of k hold more than one in a kind of request where most do
// (fewOfRule).
func (ls *local) oneKindPerRequest(k int32) bool {
	r := ls.r
	by := map[int32]holdCount{}
	for i, q := range r.parentsOf[ls.n] {
		h := 0
		for _, c := range ls.kids[i] {
			if r.calls[c].kind == k {
				h++
			}
		}
		if h == 0 {
			continue
		}
		ct := by[r.calls[q].kind]
		ct.holding++
		if h > 1 {
			ct.multi++
		}
		by[r.calls[q].kind] = ct
	}
	return fewOfRule(by)
}

// holdCount counts, in a kind of request, the requests holding a call
// of a kind and those of them holding more than one.
type holdCount struct{ holding, multi int }

// fewOfRule reports whether the requests holding more than one call of
// a kind, counted only in the kinds of request (by) where they are most
// of the holders, are at most kindMatchMaxMulti of all the holders.
func fewOfRule(by map[int32]holdCount) bool {
	holding, rule := 0, 0
	for _, ct := range by {
		holding += ct.holding
		if 2*ct.multi > ct.holding {
			rule += ct.multi
		}
	}
	return float64(rule) <= kindMatchMaxMulti*float64(holding)
}
