package assembly

import "slices"

// A local search's shape. newLocal finds, for node n, every call's
// candidate requests (the sweep), the calls in order of send and each
// request's candidate calls' positions in that order (invert): all of
// them depend on the times alone, not on the assignment or the models,
// and the last pass builds a local search many times for one node (the
// improvement after each search, every kind and kind-pair matching, the
// fills and their refinements). They are found once while the node is
// solved, held with its sweep (r.swept, dropped when solve is done with
// the node), and shared read-only by the node's local searches; what
// changes with the assignment (the requests' calls and scores, the
// memo) is each local search's own. TestLocalShape checks every local
// search built with the shape held against one built without.

// localShape is what newLocal finds of a node from the times alone.
type localShape struct {
	cands   [][]int32 // by childPos
	order   []int32
	orderAt []int32
	inv     [][]int
}

// localShapeOf returns node n's shape, held while solve solves the node
// and a local search found it; nil otherwise.
func (r *run) localShapeOf(n int32) *localShape {
	if sw := r.swept[n]; sw != nil && sw != &sweepPending && sw != &sweepTooMany && !noLocalShape {
		return sw.shape
	}
	return nil
}

// keepLocalShape holds sh as node n's shape for its later local searches,
// when n's sweep is held (solve is solving it).
func (r *run) keepLocalShape(n int32, sh *localShape) {
	if sw := r.swept[n]; sw != nil && sw != &sweepPending && sw != &sweepTooMany && !noLocalShape {
		sw.shape = sh
	}
}

// noLocalShape, set by tests, builds every local search's shape anew;
// checkLocalShape, set by tests, gets every shape held when a local
// search takes it.
var (
	noLocalShape    bool
	checkLocalShape func(r *run, n int32, sh *localShape)
)

// newLocalShape finds node n's shape: the candidates (sweep), the calls
// in order of send (cmpSend) and their positions, and invert.
func (r *run) newLocalShape(n int32) *localShape {
	ls := &local{r: r, n: n, cands: r.localCands(n)}
	ls.order = slices.Clone(r.childrenOf[n])
	slices.SortFunc(ls.order, func(a, b int32) int { return ls.cmpSend(a, b) })
	ls.orderAt = make([]int32, len(ls.order))
	for i, c := range ls.order {
		ls.orderAt[r.childPos[c]] = int32(i)
	}
	return &localShape{ls.cands, ls.order, ls.orderAt, ls.invert(len(r.parentsOf[n]))}
}

// localCands returns every call of node n's candidates, by childPos,
// copied into one array (each list's capacity capped at its length).
func (r *run) localCands(n int32) [][]int32 {
	cands := make([][]int32, len(r.childrenOf[n]))
	// every call's candidates copied into one array, sliced once it is
	// complete (it grows while they are copied)
	var all []int32
	span := make([][2]int32, len(r.childrenOf[n]))
	r.sweep(n, func(c int32, cs []int32) {
		span[r.childPos[c]] = [2]int32{int32(len(all)), int32(len(all) + len(cs))}
		all = append(all, cs...)
	})
	for i, sp := range span {
		if sp[1] > sp[0] {
			cands[i] = all[sp[0]:sp[1]:sp[1]]
		}
	}
	return cands
}
