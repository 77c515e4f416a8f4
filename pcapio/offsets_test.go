package pcapio

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// offsetScenario samples what n sniffers saw of packets between hosts:
// sniffer i's clock runs off[i] ahead, packets cross the sniffers in
// order (sniffer i sees a packet from the low host 50µs·i after it left,
// one from the high host 50µs·(n-1-i) after), plus jitter; each sniffer
// misses a fifth of them.
func offsetScenario(seed uint64, n, packets int) ([]*sampler, []int64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	off := make([]int64, n)
	samplers := make([]*sampler, n)
	for i := range n {
		if i > 0 {
			off[i] = rng.Int64N(2e9) - 1e9
		}
		samplers[i] = newSampler(DefaultMaxSamples)
		samplers[i].res = 1000
	}
	hosts := make([]netip.Addr, 8)
	for i := range hosts {
		hosts[i] = netip.AddrFrom4([4]byte{10, 0, byte(i / 4), byte(i%4 + 1)})
	}
	t := int64(1_700_000_000_000_000_000)
	for range packets {
		t += rng.Int64N(200_000)
		a, b := hosts[rng.IntN(len(hosts))], hosts[rng.IntN(len(hosts))]
		if a == b {
			continue
		}
		key := rng.Uint64()
		for i := range n {
			if rng.IntN(5) == 0 {
				continue
			}
			hop := int64(i)
			if b.Less(a) {
				hop = int64(n - 1 - i)
			}
			ts := t + hop*50_000 + rng.Int64N(20_000) + off[i]
			samplers[i].add(key, ts/1000*1000, a, b)
		}
	}
	return samplers, off
}

// BenchmarkOffsets estimates four sniffers' offsets from their samples
// (20,000 packets each): the pairwise estimates and their chaining.
func BenchmarkOffsets(b *testing.B) {
	samplers, off := offsetScenario(1, 4, 20_000)
	given := make([]*int64, len(samplers))
	b.ReportAllocs()
	var offs []Offset
	for b.Loop() {
		offs = offsetsOf(len(samplers), samplers, 0, given)
	}
	for i, o := range offs {
		if !o.Known || absDiff(o.Offset, off[i]) > o.Uncertainty+1000 {
			b.Fatalf("sniffer %d: %+v, truth %d", i, o, off[i])
		}
	}
}

// The estimates hold the truth within their uncertainty (plus the
// microsecond timestamps' truncation), chained or direct.
func TestOffsetsScenario(t *testing.T) {
	for seed := range uint64(40) {
		n := 2 + int(seed%4)
		samplers, off := offsetScenario(seed, n, 3000)
		offs := offsetsOf(n, samplers, 0, make([]*int64, n))
		for i, o := range offs {
			if !o.Known || absDiff(o.Offset, off[i]) > o.Uncertainty+1000 {
				t.Fatalf("seed %d sniffer %d: %+v, truth %d", seed, i, o, off[i])
			}
		}
	}
}
