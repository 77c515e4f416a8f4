package flows

import (
	"encoding/json"
	"io"
	"net/netip"
	"strconv"
	"unsafe"

	"github.com/wirepath/wirepath/trace"
)

// The first lines of the messages and connections formats; they carry the
// format version (see docs/formats.md).
const (
	MessagesMagic = "# wirepath-messages v2"
	ConnsMagic    = "# wirepath-conns v2"
)

// MessageColumns are the columns of the messages TSV format, in order.
var MessageColumns = []string{"send_ts", "recv_ts", "src", "dst", "proto", "app", "kind", "call_id",
	"bytes", "gap_bytes", "trunc_bytes", "incomplete", "segments", "writes", "end", "conn", "index", "seq",
	"fingerprint", "fp_len", "sightings", "ordinal", "stream", "label", "status", "ids", "tokens"}

// ConnColumns are the columns of the connections TSV format, in order.
var ConnColumns = []string{"conn", "proto", "client", "server", "caller", "mid_stream", "start_ns", "end_ns", "end",
	"client_packets", "server_packets", "client_bytes", "server_bytes", "client_messages", "server_messages",
	"gaps", "gap_bytes", "retrans_segments", "retrans_bytes", "handshake_rtt_ns",
	"rtt_n", "rtt_min_ns", "rtt_p50_ns", "rtt_max_ns",
	"client_tput_n", "client_tput_p50_bps", "client_tput_max_bps", "client_tput_agg_bps",
	"server_tput_n", "server_tput_p50_bps", "server_tput_max_bps", "server_tput_agg_bps",
	"rtt_point", "passive_rtt_ns", "to_client_n", "to_client_min_ns", "to_client_p50_ns",
	"to_server_n", "to_server_min_ns", "to_server_p50_ns",
	"client_mss", "client_window", "server_mss", "server_window"}

// appendHeader appends the magic line and the tab-separated column names.
func appendHeader(b []byte, magic string, cols []string) []byte {
	b = append(b, magic...)
	b = append(b, '\n')
	for i, c := range cols {
		if i > 0 {
			b = append(b, '\t')
		}
		b = append(b, c...)
	}
	return append(b, '\n')
}

// AppendMessagesHeader appends the magic line and header of the messages
// TSV format.
func AppendMessagesHeader(b []byte) []byte { return appendHeader(b, MessagesMagic, MessageColumns) }

// AppendConnsHeader appends the magic line and header of the connections
// TSV format.
func AppendConnsHeader(b []byte) []byte { return appendHeader(b, ConnsMagic, ConnColumns) }

// appendInt appends v in decimal (a single digit where it is called, as
// appendUint).
func appendInt(b []byte, v int64) []byte {
	if uint64(v) < 10 {
		return append(b, byte('0'+v))
	}
	return appendIntDigits(b, v)
}

// appendIntDigits is appendInt for v outside 0 to 9.
func appendIntDigits(b []byte, v int64) []byte {
	if v < 0 {
		return strconv.AppendInt(b, v, 10)
	}
	return appendDigits(b, uint64(v))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, '1')
	}
	return append(b, '0')
}

// AppendMessageTSV appends m as one line of the messages TSV format.
// send_ts is First at the sighting nearest the sender, recv_ts Last at the
// one nearest the receiver ("-" when no point saw the message); sightings
// lists every point as point:ttl:first:last:bytes:segments:repeats,
// comma-separated.
func AppendMessageTSV(b []byte, m *Message) []byte { return appendMessageTSV(b, m, nil) }

// MessageTSV writes lines of the messages TSV format as AppendMessageTSV
// does, remembering the text of the endpoints it wrote last (a
// connection's messages name the same two), of the columns from src to
// kind, and of the last time, which it then copies rather than formats. The zero value is ready to use; it is not safe for
// concurrent use.
type MessageTSV struct {
	eps  [64]endpointText
	mids [32]middleText
	ts   lastTime
	// The last label and id source found printable: decoders hand out
	// the same string for every message of a kind.
	label, source string
}

// endpointText is the text of one endpoint, "10.0.0.1:80" or
// "[fe80::1]:53", when it fits.
type endpointText struct {
	ap   netip.AddrPort
	n    uint8
	text [55]byte
}

// Append appends m as one line of the messages TSV format.
func (w *MessageTSV) Append(b []byte, m *Message) []byte { return appendMessageTSV(b, m, w) }

