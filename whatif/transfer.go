package whatif

import "math"

// Wire overheads per segment: Ethernet (14), IPv4 (20) and TCP with the
// timestamp option (32), or UDP (8), the bytes a link carries besides a
// message's payload.
const (
	tcpOverhead = 14 + 20 + 32
	udpOverhead = 14 + 20 + 8
)

// initialWindow is TCP's initial congestion window in segments (RFC 6928,
// the Linux default).
const initialWindow = 10

// wireBytes returns the bytes a message of payload bytes occupies on the
// wire: its segments of at most mss bytes, each with its headers.
func wireBytes(payload float64, mss int, udp bool) float64 {
	if mss <= 0 {
		mss = defaultMSS
	}
	over := float64(tcpOverhead)
	if udp {
		over = udpOverhead
	}
	segs := max(1, math.Ceil(payload/float64(mss)))
	return payload + segs*over
}

// slowStartRounds returns the round trips a sender with a fresh congestion
// window (initialWindow segments, doubling each round trip, as slow start
// does) waits for acknowledgements while it sends payload bytes, at most
// window bytes in flight (0: no limit known). A message that fits the
// first window needs none.
func slowStartRounds(payload float64, mss int, window int64) int {
	if mss <= 0 {
		mss = defaultMSS
	}
	cwnd := float64(initialWindow * mss)
	limit := math.Inf(1)
	if window > 0 {
		limit = float64(window)
	}
	sent, rounds := 0.0, 0
	for sent+min(cwnd, limit) < payload && rounds < 64 {
		sent += min(cwnd, limit)
		cwnd *= 2
		rounds++
	}
	return rounds
}

// transferUS is the time a message of payload bytes spends being
// transmitted on a link of bandwidth bps and round trip rttUS: its wire
// bytes at that bandwidth plus a round trip per slow-start round (0 for an
// infinite bandwidth, a local link).
func transferUS(payload float64, l *Link, bps, rttUS float64, udp bool) float64 {
	t := 0.0
	if bps > 0 && !math.IsInf(bps, 1) {
		t = wireBytes(payload, l.MSS, udp) * 8 / bps * 1e6
	}
	if !udp {
		t += float64(slowStartRounds(payload, l.MSS, l.Window)) * rttUS
	}
	return t
}
