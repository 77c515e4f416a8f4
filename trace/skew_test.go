package trace

import (
	"strings"
	"testing"
)

func skewTrace(single bool) *Trace {
	t := &Trace{}
	t.Meta.SingleClock = single
	// Kinds make db a server (it answers calls) and the c* nodes clients.
	add := func(send, recv Timestamp, src, dst, sn, dn string, k Kind) {
		t.Messages = append(t.Messages, Message{SendTS: send, RecvTS: recv, Kind: k,
			Src: t.Intern(src), Dst: t.Intern(dst), SrcNode: t.Intern(sn), DstNode: t.Intern(dn)})
	}
	add(100, 150, "10.0.0.9:40001", "10.0.0.1:80", "c1", "web", KindCall)
	add(200, 260, "10.0.0.1:50000", "10.0.0.2:5432", "web", "db", KindCall)
	add(300, 330, "10.0.0.2:5432", "10.0.0.1:50000", "db", "web", KindReturn)
	add(NoTime, 420, "10.0.0.1:80", "10.0.0.9:40001", "web", "c1", KindReturn)
	add(500, 540, "10.0.0.8:40002", "10.0.0.1:80", "c2", "web", KindCall)
	add(600, 650, "10.0.0.1:80", "10.0.0.8:40002", "web", "c2", KindReturn)
	add(700, 710, "10.0.0.7:40003", "10.0.0.1:80", "c3", "web", KindCall)
	return t
}

func times(t *Trace) [][2]Timestamp {
	var out [][2]Timestamp
	for _, m := range t.Messages {
		out = append(out, [2]Timestamp{m.SendTS, m.RecvTS})
	}
	return out
}

func TestSkew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		single  bool
		shifts  map[string]int64
		want    [][2]Timestamp
		changed int
		err     string
	}{
		{name: "one node", shifts: map[string]int64{"web": 1000},
			want:    [][2]Timestamp{{100, 1150}, {1200, 260}, {300, 1330}, {NoTime, 420}, {500, 1540}, {1600, 650}, {700, 1710}},
			changed: 6}, // the answer to c1 was not seen leaving web
		{name: "clients", shifts: map[string]int64{ClientsKey: -50},
			want:    [][2]Timestamp{{50, 150}, {200, 260}, {300, 330}, {NoTime, 370}, {450, 540}, {600, 600}, {650, 710}},
			changed: 5},
		{name: "single clock follows the sender", single: true, shifts: map[string]int64{"db": 7},
			want:    [][2]Timestamp{{100, 150}, {200, 260}, {307, 337}, {NoTime, 420}, {500, 540}, {600, 650}, {700, 710}},
			changed: 1},
		{name: "unknown node", shifts: map[string]int64{"nope": 1}, err: `node "nope" is not in the trace`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := skewTrace(tc.single)
			n, err := Skew(tr, tc.shifts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := times(tr); n != tc.changed || !equalTimes(got, tc.want) {
				t.Errorf("changed %d, times %v\nwant %d, %v", n, got, tc.changed, tc.want)
			}
			if len(tr.Meta.Warnings) != len(tc.shifts) {
				t.Errorf("warnings %q", tr.Meta.Warnings)
			}
		})
	}
}