// appendMiddle appends a line's src, dst, proto, app and kind columns,
// each followed by a tab.
func appendMiddle(b []byte, m *Message, w *MessageTSV) []byte {
	b = w.endpoint(b, m.Src)
	b = append(b, '\t')
	b = w.endpoint(b, m.Dst)
	b = append(b, '\t')
	b = append(b, m.Proto.String()...)
	b = append(b, '\t')
	b = append(b, m.App.String()...)
	b = append(b, '\t')
	b = append(b, m.Kind.String()...)
	return append(b, '\t')
}

// middleText is the text of appendMiddle's columns for one combination
// of their values (a direction of a connection and a kind), when it fits.
type middleText struct {
	src, dst netip.AddrPort
	proto    trace.Proto
	app      App
	kind     trace.Kind
	n        uint8
	text     [160]byte
}

// middle is appendMiddle, copying the text from the cache when it holds
// it: the messages of a connection repeat two or three combinations.
func (w *MessageTSV) middle(b []byte, m *Message) []byte {
	e := &w.mids[(uint(m.Src.Port())^uint(m.Dst.Port())<<1^uint(m.Kind))%uint(len(w.mids))]
	if e.n > 0 && e.src == m.Src && e.dst == m.Dst && e.proto == m.Proto && e.app == m.App && e.kind == m.Kind {
		return append(b, e.text[:e.n]...)
	}
	start := len(b)
	b = appendMiddle(b, m, w)
	if n := len(b) - start; n <= len(e.text) {
		e.src, e.dst, e.proto, e.app, e.kind, e.n = m.Src, m.Dst, m.Proto, m.App, m.Kind, uint8(n)
		copy(e.text[:], b[start:])
	}
	return b
}

// endpoint appends ap's text, from the cache when it holds it.
func (w *MessageTSV) endpoint(b []byte, ap netip.AddrPort) []byte {
	if w == nil {
		return ap.AppendTo(b)
	}
	a := ap.Addr().As16()
	e := &w.eps[(uint(ap.Port())^uint(a[15])<<3^uint(a[14])<<5)%uint(len(w.eps))]
	if e.n > 0 && e.ap == ap {
		return append(b, e.text[:e.n]...)
	}
	start := len(b)
	b = ap.AppendTo(b)
	if n := len(b) - start; n <= len(e.text) {
		e.ap, e.n = ap, uint8(n)
		copy(e.text[:], b[start:])
	}
	return b
}

