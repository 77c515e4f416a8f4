package flows

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// Stats is the accounting of the flows stage. What comes in equals what
// goes out plus what was dropped, by reason, in packets and in payload
// bytes; Check verifies it. Counters only grow.
type Stats struct {
	// Packets is every packet handed to the stage; each is exactly one of
	// TCPPackets, UDPPackets, Fragments, OtherProto and NotIP.
	Packets    int64 `json:"packets"`
	TCPPackets int64 `json:"tcp_packets"`
	UDPPackets int64 `json:"udp_packets"`
	Fragments  int64 `json:"fragments"`
	// OtherProto counts IP packets of other protocols (ICMP, ...), and
	// TCP/UDP packets too short to hold their header; NotIP the frames
	// pcapio could not decode as IP.
	OtherProto int64 `json:"other_proto"`
	NotIP      int64 `json:"not_ip"`

	// Fragments end up in a reassembled datagram (FragUsed), dropped
	// (FragDropped*), or still waiting (FragPending, 0 after Flush).
	FragUsed          int64 `json:"frag_used"`
	FragDroppedTime   int64 `json:"frag_dropped_timeout"`
	FragDroppedLimit  int64 `json:"frag_dropped_limit"`
	FragDroppedBad    int64 `json:"frag_dropped_invalid"`
	FragDroppedEOF    int64 `json:"frag_dropped_eof"`
	FragPending       int64 `json:"frag_pending"`
	FragConflicts     int64 `json:"frag_conflicts"`
	FragDatagrams     int64 `json:"frag_datagrams"`
	FragTCPDatagrams  int64 `json:"frag_tcp_datagrams"`
	FragUDPDatagrams  int64 `json:"frag_udp_datagrams"`
	FragOtherDatagram int64 `json:"frag_other_datagrams"`

	// TCPBytes is the TCP payload that came in (wire lengths, including
	// bytes a snap length cut off). It is StreamBytes (first copies, in
	// messages) + RetransBytes + CopyBytes + Dropped*Bytes + BufferedBytes.
	TCPBytes     int64 `json:"tcp_bytes"`
	StreamBytes  int64 `json:"stream_bytes"`
	RetransBytes int64 `json:"retrans_bytes"`
	// CopyBytes are bytes already in the stream seen again only by capture
	// points that had not seen them: another sniffer's copy (the other side
	// of a NAT), merged into the message's sightings, not retransmissions.
	CopyBytes          int64 `json:"copy_bytes"`
	DroppedBeforeStart int64 `json:"dropped_before_start_bytes"`
	DroppedAfterClose  int64 `json:"dropped_after_close_bytes"`
	DroppedOutOfWindow int64 `json:"dropped_out_of_window_bytes"`
	DroppedLate        int64 `json:"dropped_late_bytes"`
	BufferedBytes      int64 `json:"buffered_bytes"`
	RetransSegments    int64 `json:"retrans_segments"`
	CopySegments       int64 `json:"copy_segments"`
	OverlapSegments    int64 `json:"overlap_segments"`
	ConflictSegments   int64 `json:"conflict_segments"`
	OutOfOrderSegments int64 `json:"out_of_order_segments"`
	TruncatedBytes     int64 `json:"truncated_bytes"`
	GapsAcked          int64 `json:"gaps_acked"`
	GapsTimeout        int64 `json:"gaps_timeout"`
	GapsLimit          int64 `json:"gaps_limit"`
	GapsEnd            int64 `json:"gaps_end"`
	GapBytes           int64 `json:"gap_bytes"`
	BufferLimitHits    int64 `json:"buffer_limit_hits"`
	PeakBufferedBytes  int64 `json:"peak_buffered_bytes"`
	CoverageMerges     int64 `json:"coverage_merges"`
	LateSightings      int64 `json:"late_sightings"`
	// RepeatObservations counts observations dropped because the packet
	// already had one from the same capture point: pcapio groups a copy
	// with identical bytes seen again within its window (a retransmission)
	// into the first, and only the first sighting counts.
	RepeatObservations int64 `json:"repeat_observations"`

	// UDPBytes is the UDP payload that came in: UDPMessageBytes +
	// UDPCopyBytes (another capture point's copy of a datagram already
	// seen, merged into its sightings).
	UDPBytes        int64 `json:"udp_bytes"`
	UDPMessageBytes int64 `json:"udp_message_bytes"`
	UDPCopyBytes    int64 `json:"udp_copy_bytes"`
	UDPCopies       int64 `json:"udp_copies"`
	// UDPNotExchanges counts UDP flows of no decoded protocol that
	// stopped alternating request and answer (the callee sent twice in a
	// row), so that their datagrams got no kinds; UDPPairsUndone the
	// datagrams, waiting then, whose kinds that took back.
	UDPNotExchanges int64 `json:"udp_not_exchanges"`
	UDPPairsUndone  int64 `json:"udp_pairs_undone"`

	// StreamBytes are cut into messages by flows itself (at direction
	// changes, pauses and HTTP/1.x and DNS boundaries), handed to a
	// protocol decoder (DecodedBytes, including bytes a snap length cut
	// off; DecodedGapBytes are the gaps it was told of), or held while a
	// connection's protocol is being detected (HeldBytes, 0 at the end).
	DecodedBytes    int64 `json:"decoded_bytes"`
	DecodedGapBytes int64 `json:"decoded_gap_bytes"`
	HeldBytes       int64 `json:"held_bytes"`

	// Messages is every message emitted: TCPMessages + UDPMessages.
	// TCPMessageBytes sums the captured bytes (Bytes - GapBytes) of the
	// TCP messages flows cut itself, and equals StreamBytes -
	// DecodedBytes once everything is emitted; OpenMessages counts
	// messages not yet emitted. DecodedMessages were made from a protocol
	// decoder's Units (their bytes are in Protocols).
	Messages        int64 `json:"messages"`
	TCPMessages     int64 `json:"tcp_messages"`
	UDPMessages     int64 `json:"udp_messages"`
	TCPMessageBytes int64 `json:"tcp_message_bytes"`
	OpenMessages    int64 `json:"open_messages"`
	OpenBytes       int64 `json:"open_bytes"`
	Incomplete      int64 `json:"incomplete_messages"`
	Calls           int64 `json:"calls"`
	Returns         int64 `json:"returns"`
	UnpairedReturns int64 `json:"unpaired_returns"`
	HTTPMessages    int64 `json:"http_messages"`
	DNSMessages     int64 `json:"dns_messages"`
	FramingLost     int64 `json:"framing_lost"`
	// PairingResyncs counts the losses of HTTP framing after which call
	// pairing started afresh; UnansweredAtLoss the requests then waiting,
	// whose responses the loss may have hidden, left without a RETURN.
	PairingResyncs   int64 `json:"pairing_resyncs"`
	UnansweredAtLoss int64 `json:"unanswered_at_loss"`
	DecodedMessages  int64 `json:"decoded_messages"`
	// ControlUnits are protocol machinery a decoder reported (TLS
	// handshakes, HTTP/2 SETTINGS and PING frames, PostgreSQL start-up),
	// counted, never made messages; ControlBytes their bytes.
	ControlUnits int64 `json:"control_units"`
	ControlBytes int64 `json:"control_bytes"`
	// DetectRejected counts connections whose first bytes looked like a
	// decoded protocol that its decoder then rejected: the bytes it had
	// were not framed, the rest was cut at direction changes.
	DetectRejected int64 `json:"detect_rejected"`
	// The packet-time log of decoded connections (see Config): records
	// dropped by its bound while a Unit might still need them, sightings
	// of more capture points than a record keeps, Units whose first byte
	// was older than the log (timed from the oldest record left).
	LogRecordsDropped int64 `json:"log_records_dropped"`
	LogObsDropped     int64 `json:"log_obs_dropped"`
	UnitsClamped      int64 `json:"units_clamped"`
	// PairingDropped counts requests forgotten unanswered (or responses
	// unclaimed) because a connection had too many waiting.
	PairingDropped int64 `json:"pairing_dropped"`
	// Labelled counts messages with a label; EvidenceMessages those with
	// evidence, which holds EvidenceIDs propagated identifiers and
	// EvidenceTokens content tokens in all.
	Labelled         int64 `json:"labelled_messages"`
	EvidenceMessages int64 `json:"evidence_messages"`
	EvidenceIDs      int64 `json:"evidence_ids"`
	EvidenceTokens   int64 `json:"evidence_tokens"`

	// Connections: started, ended by reason, and the table's peak size.
	Conns        int64 `json:"conns"`
	TCPConns     int64 `json:"tcp_conns"`
	UDPFlows     int64 `json:"udp_flows"`
	ConnsFIN     int64 `json:"conns_fin"`
	ConnsRST     int64 `json:"conns_rst"`
	ConnsIdle    int64 `json:"conns_idle"`
	ConnsEvicted int64 `json:"conns_evicted"`
	ConnsEOF     int64 `json:"conns_eof"`
	ConnsReused  int64 `json:"conns_reused"`
	ConnsOpen    int64 `json:"conns_open"`
	PeakConns    int64 `json:"peak_conns"`
	MidStream    int64 `json:"conns_mid_stream"`
	// MidStreamDecoded counts the connections seen from their middle
	// that were taken up by a protocol decoder at a confirmed message
	// boundary, MidStreamHTTP those where an HTTP/1.x start line was
	// found (framed by flows), MidStreamUndecoded the others (opaque or
	// unknown traffic, cut at direction changes), and MidSkippedBytes
	// the bytes before the decoders' boundaries, in no message.
	MidStreamDecoded   int64 `json:"conns_mid_stream_decoded"`
	MidStreamHTTP      int64 `json:"conns_mid_stream_http"`
	MidStreamUndecoded int64 `json:"conns_mid_stream_undecoded"`
	MidSkippedBytes    int64 `json:"mid_stream_skipped_bytes"`
	CallerUnknown      int64 `json:"conns_caller_unknown"`
	SYNRetrans         int64 `json:"syn_retrans"`

	// Protocols is the accounting of each application protocol that
	// framed a connection, by name ("h2", "tls", "http", "-", ...).
	Protocols map[string]*ProtoStats `json:"protocols"`
}

