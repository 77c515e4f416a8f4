package flows

import (
	"errors"
	"fmt"
	"time"

	ptls "github.com/wirepath/wirepath/proto/tls"
)

// Config holds the parameters of the flows stage. DefaultConfig gives
// values that suit LAN captures; every limit has a counter in Stats that
// says when it was reached.
type Config struct {
	// SplitPause cuts a message when its sender pauses longer than this
	// between two segments without the other side sending data. 0 disables
	// pause splitting.
	SplitPause time.Duration
	// Framing enables application protocol framing (HTTP/1.x, DNS) that
	// cuts messages at protocol boundaries and pairs calls and returns.
	Framing bool
	// FingerprintLen is how many leading bytes of a message its body
	// fingerprint covers (1 to MaxFingerprintLen).
	FingerprintLen int

	// Settle is how long a finished message waits for more sightings
	// (copies of its segments seen by other capture points, such as the
	// other side of a NAT, or retransmissions reaching a receiver-side
	// sniffer) before it is emitted. A whole message a protocol decoder
	// framed leaves earlier on a single-point capture, once its receiver
	// acknowledged it (release.go).
	Settle time.Duration
	// ReorderTimeout is how long out-of-order data waits for a missing
	// segment before the hole is recorded as a gap and the stream goes on.
	ReorderTimeout time.Duration
	// IdleTimeout ends a TCP connection with no packets for this long;
	// UDPTimeout ends a UDP flow. CloseLinger is how long a closed
	// connection is kept to absorb stray retransmissions of its last
	// packets before a new connection may reuse its 4-tuple quietly.
	IdleTimeout time.Duration
	UDPTimeout  time.Duration
	CloseLinger time.Duration
	// UDPAnsweredTimeout ends sooner a UDP flow whose datagrams so far
	// were answered one for one (both ways, as many each way: a DNS
	// lookup, or a few on one socket), which rarely carries more: silent
	// this long, it ends (EndIdle) instead of living UDPTimeout, so that
	// the connection table does not hold a minute of lookups, each on a
	// port of its own. 0 means UDPTimeout. It should exceed Settle, so
	// that another capture point's copy of the answer still finds its
	// flow.
	UDPAnsweredTimeout time.Duration

	// MaxConns bounds the connections and flows tracked at once; beyond it
	// the least recently active one is ended (Stats.ConnsEvicted).
	MaxConns int
	// MaxBufferPerConn bounds the out-of-order bytes buffered for one
	// direction of one connection, MaxBufferTotal those of all together;
	// beyond them the oldest hole is recorded as a gap (Stats.Gaps by
	// reason "limit").
	MaxBufferPerConn int
	MaxBufferTotal   int

	// FragTimeout drops an incomplete fragmented datagram this long after
	// its first fragment; MaxFragBytes bounds the bytes of all incomplete
	// datagrams (the oldest is dropped beyond it).
	FragTimeout  time.Duration
	MaxFragBytes int

	// Ports names the protocol spoken on a TCP port, by prior knowledge
	// (--proto PORT=NAME): a connection with an endpoint on one of them
	// (the server's, when both are) is decoded as that protocol, whatever
	// its first bytes; AppNone turns framing off on the port. Without an
	// entry, the protocol is detected from the connection's first bytes.
	// Kafka is only decoded by port.
	Ports map[uint16]App
	// KeyLog holds TLS secrets (an SSLKEYLOGFILE) that decrypt TLS
	// connections, whose HTTP/2 or HTTP/1.x is then framed; nil: TLS
	// records are framed as opaque messages.
	KeyLog *ptls.KeyLog
	// Evidence takes, per message, the propagated request identifiers
	// and content tokens its protocol's decoder finds (Message.Evidence).
	// Labels and statuses are taken either way.
	Evidence bool
	// MaxTokens caps the content tokens of one message (0: none, the
	// identifiers only); EvidenceBytes is how many leading bytes of a
	// message's content (an HTTP body, an SQL text, a binary message) are
	// looked at for them.
	MaxTokens     int
	EvidenceBytes int

	// OnConn, when set, is called with each connection's passive figures
	// (MSHN) once the connection has ended and all its messages have been
	// emitted. The *ConnStats is only valid during the call.
	OnConn func(*ConnStats)
}

// MaxFingerprintLen is the largest Config.FingerprintLen.
const MaxFingerprintLen = 128

// maxWindow is the largest distance between sequence numbers flows
// accepts as belonging to one stream (TCP's largest scaled window).
const maxWindow = 1 << 30

// DefaultConfig returns the default parameters.
func DefaultConfig() Config {
	return Config{
		SplitPause:         500 * time.Millisecond,
		Framing:            true,
		FingerprintLen:     64,
		Settle:             time.Second,
		ReorderTimeout:     2 * time.Second,
		IdleTimeout:        5 * time.Minute,
		UDPTimeout:         time.Minute,
		UDPAnsweredTimeout: 10 * time.Second,
		CloseLinger:        2 * time.Second,
		MaxConns:           1 << 18,
		MaxBufferPerConn:   4 << 20,
		MaxBufferTotal:     512 << 20,
		FragTimeout:        30 * time.Second,
		MaxFragBytes:       64 << 20,
		Evidence:           true,
		MaxTokens:          DefaultMaxTokens,
		EvidenceBytes:      DefaultEvidenceBytes,
	}
}

// Defaults of the evidence caps (see proto/evidence).
const (
	DefaultMaxTokens     = 32
	DefaultEvidenceBytes = 512
	// MaxMaxTokens bounds Config.MaxTokens.
	MaxMaxTokens = 1024
)

// Validate reports the first parameter that is out of range.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.SplitPause >= 0, "split pause must not be negative")
	check(c.FingerprintLen >= 1 && c.FingerprintLen <= MaxFingerprintLen, "fingerprint length must be between 1 and %d, not %d", MaxFingerprintLen, c.FingerprintLen)
	check(c.Settle >= 0, "settle time must not be negative")
	check(c.ReorderTimeout > 0, "reorder timeout must be positive")
	check(c.IdleTimeout > 0, "idle timeout must be positive")
	check(c.UDPTimeout > 0, "UDP timeout must be positive")
	check(c.UDPAnsweredTimeout >= 0, "answered UDP timeout must not be negative")
	check(c.CloseLinger >= 0, "close linger must not be negative")
	check(c.MaxConns >= 1, "connection limit must be at least 1")
	check(c.MaxBufferPerConn >= 1, "per-connection buffer limit must be at least 1 byte")
	check(c.MaxBufferTotal >= c.MaxBufferPerConn, "total buffer limit must be at least the per-connection limit")
	check(c.FragTimeout > 0, "fragment timeout must be positive")
	check(c.MaxFragBytes >= 65535, "fragment buffer limit must hold at least one largest datagram (65535 bytes)")
	check(c.MaxTokens >= 0 && c.MaxTokens <= MaxMaxTokens, "token cap must be between 0 and %d, not %d", MaxMaxTokens, c.MaxTokens)
	check(c.EvidenceBytes >= 0, "evidence bytes must not be negative")
	for port, app := range c.Ports {
		check(app < numApps, "port %d: unknown protocol %d", port, app)
	}
	return errors.Join(errs...)
}
