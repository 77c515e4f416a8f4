package flows

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// synFlood returns n SYNs, each from its own source endpoint to one
// server port, 10 µs apart: n half-open connections.
func synFlood(n int) []*pcapio.Packet {
	pkts := make([]*pcapio.Packet, n)
	dst := netip.MustParseAddr("10.9.0.1")
	for i := range pkts {
		src := netip.AddrFrom4([4]byte{172, byte(16 + i>>16&0x0f), byte(i >> 8), byte(i)})
		ts := t0 + int64(i)*10_000
		pkts[i] = &pcapio.Packet{Status: pcapio.StatusOK, IPVersion: 4, Src: src, Dst: dst, Proto: pcapio.ProtoTCP,
			SrcPort: uint16(1024 + i%60000), DstPort: 80, Seq: uint32(i) * 2654435761, TCPFlags: fS,
			Obs: []pcapio.Observation{{TTL: 64, TS: ts, Corrected: ts}}}
	}
	return pkts
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSYNFloodMemory bounds what a half-open connection costs flows: a
// SYN flood keeps one per SYN until the idle timeout or MaxConns
// (262,144 by default). docs/performance.md has the figures.
func TestSYNFloodMemory(t *testing.T) {
	const n = 50_000
	pkts := synFlood(n)
	before := heapInUse()
	a, err := NewAssembler(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var m Message
	for _, p := range pkts {
		a.Add(p)
		for a.Next(&m) {
		}
	}
	per := float64(heapInUse()-before) / n
	runtime.KeepAlive(pkts)
	t.Logf("%.0f bytes per half-open connection", per)
	if got := a.Stats().ConnsOpen; got != n {
		t.Fatalf("%d connections open, want %d", got, n)
	}
	// 3,215 before the figures were made on first use and the scratch
	// shared (1,935 then); the passive round-trip sampler's point, which
	// the SYN's time and options start, adds about 256.
	const bound = 2300
	if per > bound {
		t.Errorf("%.0f bytes per half-open connection, want at most %d", per, bound)
	}
}
