package flows

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/trace"
)

// ProtoStats is the accounting of one application protocol: the
// connections it framed, the bytes it was given and what became of them,
// the Units its decoder reported and the messages they made.
//
// A connection's protocol is the one detected from its first bytes (or
// named for its port); connections cut at direction changes count under
// "http" when HTTP/1.x framing applied to one of their directions, under
// "dns" on port 53, and under "-" otherwise. Messages count under their
// connection's protocol.
//
// For a decoded protocol, once its connections have ended (Open is 0):
// Bytes + GapBytes + TruncBytes = FramedBytes + UnframedBytes + LostBytes;
// and once their messages are emitted: Messages = Requests + Responses +
// OneWay + DataMessages. Every Unit is a request, response or one-way
// message, a control Unit (counted, not a message) or a data Unit
// (folded into the opaque DataMessages).
type ProtoStats struct {
	Conns    int64 `json:"conns"`
	Open     int64 `json:"open,omitempty"`     // connections whose decoder is still running
	Rejected int64 `json:"rejected,omitempty"` // connections detected as this protocol that its decoder then rejected (the rest was cut at direction changes)

	// Bytes are the captured stream bytes of its connections (for a
	// decoded protocol, those handed to the decoder), GapBytes those the
	// capture missed, TruncBytes those cut off by the snap length.
	Bytes      int64 `json:"bytes"`
	GapBytes   int64 `json:"gap_bytes"`
	TruncBytes int64 `json:"trunc_bytes,omitempty"`

	// The decoder's own byte accounting (proto.Summary), added when a
	// connection's decoder is closed.
	FramedBytes   int64 `json:"framed_bytes,omitempty"`
	UnframedBytes int64 `json:"unframed_bytes,omitempty"`
	LostBytes     int64 `json:"lost_bytes,omitempty"`

	Messages     int64 `json:"messages"`
	MessageBytes int64 `json:"message_bytes"`
	Calls        int64 `json:"calls"`
	Returns      int64 `json:"returns"`
	Unpaired     int64 `json:"unpaired,omitempty"` // responses with no request to answer
	// Unanswered counts requests whose response never came by the
	// connection's end (lost to a gap, or never sent).
	Unanswered int64 `json:"unanswered,omitempty"`
	// MidStream counts the connections taken up from their middle (their
	// handshake unseen) at a confirmed message boundary, and
	// MidSkippedBytes their bytes before it (also in UnframedBytes).
	MidStream       int64 `json:"mid_stream,omitempty"`
	MidSkippedBytes int64 `json:"mid_skipped_bytes,omitempty"`

	Requests     int64 `json:"requests,omitempty"`
	Responses    int64 `json:"responses,omitempty"`
	OneWay       int64 `json:"one_way,omitempty"`
	ControlUnits int64 `json:"control_units,omitempty"`
	ControlBytes int64 `json:"control_bytes,omitempty"`
	DataUnits    int64 `json:"data_units,omitempty"`
	DataBytes    int64 `json:"data_bytes,omitempty"`
	DataMessages int64 `json:"data_messages,omitempty"`
	// UnitsClamped counts Units that began before the oldest packet
	// record kept for their direction (the log's bound): they are timed
	// from the oldest one left.
	UnitsClamped int64 `json:"units_clamped,omitempty"`

	Malformed int64 `json:"malformed,omitempty"`
	Losses    int64 `json:"losses,omitempty"`  // times a direction lost its framing
	Resyncs   int64 `json:"resyncs,omitempty"` // times it found it again
	// DecoderErrors counts decoders whose own accounting did not balance
	// (a bug, reported by Stats.Check).
	DecoderErrors int64 `json:"decoder_errors,omitempty"`

	// TLS: connections by decryption outcome (proto/tls Decrypt), those
	// whose ClientHello named a server (SNI), and the protocol decoded
	// inside the decrypted ones.
	Decrypted   int64 `json:"decrypted,omitempty"`
	NoKeyLog    int64 `json:"no_key_log,omitempty"`
	NoSecrets   int64 `json:"no_secrets,omitempty"`
	BadSecrets  int64 `json:"bad_secrets,omitempty"`
	Unsupported int64 `json:"unsupported,omitempty"`
	LostSync    int64 `json:"lost_sync,omitempty"`
	WithSNI     int64 `json:"with_sni,omitempty"`
	InnerH2     int64 `json:"inner_h2,omitempty"`
	InnerHTTP   int64 `json:"inner_http,omitempty"`

	// HTTP/2 (including inside TLS): streams, resets, GOAWAYs,
	// flow-control stalls, HPACK poisonings, streams lost.
	Streams       int64 `json:"streams,omitempty"`
	Resets        int64 `json:"resets,omitempty"`
	GoAways       int64 `json:"goaways,omitempty"`
	Stalls        int64 `json:"stalls,omitempty"`
	HPACKPoisoned int64 `json:"hpack_poisoned,omitempty"`
	StreamsLost   int64 `json:"streams_lost,omitempty"`
}

// decoded reports whether a protocol is framed by a proto decoder (not
// by flows' own cutting).
func (a App) decoded() bool {
	return a >= AppH2 && a < numApps
}

// addSummary adds a closed decoder's own accounting.
func (p *ProtoStats) addSummary(s proto.Summary) {
	p.FramedBytes += s.Framed
	p.UnframedBytes += s.Unframed + s.Pending
	p.LostBytes += s.Lost
	p.Malformed += s.Malformed
	p.Losses += s.Losses
	p.Resyncs += s.Resyncs
	if s.Err != nil {
		p.DecoderErrors++
	}
}

// check verifies p's identities (see ProtoStats).
func (p *ProtoStats) check(name string, openMsgs int64) []error {
	var errs []error
	if p.Open == 0 {
		if in, out := p.Bytes+p.GapBytes+p.TruncBytes, p.FramedBytes+p.UnframedBytes+p.LostBytes; in != out {
			errs = append(errs, fmt.Errorf("%s: bytes + gaps + truncated %d != framed + unframed + lost %d", name, in, out))
		}
		if p.DecoderErrors != 0 {
			errs = append(errs, fmt.Errorf("%s: %d decoders' own accounting did not balance", name, p.DecoderErrors))
		}
	}
	if openMsgs == 0 {
		if u := p.Requests + p.Responses + p.OneWay + p.DataMessages; u != p.Messages {
			errs = append(errs, fmt.Errorf("%s: messages %d != requests + responses + one-way + data messages %d", name, p.Messages, u))
		}
	}
	return errs
}

// protoCounts returns the counters of each protocol that saw a connection
// or a message, as trace.Counts of stage "protocols" named
// "<protocol>_<counter>" ("h2_messages", "tls_decrypted"), zero ones left
// out.
func protoCounts(ps map[string]*ProtoStats) []trace.Count {
	var out []trace.Count
	for a := App(0); a < numApps; a++ {
		name := a.String()
		p := ps[name]
		if p == nil {
			continue
		}
		if name == "-" {
			name = "none"
		}
		v := reflect.ValueOf(p).Elem()
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if x := v.Field(i).Int(); x != 0 {
				field, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				out = append(out, trace.Count{Stage: "protocols", Name: name + "_" + field, Value: x})
			}
		}
	}
	return out
}