// appendMessageTSV is AppendMessageTSV, with w's endpoint cache when w is
// not nil.
func appendMessageTSV(b []byte, m *Message, w *MessageTSV) []byte {
	// The two times are written again in the sightings (where a message
	// has one, they are its First and Last): their text is copied.
	var send, recv tsText
	if s := m.SenderSide(); s != nil {
		b = send.append(b, s.First, w)
	} else {
		b = append(b, '-')
	}
	b = append(b, '\t')
	if s := m.ReceiverSide(); s != nil {
		b = recv.appendLike(b, s.Last, &send, w)
	} else {
		b = append(b, '-')
	}
	b = append(b, '\t')
	if w != nil {
		b = w.middle(b, m)
	} else {
		b = appendMiddle(b, m, nil)
	}
	b = m.Call.AppendText(b)
	b = append(b, '\t')
	b = appendInt(b, m.Bytes)
	b = append(b, '\t')
	b = appendInt(b, m.GapBytes)
	b = append(b, '\t')
	b = appendInt(b, m.TruncBytes)
	b = append(b, '\t')
	b = appendBool(b, m.Incomplete)
	b = append(b, '\t')
	b = appendInt(b, int64(m.Segments))
	b = append(b, '\t')
	b = appendInt(b, int64(m.Writes))
	b = append(b, '\t')
	b = append(b, m.End.String()...)
	b = append(b, '\t')
	b = appendUint(b, m.Conn)
	b = append(b, '\t')
	b = appendUint(b, uint64(m.Index))
	b = append(b, '\t')
	b = appendUint(b, uint64(m.Seq))
	b = append(b, '\t')
	b = appendHex16(b, m.Fingerprint)
	b = append(b, '\t')
	b = appendInt(b, int64(m.FingerprintLen))
	b = append(b, '\t')
	if len(m.Sightings) == 0 {
		b = append(b, '-')
	}
	for i := range m.Sightings {
		s := &m.Sightings[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUint(b, uint64(s.Point.Sniffer))
		b = append(b, '/')
		b = appendUint(b, uint64(s.Point.Interface))
		b = append(b, ':')
		b = appendUint(b, uint64(s.TTL))
		b = append(b, ':')
		b = send.again(b, s.First)
		b = append(b, ':')
		b = recv.again(b, s.Last)
		b = append(b, ':')
		b = appendInt(b, s.Bytes)
		b = append(b, ':')
		b = appendInt(b, int64(s.Segments))
		b = append(b, ':')
		b = appendInt(b, int64(s.Repeats))
	}
	b = append(b, '\t')
	b = appendUint(b, uint64(m.Ordinal))
	b = append(b, '\t')
	b = appendUint(b, m.Stream)
	b = append(b, '\t')
	b = w.text(b, m.Label, labelText)
	b = append(b, '\t')
	b = appendInt(b, int64(m.Status))
	b = append(b, '\t')
	var toks int
	if ev := m.Evidence; ev != nil && len(ev.IDs) > 0 {
		for i, id := range ev.IDs {
			if i > 0 {
				b = append(b, ' ')
			}
			b = w.text(b, id.Source, sourceText)
			b = append(b, '=')
			b = appendText(b, id.Value)
		}
	} else {
		b = append(b, '-')
	}
	if m.Evidence != nil {
		toks = len(m.Evidence.Tokens)
	}
	b = append(b, '\t')
	b = appendInt(b, int64(toks))
	return append(b, '\n')
}

// tsText remembers where a time was written in a line, so that the same
// time is copied rather than formatted again (19 digits).
type tsText struct {
	v      int64
	lo, hi int
	ok     bool
}

// append appends v in decimal (through w's memory of the time it wrote
// last when w is not nil) and remembers where.
func (t *tsText) append(b []byte, v int64, w *MessageTSV) []byte {
	t.v, t.lo, t.ok = v, len(b), true
	if w != nil {
		b = w.ts.append(b, v)
	} else {
		b = appendInt(b, v)
	}
	t.hi = len(b)
	return b
}

// appendLike is append, copying like's text when v is its time (a
// message in one segment seen at one point arrived when it left).
func (t *tsText) appendLike(b []byte, v int64, like *tsText, w *MessageTSV) []byte {
	if like.ok && v == like.v {
		t.v, t.lo, t.ok = v, len(b), true
		b = append(b, b[like.lo:like.hi]...)
		t.hi = len(b)
		return b
	}
	return t.append(b, v, w)
}

// lastTime is the text of the time a MessageTSV wrote last. Consecutive
// lines' times are mostly the same or differ in their last digits (the
// messages a packet ends have its time), so a time is copied from it,
// whole or but its last six digits.
type lastTime struct {
	v    int64
	n    int // length of text; 0: none yet
	text [20]byte
}

// append appends v in decimal, copying what it can of the last time.
func (l *lastTime) append(b []byte, v int64) []byte {
	const low = 1e6 // the part of a time formatted again when the rest is the same
	if v < low {
		return appendInt(b, v)
	}
	if l.n > 0 {
		if v == l.v {
			return append(b, l.text[:l.n]...)
		}
		if v/low == l.v/low { // so as many digits as l.v (both at least low)
			k := l.n - 6
			put6Digits(l.text[k:l.n], uint32(v%low))
			l.v = v
			return append(b, l.text[:l.n]...)
		}
	}
	start := len(b)
	b = appendInt(b, v)
	l.v, l.n = v, copy(l.text[:], b[start:])
	return b
}

// again appends v: a copy of the remembered text if it is the same time,
// else, when only its last six digits differ (another capture point's
// sighting of the message, within the same millisecond), a copy of the
// rest with those six formatted.
func (t *tsText) again(b []byte, v int64) []byte {
	if t.ok && v == t.v {
		return append(b, b[t.lo:t.hi]...)
	}
	const low = 1e6
	if t.ok && v >= low && t.v >= low && v/low == t.v/low {
		b = append(b, b[t.lo:t.hi]...)
		put6Digits(b[len(b)-6:], uint32(v%low))
		return b
	}
	return appendInt(b, v)
}

// Which of MessageTSV's remembered strings text may use.
const (
	labelText = iota
	sourceText
)

// text appends s as appendText does, without looking at its bytes when
// it is (the same memory as) the string of kind k found printable last.
func (w *MessageTSV) text(b []byte, s string, k int) []byte {
	if w == nil || s == "" {
		return appendText(b, s)
	}
	last := &w.label
	if k == sourceText {
		last = &w.source
	}
	if len(s) == len(*last) && unsafe.StringData(s) == unsafe.StringData(*last) {
		return append(b, s...)
	}
	if printable(s) {
		*last = s
		return append(b, s...)
	}
	return appendText(b, s)
}

// appendText appends s for a TSV field: "-" when empty, control bytes
// (tabs, line ends) as '?'.
func appendText(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	if printable(s) {
		return append(b, s...) // the common case, in one copy
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			c = '?'
		}
		b = append(b, c)
	}
	return b
}

