package nat

import "testing"

// TestNotePlain: the view a packet was observed on is counted directly
// only while it is still that connection's active view; a view ended by a
// sweep (its id free or reused for another connection) leaves the count
// to the connection's view now, as the map look-up it replaces did.
func TestNotePlain(t *testing.T) {
	a := connKey{ep: [2]endpoint{{port: 1}, {port: 2}}, proto: 6}
	b := connKey{ep: [2]endpoint{{port: 3}, {port: 4}}, proto: 6}
	c := connKey{ep: [2]endpoint{{port: 5}, {port: 6}}, proto: 17}
	for _, tc := range []struct {
		name  string
		views []view
		byKey map[connKey]uint32
		key   connKey
		vid   uint32
		want  []int64 // plain per view after
	}{
		{"the view observed, still active", []view{{key: a, live: true}}, map[connKey]uint32{a: 0}, a, 0, []int64{1}},
		{"ended, the connection active again elsewhere", []view{{key: a}, {key: a, live: true}}, map[connKey]uint32{a: 1}, a, 0, []int64{0, 1}},
		{"id reused by another connection", []view{{key: b, live: true}, {key: a, live: true}}, map[connKey]uint32{a: 1, b: 0}, a, 0, []int64{0, 1}},
		{"ended, no view now", []view{{key: a}}, map[connKey]uint32{}, a, 0, []int64{0}},
		{"not observed", []view{{key: a, live: true}}, map[connKey]uint32{a: 0}, c, noView, []int64{0}},
		{"not observed, the connection has a view", []view{{key: c, live: true}}, map[connKey]uint32{c: 0}, c, noView, []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLearner(DefaultOptions())
			l.views = tc.views
			for k, id := range tc.byKey {
				l.viewByKey.set(k, id, l.viewByKey.hash(k))
			}
			l.notePlain(tc.key, tc.vid)
			for i, w := range tc.want {
				if got := l.views[i].plain; got != w {
					t.Errorf("view %d plain = %d, want %d", i, got, w)
				}
			}
		})
	}
}
