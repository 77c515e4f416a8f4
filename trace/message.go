package trace

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Timestamp is a point in time in integer nanoseconds since the Unix epoch.
// NoTime marks a timestamp that is not known.
type Timestamp int64

// NoTime is the Timestamp of an event nobody observed.
const NoTime Timestamp = math.MinInt64

// Known reports whether t is a real timestamp rather than NoTime.
func (t Timestamp) Known() bool { return t != NoTime }

// Kind says whether a message is an RPC call, its return, or neither known.
type Kind uint8

// The message kinds.
const (
	KindUnknown Kind = iota // not known to be a call or a return
	KindCall                // a request that expects a RETURN
	KindReturn              // the answer to a CALL
)

// String returns "CALL", "RETURN" or "-".
func (k Kind) String() string {
	switch k {
	case KindCall:
		return "CALL"
	case KindReturn:
		return "RETURN"
	}
	return "-"
}

// ParseKind parses the names String returns, case-insensitively, and also
// accepts Project 5's CALL_SENT and RET_SENT and the empty string (unknown).
func ParseKind(s string) (Kind, error) {
	switch strings.ToUpper(s) {
	case "CALL", "CALL_SENT", "C":
		return KindCall, nil
	case "RETURN", "RET", "RET_SENT", "R":
		return KindReturn, nil
	case "-", "", "UNKNOWN", "?":
		return KindUnknown, nil
	}
	return KindUnknown, fmt.Errorf("unknown message kind %q", s)
}

// Proto is the transport a message travelled on.
type Proto uint8

// The transports.
const (
	ProtoUnknown Proto = iota
	ProtoTCP
	ProtoUDP
	ProtoUnix // UNIX-domain socket (stream or datagram)
	ProtoOther
)

var protoNames = [...]string{"-", "tcp", "udp", "unix", "other"}

// String returns the lower-case protocol name, or "-" when unknown.
func (p Proto) String() string {
	if int(p) < len(protoNames) {
		return protoNames[p]
	}
	return "-"
}

// IP protocol numbers (IANA) of the transports that have ports: how a NAT
// table names a translation's transport (nat.Mapping.Proto, the proto of
// reconcile.CanonicalFunc), so stages that do not decode packets can name
// it too. They equal pcapio.ProtoTCP and pcapio.ProtoUDP.
const (
	IPProtoTCP uint8 = 6
	IPProtoUDP uint8 = 17
)

// ParseProto parses the names String returns, case-insensitively.
func ParseProto(s string) (Proto, error) {
	ls := strings.ToLower(s)
	for i, n := range protoNames {
		if ls == n {
			return Proto(i), nil
		}
	}
	if ls == "" || ls == "unknown" {
		return ProtoUnknown, nil
	}
	return ProtoUnknown, fmt.Errorf("unknown protocol %q", s)
}

// Sym is an interned string: an index into a Trace's Symbols. The zero Sym is
// the empty string, which stands for "not known".
type Sym uint32

// Message is one logical message: one application write from a sender to a
// receiver (or one datagram), as defined in WAP5 section 2.3. Strings are
// Syms of the Trace that holds the message.
type Message struct {
	// SendTS is when the first byte left the sender, on the sender's clock
	// (or that of the capture point nearest the sender); NoTime if unseen.
	SendTS Timestamp
	// RecvTS is when the last byte reached the receiver, on the receiver's
	// clock; NoTime if unseen.
	RecvTS Timestamp
	// Bytes is the size of the message's payload.
	Bytes int64
	// Src and Dst are the sending and receiving endpoints, such as
	// "10.0.0.1:80", "[fe80::1]:53" or "unix:/run/app.sock"; 0 if unknown.
	Src, Dst Sym
	// SrcNode and DstNode name the nodes at either end: hosts, roles such as
	// "db:5432", or processes such as "nginx[812]@web1".
	SrcNode, DstNode Sym
	// CallID pairs a CALL with its RETURN where the protocol gives it.
	CallID Sym
	// Kind is CALL, RETURN or unknown.
	Kind Kind
	// Proto is the transport.
	Proto Proto

	// Evidence beyond timing: what the capture and the syscall traces say
	// about the message besides its times. Every field is optional; its
	// zero value means unknown, and engines that do not use it ignore it.
	Evidence
}