// printable reports whether s has no control byte (below 0x20, or 0x7f),
// looking at eight bytes at a time: a byte below 0x20 makes
// x - 0x20202020... borrow into its top bit where x's top bit is clear
// (Bit Twiddling Hacks' hasless), and one equal to 0x7f is a zero byte of
// x ^ 0x7f7f7f7f....
func printable(s string) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	for ; len(s) >= 8; s = s[8:] {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		y := x ^ 0x7f*ones
		if (x-0x20*ones)&^x&tops != 0 || (y-ones)&^y&tops != 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// appendHex16 appends v as 16 lower-case hex digits, a byte (two digits)
// at a time.
func appendHex16(b []byte, v uint64) []byte {
	var t [16]byte
	for i := 0; i < 16; i += 2 {
		x := v >> (56 - 4*uint(i)) & 0xff
		t[i], t[i+1] = hexPairs[2*x], hexPairs[2*x+1]
	}
	return append(b, t[:]...)
}

// hexPairs holds "00" to "ff".
var hexPairs = func() string {
	const hex = "0123456789abcdef"
	var t [512]byte
	for i := range 256 {
		t[2*i], t[2*i+1] = hex[i>>4], hex[i&0xf]
	}
	return string(t[:])
}()

// sightingJSON and messageJSON are the JSON Lines form of a message.
type sightingJSON struct {
	Point      string `json:"point"`
	Sniffer    uint16 `json:"sniffer"`
	Interface  uint16 `json:"interface"`
	TTL        uint8  `json:"ttl"`
	FirstNS    int64  `json:"first_ns"`
	LastNS     int64  `json:"last_ns"`
	FirstBytes int64  `json:"first_bytes"`
	Bytes      int64  `json:"bytes"`
	Segments   int32  `json:"segments"`
	Repeats    int32  `json:"repeats"`
}

type messageJSON struct {
	SendTS      *int64         `json:"send_ts"`
	RecvTS      *int64         `json:"recv_ts"`
	Src         string         `json:"src"`
	Dst         string         `json:"dst"`
	Proto       string         `json:"proto"`
	App         string         `json:"app"`
	Kind        string         `json:"kind"`
	CallID      string         `json:"call_id"`
	Bytes       int64          `json:"bytes"`
	GapBytes    int64          `json:"gap_bytes"`
	Gaps        int32          `json:"gaps"`
	TruncBytes  int64          `json:"trunc_bytes"`
	Incomplete  bool           `json:"incomplete"`
	Segments    int32          `json:"segments"`
	Writes      int32          `json:"writes"`
	End         string         `json:"end"`
	Conn        uint64         `json:"conn"`
	Index       uint32         `json:"index"`
	Seq         uint32         `json:"seq"`
	Fingerprint string         `json:"fingerprint"`
	FPLen       int            `json:"fp_len"`
	Sightings   []sightingJSON `json:"sightings"`
	Ordinal     uint32         `json:"ordinal"`
	Stream      uint64         `json:"stream"`
	Label       string         `json:"label"`
	Status      int            `json:"status"`
	IDs         []idJSON       `json:"ids,omitempty"`
	Tokens      []string       `json:"tokens,omitempty"`
}

type idJSON struct {
	Source string `json:"source"`
	Value  string `json:"value"`
}

// MessageJSON writes m to w as one line of the messages JSON Lines format.
func MessageJSON(w io.Writer, m *Message) error {
	j := messageJSON{Src: m.Src.String(), Dst: m.Dst.String(), Proto: m.Proto.String(), App: m.App.String(),
		Kind: m.Kind.String(), CallID: m.Call.String(), Bytes: m.Bytes, GapBytes: m.GapBytes, Gaps: m.Gaps,
		TruncBytes: m.TruncBytes, Incomplete: m.Incomplete, Segments: m.Segments, Writes: m.Writes,
		End: m.End.String(), Conn: m.Conn, Index: m.Index, Seq: m.Seq,
		Fingerprint: string(appendHex16(nil, m.Fingerprint)), FPLen: m.FingerprintLen,
		Sightings: make([]sightingJSON, len(m.Sightings)),
		Ordinal:   m.Ordinal, Stream: m.Stream, Label: m.Label, Status: m.Status}
	if ev := m.Evidence; ev != nil {
		for _, id := range ev.IDs {
			j.IDs = append(j.IDs, idJSON{id.Source, id.Value})
		}
		for _, t := range ev.Tokens {
			j.Tokens = append(j.Tokens, string(appendHex16(nil, t)))
		}
	}
	if s := m.SenderSide(); s != nil {
		j.SendTS = &s.First
	}
	if s := m.ReceiverSide(); s != nil {
		j.RecvTS = &s.Last
	}
	for i, s := range m.Sightings {
		j.Sightings[i] = sightingJSON{Point: s.Point.String(), Sniffer: uint16(s.Point.Sniffer), Interface: s.Point.Interface,
			TTL: s.TTL, FirstNS: s.First, LastNS: s.Last, FirstBytes: s.FirstBytes, Bytes: s.Bytes,
			Segments: s.Segments, Repeats: s.Repeats}
	}
	return json.NewEncoder(w).Encode(&j)
}

// AppendConnTSV appends cs as one line of the connections TSV format.
// handshake_rtt_ns is the smallest handshake round trip over the capture
// points ("-" when none saw a complete handshake).
func AppendConnTSV(b []byte, cs *ConnStats) []byte {
	tab := func() { b = append(b, '\t') }
	b = appendUint(b, cs.Conn)
	tab()
	b = append(b, cs.Proto...)
	tab()
	b = cs.Client.AppendTo(b)
	tab()
	b = cs.Server.AppendTo(b)
	tab()
	b = append(b, cs.Caller...)
	tab()
	b = appendBool(b, cs.MidStream)
	for _, v := range []int64{cs.StartNS, cs.EndNS} {
		tab()
		b = appendInt(b, v)
	}
	tab()
	b = append(b, cs.End...)
	for _, v := range []int64{cs.ClientPackets, cs.ServerPackets, cs.ClientBytes, cs.ServerBytes,
		cs.ClientMessages, cs.ServerMessages, cs.Gaps, cs.GapBytes, cs.RetransSegs, cs.RetransBytes} {
		tab()
		b = appendInt(b, v)
	}
	tab()
	if len(cs.Handshake) == 0 {
		b = append(b, '-')
	} else {
		best := cs.Handshake[0].RTTNS
		for _, h := range cs.Handshake[1:] {
			best = min(best, h.RTTNS)
		}
		b = appendInt(b, best)
	}
	tab()
	b = appendInt(b, cs.RTT.N)
	for _, v := range []int64{cs.RTT.MinNS, cs.RTT.P50NS, cs.RTT.MaxNS} {
		tab()
		if cs.RTT.N == 0 {
			b = append(b, '-')
		} else {
			b = appendInt(b, v)
		}
	}
	for _, r := range []Rate{cs.ClientThroughput, cs.ServerThroughput} {
		tab()
		b = appendInt(b, r.N)
		for _, v := range []float64{r.P50, r.Max, r.Aggregate} {
			tab()
			if r.N == 0 {
				b = append(b, '-')
			} else {
				b = strconv.AppendFloat(b, v, 'f', 0, 64)
			}
		}
	}
	b = appendPassive(b, cs)
	return append(b, '\n')
}

// appendPassive appends the passive round trips of the point that
// measured both halves with the most samples (or, if none did, the most
// samples), and the windows.
func appendPassive(b []byte, cs *ConnStats) []byte {
	tab := func() { b = append(b, '\t') }
	dash := func() { tab(); b = append(b, '-') }
	p := BestPoint(cs.Points)
	if p == nil {
		for range 8 {
			dash()
		}
	} else {
		tab()
		b = append(b, p.Point...)
		tab()
		if rtt, ok := p.RTT(); ok {
			b = appendInt(b, rtt)
		} else {
			b = append(b, '-')
		}
		for _, h := range []*HalfRTT{&p.ToClient, &p.ToServer} {
			tab()
			b = appendInt(b, h.N)
			if h.N == 0 {
				dash()
				dash()
				continue
			}
			tab()
			b = appendInt(b, h.MinNS)
			tab()
			b = appendInt(b, h.P50NS)
		}
	}
	for _, w := range []Window{cs.ClientWindow, cs.ServerWindow} {
		tab()
		b = appendInt(b, int64(w.MSS))
		tab()
		if w.MaxBytes < 0 {
			b = append(b, '-')
		} else {
			b = appendInt(b, w.MaxBytes)
		}
	}
	return b
}

// ConnJSON writes cs to w as one line of the connections JSON Lines format.
func ConnJSON(w io.Writer, cs *ConnStats) error {
	c := *cs
	if c.Handshake == nil {
		c.Handshake = []HandshakeRTT{} // always an array in the format
	}
	if c.Points == nil {
		c.Points = []PointRTT{}
	}
	return json.NewEncoder(w).Encode(&c)
}
