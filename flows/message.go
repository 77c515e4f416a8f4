package flows

import (
	"fmt"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/trace"
)

// Point is a capture point: one sniffer, on one of its interfaces.
type Point struct {
	Sniffer   pcapio.SnifferID
	Interface uint16
}

// String formats the point as "sniffer/interface", e.g. "2/0".
func (p Point) String() string { return fmt.Sprintf("%d/%d", p.Sniffer, p.Interface) }

// Sighting is what one capture point saw of one message. Times are
// corrected nanoseconds (pcapio.Observation.Corrected: the reference
// sniffer's clock).
type Sighting struct {
	// Point is the capture point.
	Point Point
	// TTL is the IPv4 TTL or IPv6 hop limit of the first of the message's
	// packets seen here. The point with the highest TTL is nearest the
	// sender, the one with the lowest nearest the receiver.
	TTL uint8
	// First is when the first of the message's bytes was seen here.
	First int64
	// Last is when the last of the message's bytes not yet seen here was
	// seen: by then every byte this point saw of the message had passed it.
	// Copies of bytes this point had already seen (retransmissions) do not
	// move it.
	Last int64
	// FirstBytes is the number of bytes of the message in the first segment
	// seen here (MSHN's "first read"), for throughput.
	FirstBytes int64
	// Bytes counts the message's bytes seen here; less than the message's
	// size when this point missed segments.
	Bytes int64
	// Segments counts the segments that brought bytes new to this point.
	Segments int32
	// Repeats counts copies of bytes this point had already seen:
	// retransmissions seen here.
	Repeats int32
}

// App is the application protocol whose framing cut a message.
type App uint8

// The application protocols flows frames.
const (
	AppNone     App = iota // no framing known: messages end at direction changes and pauses
	AppHTTP                // HTTP/1.x: request and response framing, pipelining
	AppDNS                 // DNS over UDP, or over TCP with its 2-byte length prefix
	AppH2                  // HTTP/2 (and gRPC): one message per stream and direction
	AppTLS                 // TLS records that were not decrypted: messages end at direction changes
	AppPostgres            // PostgreSQL: a request is the client's messages up to Sync or Query
	AppMySQL               // MySQL and MariaDB: one command and its response
	AppRedis               // Redis RESP: one command, one reply, pipelined
	AppMemcache            // memcached, text or binary
	AppKafka               // Kafka: requests and responses paired by correlation id

	numApps // the number of App values
)

var appNames = [numApps]string{"-", "http", "dns", "h2", "tls", "pgsql", "mysql", "redis", "memcache", "kafka"}

// String returns the protocol's name: "-", "http", "dns", "h2", "tls",
// "pgsql", "mysql", "redis", "memcache" or "kafka".
func (a App) String() string {
	if a < numApps {
		return appNames[a]
	}
	return "-"
}

// Apps returns every App, in order.
func Apps() []App {
	out := make([]App, numApps)
	for i := range out {
		out[i] = App(i)
	}
	return out
}

// appAliases are the other names ParseApp accepts.
var appAliases = map[string]App{
	"none": AppNone, "http1": AppHTTP, "http/1.1": AppHTTP, "http2": AppH2, "grpc": AppH2,
	"postgres": AppPostgres, "postgresql": AppPostgres, "pg": AppPostgres, "mariadb": AppMySQL,
	"resp": AppRedis, "memcached": AppMemcache,
}

// ParseApp returns the protocol of a name (String's, or an alias such as
// "grpc", "postgres", "resp", "memcached", "none").
func ParseApp(name string) (App, bool) {
	for i, n := range appNames {
		if n == name && n != "-" {
			return App(i), true
		}
	}
	a, ok := appAliases[name]
	return a, ok
}

// EndReason says why a message ended.
type EndReason uint8

// The reasons a message ends.
const (
	EndUnknown   EndReason = iota
	EndDirection           // the other side sent data (WAP5's direction change)
	EndPause               // the sender paused longer than Config.SplitPause
	EndProtocol            // the application protocol's framing says the message is complete
	EndDatagram            // a UDP datagram is one message
	EndFIN                 // the connection was closed with FIN
	EndRST                 // the connection was reset
	EndIdle                // the connection was idle longer than its timeout
	EndEvicted             // the connection table was full and this one was the least recently active
	EndEOF                 // the input ended
	EndReused              // a new connection reused the 4-tuple
)

var endNames = [...]string{"-", "dir", "pause", "proto", "datagram", "fin", "rst", "idle", "evicted", "eof", "reused"}

// String returns the short name used in the messages format.
func (e EndReason) String() string {
	if int(e) < len(endNames) {
		return endNames[e]
	}
	return "-"
}

// CallID names a call: the connection (flow) number and the call's
// ordinal within it. The zero CallID means "no call".
type CallID struct {
	Conn  uint64
	Index uint32
}

// IsZero reports whether id names no call.
func (id CallID) IsZero() bool { return id.Conn == 0 }

// String formats id as "c<conn>.<index>", or "-" when it is zero.
func (id CallID) String() string {
	if id.IsZero() {
		return "-"
	}
	return fmt.Sprintf("c%d.%d", id.Conn, id.Index)
}

