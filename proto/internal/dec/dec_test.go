package dec

import (
	"bytes"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
)

func TestPendingWrapsAndGrows(t *testing.T) {
	var p Pending[int]
	p.SetMax(20)
	next, want := 0, 0
	for round := range 50 {
		for range round % 7 {
			if p.Push(uint64(next+1), next) {
				next++
			}
		}
		for range round % 5 {
			k, v, ok := p.Pop()
			if !ok {
				break
			}
			if v != want || k != uint64(want+1) {
				t.Fatalf("popped %d (key %d), want %d", v, k, want)
			}
			want++
		}
	}
	if p.Len() != next-want || p.Len() > 20 {
		t.Fatalf("len %d, pushed %d popped %d", p.Len(), next, want)
	}
	for i := 0; p.Len() < 20; i++ {
		p.Push(0, 0)
	}
	if p.Push(0, 0) {
		t.Error("pushed beyond the bound")
	}
	p.RemoveAt(1)
	if k, v := p.At(0); *v != want || k != uint64(want+1) {
		t.Errorf("RemoveAt(1) moved the front: %d", *v)
	}
}

func TestSerialSuspendsAndResumes(t *testing.T) {
	var st Stats
	var s Serial[struct{}]
	s.Init(&st, 0)
	if k := s.Request(struct{}{}, true); k != 1 {
		t.Fatalf("first key %d", k)
	}
	s.Lose()
	if st.Unanswered != 1 {
		t.Errorf("unanswered %d", st.Unanswered)
	}
	// The server is in a message: no resumption yet.
	if k := s.Request(struct{}{}, false); k != 0 {
		t.Errorf("resumed while the server was busy: %d", k)
	}
	if k, _, _ := s.Response(); k != 0 {
		t.Errorf("suspended response key %d", k)
	}
	// Quiet now: resumes with the next ordinal.
	if k := s.Request(struct{}{}, true); k != 2 {
		t.Errorf("resumed key %d, want 2", k)
	}
	// Pipelining seen: a later loss is not resumed from.
	s.Request(struct{}{}, true)
	s.Lose()
	s.Response()
	if k := s.Request(struct{}{}, true); k != 0 || !s.Suspended() {
		t.Errorf("a pipelining connection resumed: key %d", k)
	}
}

// TestResyncAcrossFeeds finds a start split between two feeds and holds
// back only undecided bytes.
func TestResyncAcrossFeeds(t *testing.T) {
	test := func(b []byte) Verdict {
		const m = "MAGIC"
		n := min(len(b), len(m))
		switch {
		case string(b[:n]) != m[:n]:
			return No
		case n < len(m):
			return More
		}
		return Yes
	}
	var r Resync
	skipped, _, _, found := r.Find([]byte("xxxxMA"), 8, test)
	if found || skipped != 4 || r.Pending() != 2 {
		t.Fatalf("skipped %d found %v pending %d", skipped, found, r.Pending())
	}
	skipped, replay, rest, found := r.Find([]byte("GICtail"), 8, test)
	if !found || skipped != 0 || string(replay) != "MA" || string(rest) != "GICtail" {
		t.Fatalf("skipped %d replay %q rest %q", skipped, replay, rest)
	}
	skipped, _, rest, found = r.Find(bytes.Repeat([]byte("M"), 3), 8, test)
	if found || skipped != 2 || r.Pending() != 1 || rest != nil {
		t.Fatalf("skipped %d pending %d", skipped, r.Pending())
	}
}

func TestBaseAlign(t *testing.T) {
	var b Base
	b.InitBase(false, evidence.Config{})
	if gap, rest := b.Align(proto.FromClient, 100, []byte("abcd")); gap != 0 || string(rest) != "abcd" {
		t.Fatalf("first feed: gap %d rest %q", gap, rest)
	}
	if gap, rest := b.Align(proto.FromClient, 102, []byte("cdef")); gap != 0 || string(rest) != "ef" {
		t.Fatalf("overlap: gap %d rest %q", gap, rest)
	}
	if gap, rest := b.Align(proto.FromClient, 110, []byte("z")); gap != 4 || string(rest) != "z" {
		t.Fatalf("jump: gap %d rest %q", gap, rest)
	}
	if g := b.AlignGap(proto.FromClient, 109, 5); g != 3 {
		t.Fatalf("gap over seen bytes: %d", g)
	}
	ds := b.Stats.Dir[proto.FromClient]
	if ds.Bytes != 7 || ds.Overlap != 2 || ds.GapBytes != 7 {
		t.Errorf("stats %+v", ds)
	}
}

// TestSerialSuspendWaitsForAResponse: a connection seen from its middle
// resumes pairing only after a response, and not once it pipelined.
func TestSerialSuspendWaitsForAResponse(t *testing.T) {
	tests := []struct {
		name string
		ops  string // r: request (server idle), s: response
		keys []uint64
	}{
		{"request first: unpaired, then paired", "rsrsrs", []uint64{0, 0, 1, 1, 2, 2}},
		{"a response owed first", "srsrs", []uint64{0, 1, 1, 2, 2}},
		{"pipelined across the start", "rrssrs", []uint64{0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st Stats
			var s Serial[struct{}]
			s.Init(&st, 0)
			s.Suspend()
			for i, op := range tt.ops {
				var k uint64
				if op == 'r' {
					k = s.Request(struct{}{}, true)
				} else {
					k, _, _ = s.Response()
				}
				if k != tt.keys[i] {
					t.Errorf("op %d (%c): key %d, want %d", i, op, k, tt.keys[i])
				}
			}
		})
	}
}
