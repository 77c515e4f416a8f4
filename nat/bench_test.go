package nat

import (
	"runtime"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// cycle replays a packet set forever, shifting its times by the set's span
// on every round so that time keeps going forward.
type cycle struct {
	pkts  []pcapio.Packet
	span  int64
	i     int
	bytes int64 // approximate wire bytes per packet
}

func newCycle(pkts []pcapio.Packet) *cycle {
	c := &cycle{pkts: pkts}
	c.span = pkts[len(pkts)-1].TS() - pkts[0].TS() + int64(DefaultOptions().IdleTimeout)
	var n int64
	for i := range pkts {
		n += int64(pkts[i].PayloadLen) + 40
	}
	c.bytes = n / int64(len(pkts))
	return c
}

func (c *cycle) next() *pcapio.Packet {
	if c.i == len(c.pkts) {
		c.i = 0
		for i := range c.pkts {
			for j := range c.pkts[i].Obs {
				c.pkts[i].Obs[j].TS += c.span
				c.pkts[i].Obs[j].Corrected += c.span
			}
		}
	}
	p := &c.pkts[c.i]
	c.i++
	return p
}

// BenchmarkLearn measures learning throughput on a load balancer with 200
// clients (about 10k packets, replayed): one op is one packet.
func BenchmarkLearn(b *testing.B) {
	s, _ := lbScenario(31, 200, false)
	pkts, _ := s.sorted()
	c := newCycle(pkts)
	l := NewLearner(DefaultOptions())
	b.SetBytes(c.bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l.Observe(c.next())
	}
	b.StopTimer()
	tb := l.Finish()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	b.ReportMetric(float64(tb.Stats.PeakWindowCopies), "peak-window-pkts")
	b.ReportMetric(float64(tb.Stats.PeakConnections), "peak-conns")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc), "heap-B")
	runtime.KeepAlive(l)
	if b.N >= len(pkts) && len(tb.Mappings) != 7 {
		b.Fatalf("%d mappings, want 7", len(tb.Mappings))
	}
}

// BenchmarkRewrite measures the applying pass: one op is one packet.
func BenchmarkRewrite(b *testing.B) {
	s, _ := lbScenario(32, 200, false)
	pkts, _ := s.sorted()
	tb := learn(pkts, DefaultOptions())
	cz := NewCanonicalizer(tb)
	work := make([]pcapio.Packet, len(pkts))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % len(pkts)
		if j == 0 {
			b.StopTimer()
			copy(work, pkts)
			b.StartTimer()
		}
		cz.Rewrite(&work[j])
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	if b.N >= len(pkts) && cz.Stats().Rewritten == 0 {
		b.Fatal("nothing rewritten")
	}
}

// TestObserveNoAllocs guards the hot path: once the Learner has seen a
// workload, observing it again allocates nothing per packet.
func TestObserveNoAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation guard")
	}
	s, _ := lbScenario(33, 50, false)
	pkts, _ := s.sorted()
	c := newCycle(pkts)
	l := NewLearner(DefaultOptions())
	for range 2 * len(pkts) {
		l.Observe(c.next())
	}
	allocs := testing.AllocsPerRun(5, func() {
		for range len(pkts) {
			l.Observe(c.next())
		}
	})
	if per := allocs / float64(len(pkts)); per > 0.01 {
		t.Errorf("%.3f allocations per packet (%.0f per round of %d)", per, allocs, len(pkts))
	}
	tb := NewCanonicalizer(l.Finish())
	p := pkts[len(pkts)/2].Clone()
	if a := testing.AllocsPerRun(100, func() { tb.Rewrite(p) }); a != 0 {
		t.Errorf("Rewrite allocates %.1f times", a)
	}
}

// BenchmarkLearnMemory reports the heap that learning keeps per translated
// connection (links plus the rename table) on a load balancer with 400
// clients; one op is one whole learning run.
func BenchmarkLearnMemory(b *testing.B) {
	s, _ := lbScenario(34, 400, false)
	pkts, _ := s.sorted()
	b.ReportAllocs()
	var perConn, perConnTable float64
	for range b.N {
		var before, mid, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := NewLearner(DefaultOptions())
		for i := range pkts {
			l.Observe(&pkts[i])
		}
		tb := l.Finish()
		runtime.GC()
		runtime.ReadMemStats(&mid)
		runtime.KeepAlive(l)
		l = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		links := float64(tb.Stats.Links)
		perConn = float64(mid.HeapAlloc-before.HeapAlloc) / links
		perConnTable = float64(after.HeapAlloc-before.HeapAlloc) / links
		runtime.KeepAlive(tb)
	}
	b.ReportMetric(perConn, "B/conn-learning")
	b.ReportMetric(perConnTable, "B/conn-table")
}