// AppendText appends the String form of id to b without allocating.
func (id CallID) AppendText(b []byte) []byte {
	if id.IsZero() {
		return append(b, '-')
	}
	b = append(b, 'c')
	b = appendUint(b, id.Conn)
	b = append(b, '.')
	return appendUint(b, uint64(id.Index))
}

// MessageID names one message of flows' output by its connection and
// its index within it (Message.Conn, Message.Index): the same message has
// the same MessageID in every consumer of one run. The zero MessageID
// names none.
type MessageID struct {
	Conn  uint64
	Index uint32
}

// IsZero reports whether id names no message.
func (id MessageID) IsZero() bool { return id.Conn == 0 }

// Message is one write-level message (WAP5 section 2.3): the bytes sent in
// one direction of one connection between direction changes (cut further at
// long pauses and at application protocol boundaries), or one UDP datagram.
// It records, for every capture point that saw it, when its first and last
// bytes passed (Sightings), so that reconcile can take the send time from
// the point nearest the sender and the receive time from the point nearest
// the receiver.
//
// A *Message returned by Reader.Next or filled by Assembler.Next is reused
// by the next call; Clone makes a copy that is not.
type Message struct {
	// Conn numbers the connection (TCP) or flow (UDP) from 1, in the order
	// of their first packet; Index numbers the messages within it from 0.
	Conn  uint64
	Index uint32
	// Proto is trace.ProtoTCP or trace.ProtoUDP.
	Proto trace.Proto
	// App is the application protocol whose framing applied.
	App App
	// Src and Dst are the sending and receiving endpoints (the inside
	// endpoints when NAT was undone upstream).
	Src, Dst netip.AddrPort
	// Kind is CALL, RETURN or unknown; Call pairs a CALL with its RETURN.
	Kind trace.Kind
	Call CallID
	// Seq is the TCP sequence number of the message's first byte (0 for UDP).
	Seq uint32
	// Bytes is the message's size, including bytes the capture missed.
	Bytes int64
	// GapBytes counts bytes the capture never saw (Gaps holes); the
	// sequence numbers or the peer's acknowledgements say they were sent.
	GapBytes int64
	Gaps     int32
	// TruncBytes counts bytes that were on the wire but cut from the
	// capture by its snap length.
	TruncBytes int64
	// Segments counts the segments (or reassembled datagrams) that carried
	// the message's bytes. Writes counts the runs of segments ended by the
	// TCP PSH flag (1 for UDP): a sender's stack sets PSH at the end of each
	// write, but also whenever it empties its send queue, so a large write
	// can show several; Writes is at least the writes made. A message of
	// several writes is a fat message (WAP5): adjacent writes in one
	// direction are coalesced.
	Segments int32
	Writes   int32
	// End says why the message ended.
	End EndReason
	// Incomplete is true when bytes are missing (gaps, truncation) or the
	// protocol framing expected more than the stream delivered.
	Incomplete bool
	// Fingerprint is go-farm's Fingerprint64 of the message's first
	// FingerprintLen captured bytes (fewer when the message is shorter or a
	// hole comes first).
	Fingerprint    uint64
	FingerprintLen int
	// Sightings lists every capture point that saw the message, ordered by
	// First.
	Sightings []Sighting

	// What the application protocol's decoder said about the message
	// (package proto); zero where no decoder framed it.

	// Ordinal is the message's position among its connection's messages
	// in its direction, from 1.
	Ordinal uint32
	// Stream is the protocol's multiplexing key within the connection
	// (HTTP/2 stream id, Kafka correlation id); 0 for serial protocols.
	Stream uint64
	// Label is a short human description ("GET /item/{id}", "200",
	// "redis GET"); Status the response's outcome where the protocol has
	// one.
	Label  string
	Status int
	// Evidence holds the propagated request ids and content-token hashes
	// found in the message; nil when none were found or asked for.
	Evidence *proto.Evidence
}

// Clone returns a deep copy of m.
func (m *Message) Clone() *Message {
	c := *m
	c.Sightings = slices.Clone(m.Sightings)
	if m.Evidence != nil {
		e := proto.Evidence{IDs: slices.Clone(m.Evidence.IDs), Tokens: slices.Clone(m.Evidence.Tokens)}
		c.Evidence = &e
	}
	return &c
}

// SenderSide returns the sighting nearest the sender: the highest TTL, and
// among equal TTLs the earliest First. It returns nil when no point saw
// any byte of the message (a message made only of a gap).
func (m *Message) SenderSide() *Sighting {
	var best *Sighting
	for i := range m.Sightings {
		s := &m.Sightings[i]
		if best == nil || s.TTL > best.TTL || (s.TTL == best.TTL && s.First < best.First) {
			best = s
		}
	}
	return best
}

// ReceiverSide returns the sighting nearest the receiver: the lowest TTL,
// and among equal TTLs the latest Last. It returns nil when no point saw
// the message.
func (m *Message) ReceiverSide() *Sighting {
	var best *Sighting
	for i := range m.Sightings {
		s := &m.Sightings[i]
		if best == nil || s.TTL < best.TTL || (s.TTL == best.TTL && s.Last > best.Last) {
			best = s
		}
	}
	return best
}