// Evidence is what a trace knows about a message beyond its times,
// endpoints and kind: where it sits on its connection, which threads wrote
// and read it, the request identifier it carries and what its content is.
// Each field is exact where it is known (never a guess) and zero where not.
type Evidence struct {
	// Conn numbers the transport connection the message travelled on (one
	// TCP connection, one UDP flow), from 1, unique in the trace: messages
	// of one connection share it even where a later connection reuses the
	// same endpoints.
	Conn uint32
	// Seq is the message's ordinal among its connection's messages in its
	// direction, from 1: on a serial protocol the k-th request and the k-th
	// response pair.
	Seq uint32
	// Stream is the multiplexing key the protocol pairs a call and its
	// return by within the connection (an HTTP/2 stream id, a Kafka
	// correlation id); 0 where the protocol is serial or unknown.
	Stream uint64
	// Sender and Receiver are the threads that wrote and read the message,
	// from syscall traces; zero where the host was not traced.
	Sender, Receiver Task
	// ReqID is a propagated request identifier the message carries, as
	// "source:value" (for example "traceparent:4bf92f3577b34da6a3ce929d0e0e4736"
	// or "x-request-id:7f3a..."); 0 if none.
	ReqID Sym
	// Label is a short human description of the message ("GET /item/{id}",
	// "200", "redis GET", "SELECT users"); 0 if unknown.
	Label Sym
	// Tokens refers to the 64-bit hashes of the message's content tokens
	// (path segments, query values, keys, literals) in the trace's
	// Symbols (Symbols.Tokens); 0 when payloads were not visible or not
	// asked for. A reference keeps Message a comparable value.
	Tokens TokenRef
}

// Task is a thread of a process on the host that ran it: the process and
// thread ids a syscall trace recorded. The zero Task is unknown.
type Task struct {
	PID, TID int32
}

// Known reports whether the task was recorded.
func (t Task) Known() bool { return t.PID != 0 || t.TID != 0 }

// Time returns the timestamp engines sort and compare by when they use one
// clock: SendTS when known, else RecvTS.
func (m *Message) Time() Timestamp {
	if m.SendTS.Known() {
		return m.SendTS
	}
	return m.RecvTS
}

// Trace is an in-memory message trace with the symbol table its messages
// refer to and what the producer learned about it.
type Trace struct {
	Messages []Message
	Syms     Symbols
	Meta     Meta
}

// Str returns the string a Sym of this trace stands for.
func (t *Trace) Str(id Sym) string { return t.Syms.String(id) }

// Intern interns s in the trace's symbol table.
func (t *Trace) Intern(s string) Sym { return t.Syms.Intern(s) }

// Meta is what the stages that produced a trace learned about it as a whole.
type Meta struct {
	// Source says what produced the trace ("reconcile", "gen", a file name).
	Source string `json:"source,omitempty"`
	// SingleClock says every message carries one timestamp taken on one
	// clock (Project 5 traces, gen in single-timestamp mode): SendTS and
	// RecvTS are the same instant, so there is no network delay to measure.
	// In other traces SendTS == RecvTS is a real measurement (a message seen
	// whole by one capture point), a network delay of zero.
	SingleClock bool `json:"single_clock,omitempty"`
	// Offsets are clock offsets of nodes against a reference clock.
	Offsets []Offset `json:"clock_offsets,omitempty"`
	// Aliases maps endpoints seen under another name (NAT) to the real ones.
	Aliases []Alias `json:"aliases,omitempty"`
	// Accounting holds the counters of the stages that produced the trace.
	Accounting []Count `json:"accounting,omitempty"`
	// Warnings are things a user must see about the trace.
	Warnings []string `json:"warnings,omitempty"`
	// Clocks are the offsets of the clocks the timestamps were taken on
	// (each sniffer's, each syscall-traced host's) against the reference
	// clock; Offsets derive from them.
	Clocks []Clock `json:"clocks,omitempty"`
	// Links are the network between the nodes as the captures showed it:
	// passive round trips, windows and rates per pair of nodes (see Link).
	Links []Link `json:"links,omitempty"`
}

// Clock is the estimated offset of one clock that timestamps of a trace
// were taken on, a sniffer's or a syscall-traced host's, against a
// reference clock: reference time = local time - OffsetNS for a clock
// that does not drift; for one that drifts (DriftKnown), at reference
// time r the clock reads r + OffsetNS + DriftPPM·1e-6·(r - EpochNS),
// plus the steps it made before r.
type Clock struct {
	// Name names the clock: a sniffer's name or a host's name.
	Name string `json:"name"`
	// Kind is "sniffer" or "host".
	Kind      string `json:"kind"`
	Reference string `json:"reference"`
	// Known is false when nothing relates the clock to the reference.
	Known         bool  `json:"known"`
	OffsetNS      int64 `json:"offset_ns"`
	UncertaintyNS int64 `json:"uncertainty_ns"`
	Samples       int   `json:"samples"`
	// Method says how the offset was found: "reference", "given",
	// "symmetric" or "one-way" (pcapio, from packets two sniffers share),
	// "messages" (reconcile, from messages and syscalls at both ends).
	Method string `json:"method,omitempty"`
	// EpochNS is the reference time at which OffsetNS holds, when the
	// clock's drift was estimated (DriftKnown).
	EpochNS int64 `json:"epoch_ns,omitempty"`
	// DriftKnown says a drift was estimated (the samples spanned long
	// enough); DriftPPM is how fast the clock gains on the reference, in
	// parts per million, and DriftUncertaintyPPM bounds its error.
	DriftKnown          bool    `json:"drift_known,omitempty"`
	DriftPPM            float64 `json:"drift_ppm,omitempty"`
	DriftUncertaintyPPM float64 `json:"drift_uncertainty_ppm,omitempty"`
	// Steps are where the clock stepped (an NTP adjustment), in time
	// order.
	Steps []ClockStep `json:"steps,omitempty"`
}

