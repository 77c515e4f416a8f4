package assembly

import (
	"slices"
	"testing"
	"time"
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

// TestOpenSpans: a request whose reply was not seen, or a one-way
// message, stays open half again the longest request seen at its node;
// at a node never seen to serve a whole request, the longest of the
// trace's, not MaxOpen (a DNS server's thousands of datagrams held open
// for 10 s made each of its sends weigh them all).
func TestOpenSpans(t *testing.T) {
	ms := int64(1e6)
	whole := func(callee int32, arr, rep int64) call {
		return call{callee: callee, callMsg: 0, retMsg: 1, arr: arr, rep: rep}
	}
	cases := []struct {
		name  string
		calls []call
		nodes int
		want  []int64
	}{
		{"each node its own longest", []call{whole(0, 0, 4*ms), whole(0, 0, 2*ms), whole(1, 0, 8*ms)}, 2, []int64{6 * ms, 12 * ms}},
		{"a node of datagrams and a cut call takes the trace's", []call{whole(0, 0, 8*ms),
			{callee: 1, callMsg: 0, retMsg: -1, arr: 0}, {callee: 1, callMsg: 0, retMsg: -1, flags: flagOneWay}}, 2, []int64{12 * ms, 12 * ms}},
		{"nothing whole anywhere: MaxOpen", []call{{callee: 0, callMsg: 0, retMsg: -1}}, 1, []int64{int64(10 * time.Second)}},
		{"at most MaxOpen", []call{whole(0, 0, int64(9*time.Second))}, 1, []int64{int64(10 * time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{opt: Options{MaxOpen: 10 * time.Second}, calls: tc.calls, parentsOf: make([][]int32, tc.nodes)}
			for i, c := range tc.calls {
				r.parentsOf[c.callee] = append(r.parentsOf[c.callee], int32(i))
			}
			r.openSpans()
			if !slices.Equal(r.spans, tc.want) {
				t.Errorf("spans %v, want %v", r.spans, tc.want)
			}
		})
	}
}
