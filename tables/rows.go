package tables

import "github.com/wirepath/wirepath/flows"

// SchemaVersion is the version of the tables' schemas (docs/formats.md):
// it changes when a column is removed, renamed or changes meaning; new
// columns may be added within a version.
const SchemaVersion = 1

// The tables' names: each is a directory under the Writer's DIR.
const (
	TableObservations = "observations"
	TableMessages     = "messages"
	TableConnections  = "connections"
	TableRequests     = "requests"
)

// Observation is one sniffer's sighting of one wire packet (a row of
// observations): a packet seen by three sniffers is three rows sharing
// Packet. Partitioned by TS.
type Observation struct {
	// TS is the sighting's time on the reference clock (the sniffer's
	// timestamp minus its estimated offset); SnifferTS the sniffer's own.
	TS        int64 `parquet:"ts,timestamp(nanosecond:utc)"`
	SnifferTS int64 `parquet:"sniffer_ts,timestamp(nanosecond:utc)"`
	// Packet numbers the wire packets from 1 in the order they were read;
	// the sightings of one packet share it.
	Packet  int64  `parquet:"packet,delta"`
	Sniffer string `parquet:"sniffer,dict"`
	// Proto is the IP protocol number (6 TCP, 17 UDP); Src, Dst the IP
	// addresses (as flows sees them: NAT undone); ports 0 where none.
	Proto   int32  `parquet:"proto"`
	Src     string `parquet:"src,dict"`
	Dst     string `parquet:"dst,dict"`
	SrcPort int32  `parquet:"src_port"`
	DstPort int32  `parquet:"dst_port"`
	// WireLen is the frame's length on the wire, PayloadLen the transport
	// payload's.
	WireLen    int32 `parquet:"wire_len"`
	PayloadLen int32 `parquet:"payload_len"`
	// TCPFlags, Seq and Ack are the TCP header's (0 for other protocols).
	TCPFlags int32 `parquet:"tcp_flags"`
	Seq      int64 `parquet:"tcp_seq"`
	Ack      int64 `parquet:"tcp_ack"`
	// TTL is the TTL or hop limit as this sniffer saw it; IPID the IPv4
	// identification.
	TTL  int32 `parquet:"ttl"`
	IPID int64 `parquet:"ip_id"`
}

// Message is one message (a row of messages): a reconciled message of the
// trace (reconcile, analyze) or a write-level message of flows (messages).
// Partitioned by SendTS, or RecvTS when the send was not seen.
type Message struct {
	// SendTS is when the first byte left the sender, RecvTS when the last
	// reached the receiver; null when not seen. For reconciled messages
	// they are on the sender's and receiver's node clocks (the trace's);
	// for flows' messages on the reference sniffer's clock.
	SendTS int64 `parquet:"send_ts,optional,timestamp(nanosecond:utc)"`
	RecvTS int64 `parquet:"recv_ts,optional,timestamp(nanosecond:utc)"`
	// Index is the message's index in the trace (reconciled messages; the
	// requests' message lists refer to it), or its order in flows' output.
	Index int64 `parquet:"index,delta"`
	// Src and Dst are the endpoints ("10.0.0.1:80"); SrcNode and DstNode
	// the nodes' names (null for flows' messages).
	Src     string `parquet:"src,dict"`
	Dst     string `parquet:"dst,dict"`
	SrcNode string `parquet:"src_node,optional,dict"`
	DstNode string `parquet:"dst_node,optional,dict"`
	// Proto is "tcp" or "udp"; App the application protocol whose framing
	// cut the message (flows' messages only; null otherwise).
	Proto string `parquet:"proto,dict"`
	App   string `parquet:"app,optional,dict"`
	// Kind is CALL, RETURN or "-"; CallID pairs a CALL with its RETURN.
	Kind   string `parquet:"kind,dict"`
	CallID string `parquet:"call_id,optional"`
	Bytes  int64  `parquet:"bytes"`
	// Conn numbers the message's connection (joins connections.conn for
	// flows' messages; the trace's own numbering for reconciled ones);
	// null when unknown.
	Conn int64 `parquet:"conn,optional"`
	// Label and ReqID are the message's label ("GET /x", "200") and the
	// request identifier it carries; null when none.
	Label string `parquet:"label,optional,dict"`
	ReqID string `parquet:"req_id,optional"`
	// Incomplete is true when bytes of the message were never captured
	// (flows' messages; false for reconciled ones).
	Incomplete bool `parquet:"incomplete"`
	// MsgID names the flows message the message began with (MsgID): the
	// same in every table of one run, windowed or not; null when no
	// sniffer saw it begin.
	MsgID int64 `parquet:"msg_id,optional"`
	// WindowStart is, in a windowed run, the start of the core of the
	// window whose trace Index refers to; null otherwise.
	WindowStart int64 `parquet:"window_start,optional,timestamp(nanosecond:utc)"`
}