// ClockStep is a step of a clock: at reference time AtNS its offset
// jumped by ByNS.
type ClockStep struct {
	AtNS int64 `json:"at_ns"`
	ByNS int64 `json:"by_ns"`
}

// Offset is the estimated offset of one node's clock against a reference:
// reference time = local time - OffsetNS.
type Offset struct {
	Node      string `json:"node"`
	Reference string `json:"reference"`
	// Known is false when the node shares nothing with the reference.
	Known         bool  `json:"known"`
	OffsetNS      int64 `json:"offset_ns"`
	UncertaintyNS int64 `json:"uncertainty_ns"`
	Samples       int   `json:"samples"`
	// AppliedNS is the offset already removed from the node's timestamps
	// (ApplyOffsets): the trace is on the reference clock and OffsetNS is
	// what is left (0). Zero when nothing was applied.
	AppliedNS int64 `json:"applied_ns,omitempty"`
}

// Alias records that an endpoint was also seen under another name, for
// example the virtual address of a NAT load balancer.
type Alias struct {
	// Outside is the endpoint as seen before the translation (e.g. the
	// virtual address:port of a load balancer); Inside is the real one.
	Outside string `json:"outside"`
	Inside  string `json:"inside"`
	// Kind is the translation kind: "dnat", "snat", "port", ...
	Kind string `json:"kind,omitempty"`
	// Direction says which side was seen first, e.g. "outside->inside".
	Direction string `json:"direction,omitempty"`
	// Matches counts the packets whose bodies matched across the
	// translation; Score is the mapping's confidence in [0,1].
	Matches int     `json:"matches,omitempty"`
	Score   float64 `json:"score,omitempty"`
	// FirstNS and LastNS bound when the mapping was seen.
	FirstNS int64 `json:"first_ns,omitempty"`
	LastNS  int64 `json:"last_ns,omitempty"`
}

// Count is one counter of one stage, for the accounting every stage keeps.
type Count struct {
	Stage string `json:"stage"`
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Count returns the counter name of stage, and whether the accounting
// holds it.
func (m *Meta) Count(stage, name string) (int64, bool) {
	for _, c := range m.Accounting {
		if c.Stage == stage && c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

// SkippedLines returns how many bad lines the reader of the trace skipped
// (0 for a trace not read from a file).
func (m *Meta) SkippedLines() int64 {
	n, _ := m.Count(StageTrace, CountSkippedLines)
	return n
}

// SetCount sets the counter of a stage, replacing one of the same stage
// and name (a trace read from a file that an earlier read wrote carries the
// earlier counts).
func (m *Meta) SetCount(stage, name string, v int64) {
	for i := range m.Accounting {
		if m.Accounting[i].Stage == stage && m.Accounting[i].Name == name {
			m.Accounting[i].Value = v
			return
		}
	}
	m.Accounting = append(m.Accounting, Count{Stage: stage, Name: name, Value: v})
}

// OffsetOf returns the known clock offset of node in nanoseconds, or 0 and
// false if the trace does not know it.
func (m *Meta) OffsetOf(node string) (int64, bool) {
	for _, o := range m.Offsets {
		if o.Node == node && o.Known {
			return o.OffsetNS, true
		}
	}
	return 0, false
}

// DriftText describes the clock's drift and steps for people, "" when
// neither was estimated: "drift +40.02 ± 0.31 ppm", then ", 1 step:
// +2ms at 12:00:31.000000000" (steps at reference times, UTC).
func (c *Clock) DriftText() string {
	var parts []string
	if c.DriftKnown {
		parts = append(parts, fmt.Sprintf("drift %+.2f ± %.2f ppm", c.DriftPPM, c.DriftUncertaintyPPM))
	}
	if n := len(c.Steps); n > 0 {
		s := fmt.Sprintf("%d step", n)
		if n > 1 {
			s += "s"
		}
		var at []string
		for _, st := range c.Steps {
			by := time.Duration(st.ByNS).String()
			if st.ByNS >= 0 {
				by = "+" + by
			}
			at = append(at, by+" at "+time.Unix(0, st.AtNS).UTC().Format("15:04:05.000000000"))
		}
		parts = append(parts, s+": "+strings.Join(at, ", "))
	}
	return strings.Join(parts, ", ")
}
