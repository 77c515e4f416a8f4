package benchgen

import (
	"io"
	"math/rand/v2"
)

// WriteSYNFlood writes a SYN flood: n SYNs to one server port, each from
// its own source address and port, 10 µs apart, none answered. Every SYN
// is a half-open connection flows tracks until its idle timeout or until
// the connection table is full (flows.Config.MaxConns), which is what
// the per-connection memory figures of docs/performance.md measure.
func WriteSYNFlood(w io.Writer, n int, seed uint64) (Stats, error) {
	bw := newPcap(w)
	rng := rand.New(rand.NewPCG(seed, 0x5f1d))
	var frame []byte
	var err error
	ts := int64(1_700_000_000) * 1e9
	dst := [4]byte{10, 9, 0, 1}
	for i := range n {
		src := [4]byte{172, byte(16 + i>>16&0x0f), byte(i >> 8), byte(i)}
		sp := uint16(1024 + rng.IntN(60000))
		if frame, err = writeTCP(bw, frame, ts, uint16(i), src, dst, sp, 80, rng.Uint32(), 0, 0x02, nil); err != nil {
			return Stats{}, err
		}
		ts += 10_000
	}
	return Stats{Packets: n, Conns: n}, bw.Flush()
}
