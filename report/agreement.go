package report

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// Agreement compares how several engines, run on one trace, build the
// same requests: for each pair of engines, of the requests (root
// messages) both put in a tree, how many they put in the same tree (the
// same messages). Engines whose result lists no instances (convolution,
// or a run without --instances) cannot be compared and are named in
// Missing.
type Agreement struct {
	// Engines are the engines compared, in the results' order.
	Engines []string
	// Requests counts, per engine, the requests it put in a tree.
	Requests []int
	// Both[i][j] counts the requests engines i and j both put in a tree,
	// Same[i][j] those of them they put in the same tree.
	Both, Same [][]int
	// All counts the requests every engine put in a tree, AllSame those
	// they all put in the same tree.
	All, AllSame int
	// Missing are the engines without instances, not compared.
	Missing []string
}

// ComputeAgreement compares the instances the results list (all of each
// pattern's: engine flag --instances -1). It returns nil when fewer than
// two results list instances.
func ComputeAgreement(rs []*causal.Result) *Agreement {
	a := &Agreement{}
	var trees []map[int]string
	for _, r := range rs {
		m := treesOf(r)
		if m == nil {
			a.Missing = append(a.Missing, r.Engine)
			continue
		}
		a.Engines = append(a.Engines, r.Engine)
		a.Requests = append(a.Requests, len(m))
		trees = append(trees, m)
	}
	n := len(trees)
	if n < 2 {
		return nil
	}
	a.Both, a.Same = make([][]int, n), make([][]int, n)
	for i := range n {
		a.Both[i], a.Same[i] = make([]int, n), make([]int, n)
		for j := range n {
			for root, t := range trees[i] {
				if u, ok := trees[j][root]; ok {
					a.Both[i][j]++
					if u == t {
						a.Same[i][j]++
					}
				}
			}
		}
	}
	for root, t := range trees[0] {
		all, same := true, true
		for _, m := range trees[1:] {
			u, ok := m[root]
			all = all && ok
			same = same && ok && u == t
		}
		if all {
			a.All++
		}
		if same {
			a.AllSame++
		}
	}
	return a
}

// treesOf maps each instance's root message to its tree (its messages,
// sorted, as a key), or returns nil when the result lists no instances.
func treesOf(r *causal.Result) map[int]string {
	var m map[int]string
	for pi := range r.Patterns {
		for _, in := range r.Patterns[pi].Instances {
			if len(in.Messages) == 0 {
				continue
			}
			if m == nil {
				m = map[int]string{}
			}
			ms := slices.Clone(in.Messages)
			slices.Sort(ms)
			var b strings.Builder
			for k, x := range ms {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(x))
			}
			m[in.Messages[0]] = b.String()
		}
	}
	return m
}