// SendTS is First at the sighting nearest the sender, or trace.NoTime.
func (m *Message) SendTS() trace.Timestamp {
	if s := m.SenderSide(); s != nil {
		return trace.Timestamp(s.First)
	}
	return trace.NoTime
}

// RecvTS is Last at the sighting nearest the receiver, or trace.NoTime.
func (m *Message) RecvTS() trace.Timestamp {
	if s := m.ReceiverSide(); s != nil {
		return trace.Timestamp(s.Last)
	}
	return trace.NoTime
}

// CapturedBytes is the number of the message's bytes that some point saw:
// Bytes minus GapBytes.
func (m *Message) CapturedBytes() int64 { return m.Bytes - m.GapBytes }

// appendUint appends v in decimal, as strconv.AppendUint(b, v, 10) does,
// writing the digits in place, two at a time: strconv formats into a
// buffer of its own and copies it, which made the numbers half the cost
// of a line of the messages format. A single digit, the commonest number
// of a line, is appended where it is called (appendUint is small enough
// to be inlined), others by appendDigits.
func appendUint(b []byte, v uint64) []byte {
	if v < 10 {
		return append(b, byte('0'+v))
	}
	return appendDigits(b, v)
}

// appendDigits is appendUint for v of at least 10.
func appendDigits(b []byte, v uint64) []byte {
	switch {
	case v < 100:
		return append(b, digitPairs[2*v], digitPairs[2*v+1])
	case v < 1000:
		r := v % 100
		return append(b, byte('0'+v/100), digitPairs[2*r], digitPairs[2*r+1])
	case v < 10000:
		q, r := v/100, v%100
		return append(b, digitPairs[2*q], digitPairs[2*q+1], digitPairs[2*r], digitPairs[2*r+1])
	case v < 1000000:
		// Five and six digits (a long connection's indexes, stream ids
		// and call ids) in 32-bit arithmetic, without the loop's
		// length and growth.
		w := uint32(v)
		hi, lo := w/10000, w%10000
		q, r := lo/100, lo%100
		if hi < 10 {
			return append(b, byte('0'+hi), digitPairs[2*q], digitPairs[2*q+1], digitPairs[2*r], digitPairs[2*r+1])
		}
		return append(b, digitPairs[2*hi], digitPairs[2*hi+1], digitPairs[2*q], digitPairs[2*q+1], digitPairs[2*r], digitPairs[2*r+1])
	}
	n := decimalLen(v)
	b = slices.Grow(b, n)
	i := len(b) + n
	b = b[:i]
	// Eight digits at a time in 32-bit arithmetic (a time in nanoseconds
	// has 19), then two at a time.
	for v >= 1e8 {
		q := v / 1e8
		put8Digits(b[i-8:i], uint32(v-q*1e8))
		i -= 8
		v = q
	}
	w := uint32(v)
	for w >= 100 {
		q := w / 100
		r := w - q*100
		i -= 2
		b[i], b[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		w = q
	}
	if w >= 10 {
		b[i-2], b[i-1] = digitPairs[2*w], digitPairs[2*w+1]
	} else {
		b[i-1] = byte('0' + w)
	}
	return b
}

// put6Digits writes v (below 10^6) into d as six decimal digits, with
// leading zeros.
func put6Digits(d []byte, v uint32) {
	_ = d[5]
	hi, lo := v/10000, v%10000
	d[0], d[1] = digitPairs[2*hi], digitPairs[2*hi+1]
	p := lo / 100
	d[2], d[3] = digitPairs[2*p], digitPairs[2*p+1]
	p = lo % 100
	d[4], d[5] = digitPairs[2*p], digitPairs[2*p+1]
}

// put8Digits writes v (below 10^8) into d as eight decimal digits, with
// leading zeros.
func put8Digits(d []byte, v uint32) {
	_ = d[7]
	hi, lo := v/10000, v%10000
	p := hi / 100
	d[0], d[1] = digitPairs[2*p], digitPairs[2*p+1]
	p = hi % 100
	d[2], d[3] = digitPairs[2*p], digitPairs[2*p+1]
	p = lo / 100
	d[4], d[5] = digitPairs[2*p], digitPairs[2*p+1]
	p = lo % 100
	d[6], d[7] = digitPairs[2*p], digitPairs[2*p+1]
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// powers10 are 10^0 to 10^19.
var powers10 = [20]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18, 1e19}

// decimalLen returns the number of decimal digits of v (1 for 0).
func decimalLen(v uint64) int {
	// bits.Len64(v)*1233>>12 is the digits of 2^bits.Len64(v) minus 1, at
	// most one too few.
	n := bits.Len64(v) * 1233 >> 12
	if n < len(powers10) && v >= powers10[n] {
		n++
	}
	return max(n, 1)
}

// ID returns the message's MessageID.
func (m *Message) ID() MessageID { return MessageID{Conn: m.Conn, Index: m.Index} }