// Check verifies the accounting identities: packets in = packets by class,
// fragments in = used + dropped + pending, TCP and UDP bytes in = bytes out
// + bytes dropped by reason, messages = TCP + UDP messages, stream bytes =
// bytes of emitted and open messages.
func (s *Stats) Check() error {
	var errs []error
	eq := func(name string, a, b int64) {
		if a != b {
			errs = append(errs, fmt.Errorf("%s: %d != %d", name, a, b))
		}
	}
	eq("packets = tcp + udp + fragments + other + not_ip", s.Packets, s.TCPPackets+s.UDPPackets+s.Fragments+s.OtherProto+s.NotIP)
	eq("fragments = used + dropped + pending", s.Fragments, s.FragUsed+s.FragDroppedTime+s.FragDroppedLimit+s.FragDroppedBad+s.FragDroppedEOF+s.FragPending)
	eq("frag datagrams = tcp + udp + other", s.FragDatagrams, s.FragTCPDatagrams+s.FragUDPDatagrams+s.FragOtherDatagram)
	eq("tcp bytes = stream + retrans + copies + dropped + buffered", s.TCPBytes,
		s.StreamBytes+s.RetransBytes+s.CopyBytes+s.DroppedBeforeStart+s.DroppedAfterClose+s.DroppedOutOfWindow+s.DroppedLate+s.BufferedBytes)
	eq("stream bytes = emitted + open message bytes + decoded + held", s.StreamBytes, s.TCPMessageBytes+s.OpenBytes+s.DecodedBytes+s.HeldBytes)
	eq("udp bytes = message + copy bytes", s.UDPBytes, s.UDPMessageBytes+s.UDPCopyBytes)
	eq("messages = tcp + udp", s.Messages, s.TCPMessages+s.UDPMessages)
	eq("conns = tcp + udp", s.Conns, s.TCPConns+s.UDPFlows)
	eq("conns = ended + open", s.Conns, s.ConnsFIN+s.ConnsRST+s.ConnsIdle+s.ConnsEvicted+s.ConnsEOF+s.ConnsReused+s.ConnsOpen)
	var decoded, truncated, gaps, msgs int64
	for a := App(0); a < numApps; a++ {
		p := s.Protocols[a.String()]
		if p == nil {
			continue
		}
		if a.decoded() {
			decoded += p.Bytes
			truncated += p.TruncBytes
			gaps += p.GapBytes
			msgs += p.Messages
			errs = append(errs, p.check(a.String(), s.OpenMessages)...)
		}
	}
	eq("decoded bytes = bytes + truncated bytes handed to the decoders", s.DecodedBytes, decoded+truncated)
	eq("decoded gap bytes = gaps told to the decoders", s.DecodedGapBytes, gaps)
	eq("decoded messages = messages of the decoded protocols", s.DecodedMessages, msgs)
	return errors.Join(errs...)
}

// Counts returns every counter as a trace.Count of stage trace.StageFlows,
// named by its JSON name, in declaration order, followed by the
// protocols' non-zero counters as stage "protocols" (see ProtoStats).
func (s *Stats) Counts() []trace.Count {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	out := make([]trace.Count, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Type.Kind() != reflect.Int64 {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, trace.Count{Stage: trace.StageFlows, Name: name, Value: v.Field(i).Int()})
	}
	return append(out, protoCounts(s.Protocols)...)
}
