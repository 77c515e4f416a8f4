package trace

// Link is what the captures showed of the network between two nodes: the
// passive round trips each capture point measured to either end, the
// connections and calls on it, the receive windows and the packet-pair
// and message rates — the network inputs of a what-if model (Stewart and
// Shen, NSDI 2005: a link's round-trip time γ and bandwidth ω). reconcile
// writes one per pair of nodes that exchanged messages over TCP or UDP; A
// is the side that opened the connections (the caller), B the other, as
// the trace's messages name them. Times are nanoseconds, rates bytes per
// second (wire headers included).
type Link struct {
	A string `json:"a"`
	B string `json:"b"`
	// Proto is "tcp", "udp" or "tcp+udp".
	Proto string `json:"proto"`
	// SameHost says A and B are one host: their round trip is the host's
	// own (loopback), not a network's, and is taken as zero.
	SameHost bool `json:"same_host,omitempty"`
	// Conns counts the connections (TCP) and flows (UDP) between them;
	// Opened those whose opening (SYN) a capture point saw; Calls the
	// CALL messages from A to B in the trace.
	Conns  int64 `json:"conns"`
	Opened int64 `json:"opened"`
	Calls  int64 `json:"calls"`
	// RTT is the end-to-end round trip between A and B.
	RTT LinkRTT `json:"rtt"`
	// Points are the round trips each capture point measured on the
	// link's own connections, best point first.
	Points []LinkPoint `json:"points,omitempty"`
	// WindowA and WindowB are the largest receive windows A and B
	// advertised on the link, in bytes (-1: unknown); MSS the smallest
	// maximum segment size either side announced (0: unknown).
	WindowA int64 `json:"window_a"`
	WindowB int64 `json:"window_b"`
	MSS     int   `json:"mss,omitempty"`
	// PairsAB and PairsBA are packet-pair rates of data from A to B and
	// from B to A, at the point nearest the receiver: the dispersion two
	// back-to-back segments kept after the narrowest part of the path.
	PairsAB LinkRate `json:"pairs_ab"`
	PairsBA LinkRate `json:"pairs_ba"`
	// ThroughputAB and ThroughputBA are MSHN's message throughputs: the
	// bytes after a multi-segment message's first segment over the time
	// to its last, all such messages pooled.
	ThroughputAB LinkRate `json:"throughput_ab"`
	ThroughputBA LinkRate `json:"throughput_ba"`
}

// LinkRTT is a link's end-to-end round trip: the smallest half toward A
// plus the smallest half toward B measured at one capture point (Point),
// from the link's own connections (Method "link") or, where they give
// only one half or none, from the halves toward A's and B's hosts that
// the point measured on any connection (Method "hosts": the path from a
// point to a host is the same for every connection). P50NS and P90NS add
// the halves' medians and 90th percentiles: the spread, which delayed
// acknowledgements and answers that carry the acknowledgement stretch.
// Known is false when no point measured both halves; Reason then says
// what was missing.
type LinkRTT struct {
	Known   bool   `json:"known"`
	MinNS   int64  `json:"min_ns"`
	P50NS   int64  `json:"p50_ns"`
	P90NS   int64  `json:"p90_ns"`
	Samples int64  `json:"samples"`
	Point   string `json:"point,omitempty"`
	Method  string `json:"method,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// LinkPoint is what one capture point measured of a link's connections:
// the round trips from the point to A and back (ToA) and to B and back
// (ToB). Their sum is the end-to-end round trip; Position says which end
// the point is near ("A", "B", or "between" when neither half is under a
// fifth of the sum; empty when a half is missing).
type LinkPoint struct {
	Point    string   `json:"point"`
	Position string   `json:"position,omitempty"`
	ToA      HalfDist `json:"to_a"`
	ToB      HalfDist `json:"to_b"`
}

// HalfDist summarises round trips from a capture point to one end of a
// link and back: N samples, of which Handshake came from handshakes, Acks
// from data segments and their acknowledgements, Echoes from TCP
// timestamp echoes; the smallest, median and 90th percentile.
type HalfDist struct {
	N         int64 `json:"n"`
	Handshake int64 `json:"handshake,omitempty"`
	Acks      int64 `json:"acks,omitempty"`
	Echoes    int64 `json:"echoes,omitempty"`
	MinNS     int64 `json:"min_ns"`
	P50NS     int64 `json:"p50_ns"`
	P90NS     int64 `json:"p90_ns"`
}

// LinkRate summarises rate samples in bytes per second: N samples, their
// median and largest.
type LinkRate struct {
	N   int64   `json:"n"`
	P50 float64 `json:"p50_bps,omitempty"`
	Max float64 `json:"max_bps,omitempty"`
}

// FindLink returns the link between nodes a and b, either way round
// (swapped reports that the link's A is b), and false if there is none.
func FindLink(links []Link, a, b string) (l *Link, swapped, ok bool) {
	for i := range links {
		switch {
		case links[i].A == a && links[i].B == b:
			return &links[i], false, true
		case links[i].A == b && links[i].B == a:
			return &links[i], true, true
		}
	}
	return nil, false, false
}