func equalTimes(a, b [][2]Timestamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSkewDeskewRoundTrip: skewing moves a node's known offset with its
// clock, and deskewing with the offsets restores the reference-clock trace.
func TestSkewDeskewRoundTrip(t *testing.T) {
	tr := skewTrace(false)
	want := times(tr)
	tr.Meta.Offsets = []Offset{
		{Node: "web", Reference: "c1", Known: true},
		{Node: "db", Reference: "c1", Known: true},
		{Node: "c2", Reference: "c1", Known: false},
	}
	if _, err := Skew(tr, map[string]int64{"web": 2500, "db": -300}); err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Offsets[0].OffsetNS != 2500 || tr.Meta.Offsets[1].OffsetNS != -300 {
		t.Fatalf("offsets did not follow the clocks: %+v", tr.Meta.Offsets)
	}
	n, unknown := Deskew(tr)
	if n != 6 || len(unknown) != 1 || unknown[0] != "c2" {
		t.Errorf("deskew changed %d, unknown %v", n, unknown)
	}
	if got := times(tr); !equalTimes(got, want) {
		t.Errorf("after skew and deskew %v, want %v", got, want)
	}
	if tr.Meta.Offsets[0].OffsetNS != 0 || tr.Meta.Offsets[1].OffsetNS != 0 {
		t.Errorf("offsets after deskew %+v", tr.Meta.Offsets)
	}
}

// TestSkewReferenceNode: shifting the node the offsets refer to records
// its new offset against the reference clock, its former self.
func TestSkewReferenceNode(t *testing.T) {
	tr := skewTrace(false)
	tr.Meta.Offsets = []Offset{{Node: "web", Reference: "c1", Known: true, OffsetNS: 40}}
	if _, err := Skew(tr, map[string]int64{"c1": -100}); err != nil {
		t.Fatal(err)
	}
	if off, ok := tr.Meta.OffsetOf("c1"); !ok || off != -100 {
		t.Errorf("c1's offset %d (known %v), want -100: %+v", off, ok, tr.Meta.Offsets)
	}
	if off, _ := tr.Meta.OffsetOf("web"); off != 40 {
		t.Errorf("web's offset changed to %d", off)
	}
	n, _ := Deskew(tr)
	if n == 0 || tr.Messages[0].SendTS != 100 {
		t.Errorf("deskew moved %d messages; c1's first send %d, want 100 again", n, tr.Messages[0].SendTS)
	}
}

// TestApplyOffsetsKeepsThemAndClamps: ApplyOffsets moves the timestamps
// onto the reference clock as Deskew does, without a warning, and keeps
// each offset it removed in AppliedNS; ClampReceives then sets a receive
// left before its send (the offsets' error) to the send, and leaves the
// rest alone.
func TestApplyOffsetsKeepsThemAndClamps(t *testing.T) {
	tr := &Trace{}
	a, b := tr.Intern("a"), tr.Intern("b")
	tr.Messages = []Message{
		{SendTS: 1000, RecvTS: 1010, SrcNode: a, DstNode: b}, // b's clock 20 behind: 10 before the send
		{SendTS: 2000, RecvTS: 2100, SrcNode: a, DstNode: b}, // fine either way
		{SendTS: 3000, RecvTS: NoTime, SrcNode: b, DstNode: a},
	}
	tr.Meta.Offsets = []Offset{{Node: "b", Reference: "a", Known: true, OffsetNS: 30, UncertaintyNS: 5}}
	n, unknown := ApplyOffsets(tr)
	if n != 3 || len(unknown) != 0 || len(tr.Meta.Warnings) != 0 {
		t.Errorf("changed %d, unknown %v, warnings %v; want 3, none, none", n, unknown, tr.Meta.Warnings)
	}
	if o := tr.Meta.Offsets[0]; o.OffsetNS != 0 || o.AppliedNS != 30 || o.UncertaintyNS != 5 {
		t.Errorf("offset after applying %+v, want 0 with 30 applied", o)
	}
	if m := tr.Messages[0]; m.RecvTS != 980 {
		t.Errorf("receive %d, want 980 (1010 − 30)", m.RecvTS)
	}
	if m := tr.Messages[2]; m.SendTS != 2970 || m.RecvTS.Known() {
		t.Errorf("b's send %d, receive %v; want 2970 and unknown", m.SendTS, m.RecvTS)
	}
	clamped, worst := ClampReceives(tr)
	if clamped != 1 || worst != 20 || tr.Messages[0].RecvTS != 1000 || tr.Messages[1].RecvTS != 2070 {
		t.Errorf("clamped %d by up to %d; receives %d, %d; want 1, 20, 1000, 2070", clamped, worst, tr.Messages[0].RecvTS, tr.Messages[1].RecvTS)
	}
	tr.Meta.SingleClock = true
	tr.Messages[0].RecvTS = 900
	if n, _ := ClampReceives(tr); n != 0 {
		t.Errorf("a one-timestamp trace had %d receives clamped", n)
	}
}