// MsgID packs a flows message's identity into the msg_id column:
// Conn × 2^32 + Index, or 0 (null) for none or a connection number
// beyond 2^31 - 1.
func MsgID(id flows.MessageID) int64 {
	if id.IsZero() || id.Conn >= 1<<31 {
		return 0
	}
	return int64(id.Conn)<<32 | int64(id.Index)
}

// Connection is one TCP connection or UDP flow (a row of connections),
// with its passive figures. Partitioned by Start.
type Connection struct {
	Conn  int64  `parquet:"conn"`
	Proto string `parquet:"proto,dict"`
	// Client and Server are the endpoints; Caller says how the client was
	// told (the SYN, a port rule, ...).
	Client string `parquet:"client,dict"`
	Server string `parquet:"server,dict"`
	Caller string `parquet:"caller,dict"`
	// MidStream is true when the capture began after the connection had.
	MidStream bool  `parquet:"mid_stream"`
	Start     int64 `parquet:"start_ts,timestamp(nanosecond:utc)"`
	End       int64 `parquet:"end_ts,timestamp(nanosecond:utc)"`
	// EndReason says how it ended (fin, rst, idle, capture end, ...).
	EndReason      string `parquet:"end_reason,dict"`
	ClientPackets  int64  `parquet:"client_packets"`
	ServerPackets  int64  `parquet:"server_packets"`
	ClientBytes    int64  `parquet:"client_bytes"`
	ServerBytes    int64  `parquet:"server_bytes"`
	ClientMessages int64  `parquet:"client_messages"`
	ServerMessages int64  `parquet:"server_messages"`
	Gaps           int64  `parquet:"gaps"`
	GapBytes       int64  `parquet:"gap_bytes"`
	RetransBytes   int64  `parquet:"retrans_bytes"`
	// RTTs is the number of call/return round trips measured, RTTP50 their
	// median in nanoseconds (null when none).
	RTTs   int64 `parquet:"rtts"`
	RTTP50 int64 `parquet:"rtt_p50_ns,optional"`
}

// Request is one path instance an engine found (a row of requests):
// one request's tree of messages. Partitioned by Start.
type Request struct {
	Engine string `parquet:"engine,dict"`
	// Pattern is the rank of the instance's pattern in the result, and
	// Signature its signature.
	Pattern   int32  `parquet:"pattern"`
	Signature string `parquet:"signature,dict"`
	// Probability is the instance's probability (1 for engines that do
	// not weigh).
	Probability float64 `parquet:"probability"`
	// Root is the trace index of the root message (messages.index);
	// Messages lists every message of the instance, parents first.
	Root     int64   `parquet:"root"`
	Messages []int64 `parquet:"messages,list"`
	// Start is the root's send time and End the last receive in the
	// instance, on the reference clock (node offsets applied); LatencyUS
	// is End - Start in microseconds, as the result's latency_us.
	Start     int64   `parquet:"start_ts,timestamp(nanosecond:utc)"`
	End       int64   `parquet:"end_ts,timestamp(nanosecond:utc)"`
	LatencyUS float64 `parquet:"latency_us"`
	// Client and Server are the root message's sender and receiver
	// nodes; Label its label (null when none).
	Client string `parquet:"client,dict"`
	Server string `parquet:"server,dict"`
	Label  string `parquet:"label,optional,dict"`
	// RootID and MessageIDs are Root and Messages as messages.msg_id
	// (null and 0 where a message has none): the join that holds in a
	// windowed run, where a request's messages may be owned, and written,
	// by the neighbouring window. WindowStart is as in Message.
	RootID      int64   `parquet:"root_id,optional"`
	MessageIDs  []int64 `parquet:"message_ids,list"`
	WindowStart int64   `parquet:"window_start,optional,timestamp(nanosecond:utc)"`
}
