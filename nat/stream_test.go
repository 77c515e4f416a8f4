package nat

import (
	"net/netip"
	"testing"
	"time"

	"github.com/wirepath/wirepath/pcapio"
)

// names is what a packet is called after renaming.
type names struct {
	src, dst netip.AddrPort
}

func namesOf(p *pcapio.Packet) names {
	return names{netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort)}
}

// streamNames runs pkts through a Streamer and returns each packet's
// names as handed on (in order) and the Streamer.
func streamNames(pkts []pcapio.Packet, o StreamOptions) ([]names, *Streamer) {
	s := NewStreamer(o)
	var got []names
	for i := range pkts {
		s.Push(&pkts[i])
		for q := s.Pop(false); q != nil; q = s.Pop(false) {
			got = append(got, namesOf(q))
		}
	}
	for q := s.Pop(true); q != nil; q = s.Pop(true) {
		got = append(got, namesOf(q))
	}
	return got, s
}

// TestStreamerAgainstTwoPasses: learning while renaming, with packets held
// back for the learning window, renames every packet of the real NAT
// captures as learning first and renaming in a second pass does, and ends
// with the same table. With a shorter delay, packets leave before their
// translation is learned: each one is counted (Late), as is each renamed
// by a provisional table otherwise than by the final one (Provisional).
func TestStreamerAgainstTwoPasses(t *testing.T) {
	for _, dir := range []string{".", "brnf"} {
		pkts := readCaptures(t, dir)
		l := NewLearner(DefaultOptions())
		for i := range pkts {
			l.Observe(&pkts[i])
		}
		tab := l.Finish()
		c := NewCanonicalizer(tab)
		want := make([]names, len(pkts))
		captured := make([]names, len(pkts))
		for i := range pkts {
			q := pkts[i].Clone()
			captured[i] = namesOf(q)
			c.Rewrite(q)
			want[i] = namesOf(q)
		}
		for _, delay := range []time.Duration{0, 50 * time.Millisecond, time.Millisecond, 1} {
			got, s := streamNames(pkts, StreamOptions{Delay: delay})
			if len(got) != len(pkts) {
				t.Fatalf("%s, delay %v: %d packets out of %d", dir, delay, len(got), len(pkts))
			}
			var late, prov int64
			for i := range got {
				switch {
				case got[i] == want[i]:
				case got[i] == captured[i]:
					late++
				default:
					prov++
				}
			}
			final := s.Finish()
			if len(final.Mappings) != len(tab.Mappings) || final.Stats.Matches != tab.Stats.Matches {
				t.Errorf("%s, delay %v: %d mappings, two passes %d", dir, delay, len(final.Mappings), len(tab.Mappings))
			}
			st := s.Stats()
			if st.Late != late || st.Provisional != prov {
				t.Errorf("%s, delay %v: counted %d late and %d provisional, found %d and %d", dir, delay, st.Late, st.Provisional, late, prov)
			}
			if delay == 0 && late+prov != 0 {
				t.Errorf("%s: with the learning window as the delay, %d packets renamed otherwise than in two passes", dir, late+prov)
			}
			if delay == 1 && late == 0 {
				t.Errorf("%s: no packet left before its translation was learned with a delay of 1 ns", dir)
			}
			t.Logf("%s, delay %v: %d late, %d provisional of %d", dir, delay, late, prov, len(pkts))
		}
	}
}

// TestStreamerEarly: past MaxDelayBytes the oldest packets leave early,
// and are counted.
func TestStreamerEarly(t *testing.T) {
	pkts := readCaptures(t, ".")
	got, s := streamNames(pkts, StreamOptions{MaxDelayBytes: 1000})
	if len(got) != len(pkts) {
		t.Fatalf("%d packets out of %d", len(got), len(pkts))
	}
	if st := s.Stats(); st.Early == 0 || st.Packets != int64(len(pkts)) {
		t.Errorf("stats %+v", st)
	}
}

// TestStreamerNoAllocs: holding packets back and handing them on
// allocates nothing per packet once the queue and its packets have grown.
func TestStreamerNoAllocs(t *testing.T) {
	pkts := readCaptures(t, ".")
	s := NewStreamer(StreamOptions{MaxDelayBytes: 1}) // every packet leaves at once
	for i := range pkts {
		s.Push(&pkts[i])
		for q := s.Pop(false); q != nil; q = s.Pop(false) {
		}
	}
	p := &pkts[len(pkts)-1]
	allocs := testing.AllocsPerRun(200, func() {
		s.Push(p)
		if s.Pop(false) == nil {
			t.Fatal("the packet was held back")
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per packet", allocs)
	}
}

// TestStreamerBufferClasses: a held copy's buffer fits its frame's size
// class, however large the frames the recycled copies held before (a
// reused buffer would otherwise keep the largest frame's size), and the
// memory counted against MaxDelayBytes is the buffers' capacity, so it
// is what the held packets cost. Kept packets (Keep) come back through
// Recycle into their class.
func TestStreamerBufferClasses(t *testing.T) {
	pkts := readCaptures(t, ".")
	var small *pcapio.Packet
	for i := range pkts {
		if pkts[i].CopySize() <= 128 {
			small = &pkts[i]
			break
		}
	}
	if small == nil {
		t.Fatal("the captures lack a small frame")
	}
	large := small.Clone() // a full-sized frame
	large.Frame = append(large.Frame, make([]byte, 1400)...)
	large.Payload = nil
	s := NewStreamer(StreamOptions{Delay: time.Hour}) // nothing leaves before the end
	for range 100 {
		s.Push(large)
	}
	for q := s.Pop(true); q != nil; q = s.Pop(true) {
		s.Keep()
		s.Recycle(q)
	}
	s = &Streamer{l: s.l, delay: s.delay, maxBytes: s.maxBytes, free: s.free, c: s.c, renamed: map[renameKey]int64{}}
	for range 100 {
		s.Push(small)
	}
	if s.qBytes > 100*(128+heldOverhead) {
		t.Errorf("100 small packets held count %d bytes, want at most %d", s.qBytes, 100*(128+heldOverhead))
	}
	if n := len(s.free[sizeClass(large.CopySize())]); n != 100 {
		t.Errorf("%d large copies left for reuse, want the 100", n)
	}
	for q := s.Pop(true); q != nil; q = s.Pop(true) {
		if q.BufferCap() > 128 {
			t.Fatalf("a %d-byte frame held in a buffer of %d", q.CopySize(), q.BufferCap())
		}
	}
}
