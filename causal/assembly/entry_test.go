package assembly

import (
	"slices"
	"testing"
)

// TestEntryNodes: a node serves a request when it receives a call with a
// reply; one-way messages it receives (datagrams a server echoes back) do
// not make its calls part of another request. A trace of one-way messages
// only keeps the rule that a node receiving anything serves.
func TestEntryNodes(t *testing.T) {
	twoWay := func(caller, callee int32) call { return call{caller: caller, callee: callee} }
	oneWay := func(caller, callee int32) call { return call{caller: caller, callee: callee, flags: flagOneWay} }
	cases := []struct {
		name  string
		calls []call
		nodes int
		want  []bool
	}{
		{"client, server, backend", []call{twoWay(0, 1), twoWay(1, 2)}, 3, []bool{true, false, false}},
		{"a client that also gets datagrams back", []call{twoWay(0, 1), oneWay(0, 1), oneWay(1, 0)}, 2, []bool{true, false}},
		{"a server reached by datagrams only, beside calls elsewhere", []call{twoWay(0, 1), oneWay(2, 3)}, 4, []bool{true, false, true, true}},
		{"one-way messages only", []call{oneWay(0, 1), oneWay(1, 2)}, 3, []bool{true, false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parentsOf := make([][]int32, tc.nodes)
			for i, c := range tc.calls {
				parentsOf[c.callee] = append(parentsOf[c.callee], int32(i))
			}
			if got := entryNodes(tc.calls, parentsOf); !slices.Equal(got, tc.want) {
				t.Errorf("entry nodes %v, want %v", got, tc.want)
			}
		})
	}
}
