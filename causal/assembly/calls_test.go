package assembly

import (
	"testing"

	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

// TestPairing: CALLs and RETURNs pair by call id, stream id, ordinal or
// order, whatever the timestamps say, and a lost message costs its own
// call only.
func TestPairing(t *testing.T) {
	type pair struct{ call, ret int32 }
	for _, tc := range []struct {
		name   string
		build  func(b *tb)
		want   []pair // by message index, -1 for unseen
		counts map[string]int64
	}{
		{
			name: "call id, RETURN stamped before its CALL",
			build: func(b *tb) {
				b.msg(5, trace.KindCall, "A", "a:1", "B", "b:80", "x", 10)
				b.msg(4, trace.KindReturn, "B", "b:80", "A", "a:1", "x", 10)
			},
			want:   []pair{{0, 1}},
			counts: map[string]int64{"paired_by_call_id": 1, "returns_before_call": 1},
		},
		{
			name: "order on a serial connection",
			build: func(b *tb) {
				b.rpc(0, 2, "A", "a:1", "B", "b:80", "", 10)
				b.rpc(3, 5, "A", "a:1", "B", "b:80", "", 10)
			},
			want:   []pair{{0, 1}, {2, 3}},
			counts: map[string]int64{"paired_by_order": 2},
		},
		{
			name: "a lost RETURN costs its own call",
			build: func(b *tb) {
				b.rpc(0, -1, "A", "a:1", "B", "b:80", "", 10)
				b.rpc(3, 5, "A", "a:1", "B", "b:80", "", 10)
				b.rpc(6, 8, "A", "a:1", "B", "b:80", "", 10)
			},
			want:   []pair{{0, -1}, {1, 2}, {3, 4}},
			counts: map[string]int64{"paired_by_order": 2, "unpaired_calls": 1},
		},
		{
			name: "a lost CALL costs its own call",
			build: func(b *tb) {
				b.rpc(0, 2, "A", "a:1", "B", "b:80", "", 10)
				b.rpc(-1, 5, "A", "a:1", "B", "b:80", "", 10)
				b.rpc(6, 8, "A", "a:1", "B", "b:80", "", 10)
			},
			want:   []pair{{0, 1}, {-1, 2}, {3, 4}},
			counts: map[string]int64{"paired_by_order": 2, "unpaired_returns": 1},
		},
		{
			name: "stream ids pair answers out of order",
			build: func(b *tb) {
				c1, r1 := b.rpc(0, 9, "A", "a:1", "B", "b:443", "", 10)
				c3, r3 := b.rpc(1, 4, "A", "a:1", "B", "b:443", "", 10)
				b.ev(c1).Stream, b.ev(r1).Stream = 1, 1
				b.ev(c3).Stream, b.ev(r3).Stream = 3, 3
			},
			want:   []pair{{0, 1}, {2, 3}},
			counts: map[string]int64{"paired_by_stream": 2},
		},
		{
			name: "ordinals on a connection",
			build: func(b *tb) {
				c1, r1 := b.rpc(0, 2, "A", "a:1", "B", "b:80", "", 10)
				c2, r2 := b.rpc(3, 5, "A", "a:1", "B", "b:80", "", 10)
				for i, m := range []int32{c1, r1, c2, r2} {
					b.ev(m).Conn = 7
					b.ev(m).Seq = uint32(1 + i/2)
				}
			},
			want:   []pair{{0, 1}, {2, 3}},
			counts: map[string]int64{"paired_by_ordinal": 2},
		},
		{
			name: "different connections never pair",
			build: func(b *tb) {
				b.msg(0, trace.KindCall, "A", "a:1", "B", "b:80", "", 10)
				b.msg(1, trace.KindReturn, "B", "b:80", "A", "a:2", "", 10)
			},
			want:   []pair{{0, -1}, {-1, 1}},
			counts: map[string]int64{"unpaired_calls": 1, "unpaired_returns": 1},
		},
		{
			name: "no kinds: inferred from the roles",
			build: func(b *tb) {
				for i := range 4 {
					at := float64(10 * i)
					from := []string{"c1:5001", "c2:5002", "c3:5003", "c4:5004"}[i]
					b.msg(at, trace.KindUnknown, "C", from, "S", "s:80", "", 10)
					b.msg(at+2, trace.KindUnknown, "S", "s:80", "C", from, "", 10)
				}
			},
			want:   []pair{{0, 1}, {2, 3}, {4, 5}, {6, 7}},
			counts: map[string]int64{"kinds_inferred": 8, "paired_by_order": 4},
		},
		{
			name: "a message of unknown kind among calls is one-way",
			build: func(b *tb) {
				b.rpc(0, 2, "A", "a:1", "B", "b:80", "x", 10)
				b.msg(3, trace.KindUnknown, "A", "a:9", "B", "b:99", "", 10)
			},
			want:   []pair{{0, 1}, {2, -1}},
			counts: map[string]int64{"paired_by_call_id": 1, "one_way_messages": 1},
		},
		{
			name: "no timestamp",
			build: func(b *tb) {
				b.rpc(0, 2, "A", "a:1", "B", "b:80", "x", 10)
				b.msg(-1, trace.KindCall, "A", "a:1", "B", "b:80", "y", 10)
			},
			want:   []pair{{0, 1}},
			counts: map[string]int64{"messages_no_timestamp": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			tc.build(b)
			res, r := runOn(t, b, DefaultOptions())
			var got []pair
			for _, c := range r.calls {
				got = append(got, pair{c.callMsg, c.retMsg})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("calls %v, want %v", got, tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || g == w
				}
				if !found {
					t.Errorf("calls %v: no %v", got, w)
				}
			}
			for name, v := range tc.counts {
				if g := enginetest.Count(res, name); g != v {
					t.Errorf("%s = %d, want %d", name, g, v)
				}
			}
		})
	}
}
