package preload

import "testing"

// TestTableReuseLoggedLate: one thread closes a descriptor and another
// thread's socketpair reuses it; the close, and a read made before it,
// reach the file after the socketpair (the first thread's buffer was
// flushed later). They belong to the previous occupant: the new
// connection stays open and owns only its own calls (TestThreadsTraced
// lost a message this way about one run in eight).
func TestTableReuseLoggedLate(t *testing.T) {
	rec := func(tid int, ts int64, call Call, fd, fd2 int, ret int64) Record {
		return Record{Host: "h", PID: 1, TID: tid, TS: ts, Call: call, FD: fd, FD2: fd2, Ret: ret, HasRet: true, Sock: SockUnixStream}
	}
	cases := []struct {
		name string
		recs []Record
	}{
		{"in time order", []Record{
			rec(2, 1, CallSocketpair, 5, 6, 0), rec(2, 2, CallWrite, 5, -1, 3), rec(2, 3, CallRead, 6, -1, 3),
			rec(2, 10, CallClose, 5, -1, 0), rec(2, 11, CallClose, 6, -1, 0),
			rec(3, 30, CallSocketpair, 5, 6, 0), rec(3, 31, CallWrite, 5, -1, 4), rec(3, 32, CallRead, 6, -1, 4)}},
		{"the first thread's close and read logged late", []Record{
			rec(2, 1, CallSocketpair, 5, 6, 0), rec(2, 2, CallWrite, 5, -1, 3),
			rec(2, 10, CallClose, 5, -1, 0),
			rec(3, 30, CallSocketpair, 5, 6, 0), rec(3, 31, CallWrite, 5, -1, 4),
			rec(2, 3, CallRead, 6, -1, 3), rec(2, 11, CallClose, 6, -1, 0),
			rec(3, 32, CallRead, 6, -1, 4)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable()
			for i := range tc.recs {
				tab.Add(&tc.recs[i])
			}
			k := ProcKey{Host: "h", PID: 1}
			old, cur := tab.Lookup(k, 6, 3), tab.Lookup(k, 6, 32)
			if old == nil || cur == nil || old == cur {
				t.Fatalf("fd 6: %v at 3, %v at 32", old, cur)
			}
			if old.Closed != 11 || cur.Closed != 0 || tab.Lookup(k, 6, 20) != nil {
				t.Errorf("fd 6's first connection closed at %d (want 11), the second at %d (want open), fd 6 at 20 %v", old.Closed, cur.Closed, tab.Lookup(k, 6, 20))
			}
			if len(old.Msgs) != 1 || old.Msgs[0].TID != 2 || len(cur.Msgs) != 1 || cur.Msgs[0].TID != 3 {
				t.Errorf("fd 6's messages: first %+v, second %+v", old.Msgs, cur.Msgs)
			}
		})
	}
}
