// Package proto is the shared vocabulary of wirepath's application-protocol
// decoders: the packages below it (proto/http2, proto/tls, proto/pgwire,
// proto/mysql, proto/resp, proto/memcache, proto/kafka, ...) each decode one
// protocol from the two byte streams of a connection and report the
// protocol's own messages as Units.
//
// A decoder knows bytes and offsets, never packets, timestamps, hosts or
// the trace: flows feeds it the in-order bytes of each direction with their
// stream offsets and turns each Unit into a write-level message, timed by
// the packets that carried its first and last byte. A decoder of a
// multiplexing protocol (HTTP/2 streams, Kafka correlation ids) reports
// Units whose byte ranges interleave; Key pairs a request with its response
// exactly, whatever their order.
//
// Decoders are bounded: a decoder holds at most a documented number of
// bytes per connection, never reads past the bytes it was given, and turns
// malformed input into counted, skipped Units of KindControl or a lost
// state, never a panic.
package proto

// Dir is the direction of bytes on a connection.
type Dir uint8

// The two directions of a connection.
const (
	FromClient Dir = iota // bytes sent by the side that opened the connection
	FromServer            // bytes sent by the side that accepted it
)

// Other returns the opposite direction.
func (d Dir) Other() Dir { return 1 - d }

// String returns "client" or "server".
func (d Dir) String() string {
	if d == FromClient {
		return "client"
	}
	return "server"
}

// Kind says what a Unit is to the causal engines.
type Kind uint8

// The kinds of Unit.
const (
	// KindRequest is a request that expects a response: a CALL.
	KindRequest Kind = iota + 1
	// KindResponse is the response to the request with the same Key: a RETURN.
	KindResponse
	// KindOneWay is an application message that expects no response
	// (a notification, a one-way RPC, a pushed message).
	KindOneWay
	// KindControl is protocol machinery that is no application message
	// (TLS handshakes, HTTP/2 SETTINGS, PING and WINDOW_UPDATE frames,
	// PostgreSQL start-up): counted, never made a message.
	KindControl
	// KindData is application bytes whose message boundaries the decoder
	// does not know, only where they may be cut (a TLS record it cannot
	// decrypt): the caller frames such Units as it frames opaque traffic,
	// at direction changes, or one message per Unit when it knows the
	// inner protocol is request/response; it never cuts inside one.
	KindData
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindResponse:
		return "response"
	case KindOneWay:
		return "one-way"
	case KindControl:
		return "control"
	case KindData:
		return "data"
	}
	return "unknown"
}

// Unit is one protocol message decoded from one direction of a connection.
// Start and End are offsets in that direction's byte stream: Start is the
// offset of the message's first byte, End one past its last. In a
// multiplexing protocol other Units' bytes may lie between them.
type Unit struct {
	Dir  Dir
	Kind Kind
	// Key pairs a KindRequest with its KindResponse on the connection:
	// the HTTP/2 stream id, the Kafka correlation id or DNS message id
	// (with a bit above the id's width set, 1<<32 or 1<<16, since those
	// ids may be 0), or for serial protocols (HTTP/1.x, RESP, memcached,
	// PostgreSQL, MySQL) the request's ordinal on the connection, counted
	// from 1. Zero for Units that pair with nothing.
	Key uint64
	// Start and End delimit the Unit's bytes in Dir's stream.
	Start, End int64
	// Bytes is how many of the bytes between Start and End belong to
	// this Unit (less than End-Start when other Units interleave).
	Bytes int64
	// Label is a short human description: "GET /item/{id}", "200",
	// "grpc /hotel.Search/Nearby", "redis GET", "SELECT users". Empty
	// when the decoder knows none.
	Label string
	// Status is the response's outcome where the protocol has one
	// (HTTP status, grpc-status, SQL error class); 0 if none.
	Status int
	// Evidence holds what the message's content says about causality:
	// propagated identifiers and content tokens. Nil when the decoder
	// was asked for none.
	Evidence *Evidence
	// Lost counts the Unit's bytes the capture missed, as far as the
	// decoder knows (a gap inside one of its frames); Incomplete says that
	// a loss may have cost it bytes the decoder cannot count (its
	// direction lost its framing while it was open). A decoder whose
	// Units' bytes are contiguous leaves both zero: the gaps between
	// Start and End are the Unit's.
	Lost       int64
	Incomplete bool
}

// Evidence is what one message's content carries that can link it to the
// messages that caused it or that it caused.
type Evidence struct {
	// IDs are propagated request identifiers found in the message
	// (traceparent, X-Request-ID, b3, ...).
	IDs []ID
	// Tokens are 64-bit hashes (go-farm Fingerprint64) of the content
	// tokens of the message: path segments, query values, keys, literals.
	// At most the configured cap; sorted, without duplicates.
	Tokens []uint64
}

// ID is one propagated request identifier: the header or field it came
// from and its value, normalised (a W3C traceparent's trace-id, a b3
// trace id, the X-Request-ID value).
type ID struct {
	Source string // "traceparent", "x-request-id", "b3", ...
	Value  string
}

// Decoder decodes one connection's application protocol, pull-style as
// flows' Assembler: Feed is given each direction's bytes in stream order
// (off is the stream offset of data[0]); Gap says that n bytes from off
// were not captured; Close ends the connection and completes what was
// still open. After each of them, Next takes the Units completed, one at a
// time, until it reports false. A Unit, and the Evidence it points to,
// stays valid until the decoder is next fed after all were taken: a caller
// that keeps them copies them. Units are reported when their last byte has
// been fed, so a request's Unit precedes its response's.
type Decoder interface {
	Feed(dir Dir, off int64, data []byte)
	Gap(dir Dir, off, n int64)
	Close()
	Next(u *Unit) bool
}

// Summary is the part of a decoder's counters that every decoder has, for
// a caller that accounts many protocols alike (flows). After Close, In +
// GapBytes = Framed + Unframed + Lost (+ Pending, 0 after Close).
type Summary struct {
	In       int64 // bytes fed (overlaps excluded)
	GapBytes int64 // bytes reported lost (Gap, or an offset jump)
	Framed   int64 // bytes inside reported Units
	Unframed int64 // bytes in no reported Unit: skipped, searched through, damaged, cut off by Close
	Lost     int64 // lost bytes counted in neither Framed nor Unframed
	Pending  int64 // bytes held, not yet decided

	Malformed int64 // malformed input that lost sync or was skipped
	Losses    int64 // times framing was lost
	Resyncs   int64 // times it was found again
	Unpaired  int64 // responses (or Units) that could not be paired
	// Err is the decoder's own accounting check (nil when it balances).
	Err error
}

// Resumer is a Decoder that can take up a connection whose start the
// capture missed (flows' mid-stream pickup).
type Resumer interface {
	Decoder
	// Resume prepares a decoder not yet fed for a connection seen from
	// its middle, past any start-up exchange. A direction whose sync is
	// true is fed from a message boundary the caller found; the other
	// searches for one as after a loss (not counted as a loss). With
	// paired, the caller knows no response is owed to a request the
	// decoder will not see: pairing starts at the first request.
	// Otherwise it starts suspended (responses may be owed to requests
	// never seen) and resumes at a request sent while none waits, once a
	// response was seen and the server is between messages.
	Resume(sync [2]bool, paired bool)
	// Losses returns how many times dir lost its framing.
	Losses(dir Dir) int64
	// Starts says whether a message of dir plausibly starts at b[0]:
	// the test a direction that lost its framing resynchronises with.
	Starts(dir Dir, b []byte) Verdict
}

// Verdict is what a plausibility test says of the bytes at one position
// of a stream.
type Verdict uint8

// The verdicts.
const (
	StartNo   Verdict = iota // no message starts here
	StartYes                 // a plausible message starts here
	StartMore                // too few bytes to tell
)
