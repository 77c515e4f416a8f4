package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is a generator configuration: the system's nodes, the tracelets
// (path templates) its clients run, and how the trace is observed. It is
// read from YAML or JSON by ParseConfig; docs/gen.md describes every field.
type Config struct {
	// Name and Description say what the configuration models.
	Name        string `yaml:"name,omitempty"`
	Description string `yaml:"description,omitempty"`
	// Seed seeds the random generator; equal configs give equal traces.
	Seed uint64 `yaml:"seed,omitempty"`
	// Start is the time of the first instance, RFC 3339 (default
	// 2024-01-01T00:00:00Z).
	Start string `yaml:"start,omitempty"`
	// Duration stops clients from starting instances after Start+Duration.
	// Instances, when set, stops after that many instances instead.
	Duration  Duration `yaml:"duration,omitempty"`
	Instances int      `yaml:"instances,omitempty"`
	// Messages, when set, stops clients from starting instances once that
	// many messages were generated.
	Messages int `yaml:"messages,omitempty"`
	// Clients is how many clients run tracelets in parallel, each waiting a
	// uniformly random Think time between the end of one instance and the
	// start of its next.
	Clients int   `yaml:"clients,omitempty"`
	Think   Range `yaml:"think,omitempty"`
	// Rate, when set, makes the clients open-loop: instances of the shared
	// tracelets start as a Poisson process of Rate per second, each from
	// one of the Clients client hosts picked at random, whatever the
	// instances in progress (Think is then unused). Compress divides every
	// time between two starts (default 1): the same instances at Compress
	// times the load, as TraceWeaver compresses its traces.
	Rate     float64 `yaml:"rate,omitempty"`
	Compress float64 `yaml:"compress,omitempty"`
	// ClientNet is the prefix client addresses are taken from (default
	// 10.9.0.0/16).
	ClientNet string `yaml:"client_net,omitempty"`
	// Names is "name" (node names as configured, the default) or "addr"
	// (nodes named by their IP address, as a capture pipeline names them).
	Names string `yaml:"names,omitempty"`
	// Timestamps is "both" (send at the sender's clock, receive at the
	// receiver's, the default) or "single" (one timestamp per message, the
	// send time at the sender's clock, as Project 5's traces have).
	Timestamps string `yaml:"timestamps,omitempty"`
	// CallIDs gives every CALL and its RETURN a call id (default true).
	CallIDs *bool `yaml:"call_ids,omitempty"`
	// Defaults are the delays and sizes of calls and messages that do not
	// set their own.
	Defaults Defaults `yaml:"defaults,omitempty"`
	// DelayScale multiplies the standard deviation of every delay (Project
	// 5 Figure 20); nil means 1, 0 makes every delay its mean.
	DelayScale *float64 `yaml:"delay_scale,omitempty"`
	// Skew shifts the clock of a node (the skewer, Project 5 section
	// 7.5.6): its timestamps read true time + skew. "CLIENT" skews every
	// client.
	Skew map[string]Duration `yaml:"skew,omitempty"`
	// ClockSpread gives every node and every client host a clock offset of
	// its own, drawn uniformly from [-ClockSpread, ClockSpread] and added
	// to its Skew: hosts whose clocks disagree.
	ClockSpread Duration `yaml:"clock_spread,omitempty"`
	// Resolution truncates every timestamp of the trace to a multiple of
	// it, as a tracer with coarse timestamps does (1ms: milliseconds).
	Resolution Duration `yaml:"resolution,omitempty"`
	// Untraced names the nodes ("CLIENT": every client) whose timestamps
	// nobody took: messages they send have no send time and messages they
	// receive no receive time.
	Untraced []string `yaml:"untraced,omitempty"`
	// Drop models message loss at the sniffer.
	Drop Drop `yaml:"drop,omitempty"`
	// Sniffers are the capture points of the synthetic captures (wirepath
	// gen --pcap); none means one mirror that sees everything.
	Sniffers []Sniffer `yaml:"sniffers,omitempty"`
	// Evidence asks for what the trace knows beyond timing (the messages'
	// trace.Evidence) and makes --pcap payloads real protocol messages
	// that carry it.
	Evidence *EvidenceSpec `yaml:"evidence,omitempty"`
	// Nodes are the servers, by name.
	Nodes map[string]NodeSpec `yaml:"nodes"`
	// Tracelets are the path templates.
	Tracelets []*Tracelet `yaml:"tracelets"`
}

// Defaults are the delays and sizes used where a template sets none.
type Defaults struct {
	// Delay is the time at the sender between the arrival of the causing
	// message and the send of a call or message.
	Delay *Gauss `yaml:"delay,omitempty"`
	// Reply is the time at a callee between the arrival of the message
	// that completes its work and the send of its RETURN.
	Reply *Gauss `yaml:"reply,omitempty"`
	// Net is the network delay of every message.
	Net *Gauss `yaml:"net,omitempty"`
	// CallBytes and ReplyBytes are message sizes.
	CallBytes  int `yaml:"call_bytes,omitempty"`
	ReplyBytes int `yaml:"reply_bytes,omitempty"`
}

// Drop is the sniffer-queue loss model of Project 5 section 7.5.5: the
// sniffer captures at most Rate messages per second and holds at most Queue
// messages waiting; a message that arrives at a full queue is lost, which
// makes losses bursty. Random adds independent loss with that probability.
type Drop struct {
	Rate   float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	Queue  int     `yaml:"queue,omitempty" json:"queue,omitempty"`
	Random float64 `yaml:"random,omitempty" json:"random,omitempty"`
}

// NodeSpec is one server: its address and listening port.
type NodeSpec struct {
	Addr  string `yaml:"addr,omitempty"`
	Port  int    `yaml:"port,omitempty"`
	Proto string `yaml:"proto,omitempty"`
	// Replicas makes the node a group of that many hosts, NAME-1 to
	// NAME-N, at consecutive addresses from Addr: a call to NAME goes to
	// one of them picked at random (never the caller itself).
	Replicas int `yaml:"replicas,omitempty"`
	// Threads bounds how many calls the node serves at once: a call that
	// arrives while all its threads are busy waits for the first to free
	// (0: no bound).
	Threads int `yaml:"threads,omitempty"`
	// Traced says the node's syscalls were traced: the messages its
	// threads send and receive carry their process and thread ids
	// (trace.Evidence Sender and Receiver).
	Traced bool `yaml:"traced,omitempty"`
	// EventLoop makes the node one event loop (a Node.js process): it
	// serves any number of calls at once, interleaved, all on one thread,
	// so a traced event loop's messages all carry the same thread id.
	// It excludes Threads.
	EventLoop bool `yaml:"event_loop,omitempty"`
	// Pool makes every other node call this one over a pool of at most
	// Pool persistent connections of its own: calls from different
	// requests share them, one call at a time each, and a call waits when
	// all are busy. Clients always open a connection per call.
	Pool int `yaml:"pool,omitempty"`
	// IDs is the request identifier calls to this node carry:
	// "x-request-id" or "traceparent" (none when empty).
	IDs string `yaml:"ids,omitempty"`
	// Protocol is what the node speaks, for labels and --pcap payloads:
	// http (the default), redis or memcached.
	Protocol string `yaml:"protocol,omitempty"`
}

// EvidenceSpec says which evidence the generated trace carries beyond the
// request identifiers nodes ask for (NodeSpec.IDs) and the threads of
// traced nodes.
type EvidenceSpec struct {
	// Conns numbers each message's connection and its place on it
	// (trace.Evidence Conn and Seq).
	Conns bool `yaml:"conns,omitempty"`
	// Labels gives every message a label: a call's own, or one after its
	// callee's protocol ("GET /search", "redis GET"), and its return's
	// status ("200", "500" for a failure).
	Labels bool `yaml:"labels,omitempty"`
	// Tokens gives messages content tokens.
	Tokens *TokenSpec `yaml:"tokens,omitempty"`
}

// TokenSpec is the content-token model: every request draws PerRequest
// tokens from a vocabulary of Vocabulary; a call carries each token of
// the call it was made for (the request's, for the root) with probability
// Share, and its return each of the call's; every message adds Noise
// tokens drawn from a small vocabulary of NoiseVocabulary that every
// request shares. With Values, every request also draws one value (a
// query parameter, an item id) from a vocabulary of Values, carried as
// its other tokens are; a call marked Derive carries a key derived from
// it instead (Call.Derive).
type TokenSpec struct {
	PerRequest      int     `yaml:"per_request,omitempty"`
	Share           float64 `yaml:"share,omitempty"`
	Noise           int     `yaml:"noise,omitempty"`
	Vocabulary      int     `yaml:"vocabulary,omitempty"`
	NoiseVocabulary int     `yaml:"noise_vocabulary,omitempty"`
	Values          int     `yaml:"values,omitempty"`
}

// Tracelet is one path template. Exactly one of RPC and Messages is set.
type Tracelet struct {
	Name string `yaml:"name"`
	// Weight is the relative frequency with which clients pick this
	// tracelet (default 1).
	Weight float64 `yaml:"weight,omitempty"`
	// Clients, when set, gives the tracelet its own clients that run only
	// it, with their own Think time (maketrace's per-tracelet parallelism).
	Clients int    `yaml:"clients,omitempty"`
	Think   *Range `yaml:"think,omitempty"`
	// From makes an rpc tracelet's root call come from that node instead
	// of a client: background work no request caused (health checks,
	// periodic refreshes), over the same connection pools.
	From string `yaml:"from,omitempty"`
	// RPC is a call tree rooted at a call from the client.
	RPC *Call `yaml:"rpc,omitempty"`
	// Messages is a free-form list of messages.
	Messages []*MsgSpec `yaml:"messages,omitempty"`

	line int
}

// Call is one RPC of an rpc tracelet: a CALL from the caller to To and the
// RETURN back, with the calls the callee makes in between.
type Call struct {
	// To is the callee, possibly alternatives chosen per instance.
	To Choice `yaml:"to"`
	// Delay is the caller's delay before the CALL, after the arrival of the
	// message that causes it (ignored for the root call).
	Delay *Gauss `yaml:"delay,omitempty"`
	// DelayBy overrides Delay when the caller is the named node (for
	// example the added delay at one of two load-balanced web servers).
	DelayBy map[string]Gauss `yaml:"delay_by,omitempty"`
	// Reply is the callee's delay before the RETURN, after the arrival of
	// the CALL (no children) or of the last child RETURN.
	Reply *Gauss `yaml:"reply,omitempty"`
	// Net overrides the network delay of both messages.
	Net *Gauss `yaml:"net,omitempty"`
	// CallBytes and ReplyBytes override the sizes.
	CallBytes  int `yaml:"call_bytes,omitempty"`
	ReplyBytes int `yaml:"reply_bytes,omitempty"`
	// Parallel issues the children all at once (each Delay after the CALL
	// arrives) instead of one after another.
	Parallel bool `yaml:"parallel,omitempty"`
	// Prob makes the call optional: it is made with this probability (a
	// cache miss), else skipped (0 or 1: always made).
	Prob float64 `yaml:"prob,omitempty"`
	// Fail is the probability that the callee fails the call: it makes
	// none of its calls and returns an error after Reply, and every caller
	// up the tree stops making calls and returns an error too.
	Fail float64 `yaml:"fail,omitempty"`
	// Label is the call's label (default: after the callee's protocol).
	Label string `yaml:"label,omitempty"`
	// Derive makes the call carry, instead of the tokens of the call it
	// is made for, a key derived from that call's value token (a fixed
	// function of it, as a database key hashed from a query parameter),
	// and its noise; none when that call does not carry the value. It
	// needs evidence tokens with values (TokenSpec.Values).
	Derive bool `yaml:"derive,omitempty"`
	// Calls are the calls the callee makes.
	Calls []*Call `yaml:"calls,omitempty"`

	line int
}

// MsgSpec is one message of a free-form tracelet.
type MsgSpec struct {
	// ID names the message for After references.
	ID string `yaml:"id,omitempty"`
	// After is the ID of the earlier message whose arrival causes this
	// one; empty only for the first message.
	After string `yaml:"after,omitempty"`
	// From is the sender: CLIENT or a node for the first message; for the
	// others it is the receiver of After, and may be omitted.
	From string `yaml:"from,omitempty"`
	// To is the receiver, possibly alternatives.
	To    Choice `yaml:"to"`
	Delay *Gauss `yaml:"delay,omitempty"`
	Net   *Gauss `yaml:"net,omitempty"`
	Bytes int    `yaml:"bytes,omitempty"`
	// Kind is CALL, RETURN or "-" (the default).
	Kind string `yaml:"kind,omitempty"`

	line int
}

// Duration is a time.Duration written as a Go duration string ("50ms").
type Duration time.Duration

// Gauss is a normal distribution of durations, written "50ms", "50ms±5ms",
// "50ms+-5ms" or as a mapping {mean: 50ms, sd: 5ms}, plus an optional
// exponential tail of mean Exp, written "1ms+exp(2ms)", "1ms±100us+exp(2ms)"
// or {mean: 1ms, exp: 2ms}. The normal part is truncated at zero; the tail
// is added to it (it is not scaled by delay_scale).
type Gauss struct {
	Mean, SD, Exp time.Duration
}

// Range is a uniform distribution of durations, written "1s..3s", "2s" or
// {min: 1s, max: 3s}.
type Range struct {
	Min, Max time.Duration
}

// Alt is one alternative of a Choice.
type Alt struct {
	Name   string
	Weight float64
}

// Choice is a node name or weighted alternatives, written "WS1",
// "WS1|WS2" (equal weights) or "WS1:3|WS2:1".
type Choice []Alt

// ConfigError is a bad configuration, with the file and line where known.
type ConfigError struct {
	File string
	Line int // 1-based; 0 when not known
	Err  error
}

// Error formats the error as file:line: message.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("bad generator config")

// lineError carries a line number out of an UnmarshalYAML method.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func lineErrf(n *yaml.Node, format string, args ...any) error {
	return &lineError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

// Limits bound what a configuration may ask for, so that hostile input
// cannot make the generator run out of memory.
const (
	MaxClients      = 1 << 20
	MaxTemplateHops = 4096
	MaxDepth        = 64
	MaxNodes        = 1 << 16
)

// ParseConfig reads a configuration in YAML (or JSON, which is YAML) from
// r; file names it in errors. It checks every field and cross-reference, so
// that a Config it returns generates without errors other than its size
// limits.
func ParseConfig(r io.Reader, file string) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if err == io.EOF {
			return nil, &ConfigError{File: file, Err: fmt.Errorf("%w: empty", ErrConfig)}
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, &ConfigError{File: file, Err: fmt.Errorf("%w: more than one YAML document", ErrConfig)}
	}
	if err := c.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = file
			return nil, ce
		}
		return nil, &ConfigError{File: file, Err: err}
	}
	return &c, nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// yamlError turns an error of the YAML decoder into a ConfigError with the
// line it names.
func yamlError(file string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return &ConfigError{File: file, Line: le.line, Err: fmt.Errorf("%w: %s", ErrConfig, le.msg)}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	line := 0
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil && m[0] == 0 {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
		msg = msg[m[1]:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] + " (and more)"
	}
	return &ConfigError{File: file, Line: line, Err: fmt.Errorf("%w: %s", ErrConfig, msg)}
}

// checkKeys rejects keys of mapping n that are not allowed; yaml.v3 does
// not check the fields of types with their own UnmarshalYAML.
func checkKeys(n *yaml.Node, what string, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return lineErrf(n, "%s must be a mapping", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			return lineErrf(k, "unknown field %q in %s (known: %s)", k.Value, what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// UnmarshalYAML decodes a tracelet, rejecting unknown fields.
func (t *Tracelet) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "tracelet", "name", "weight", "clients", "think", "from", "rpc", "messages"); err != nil {
		return err
	}
	type plain Tracelet
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*t = Tracelet(p)
	t.line = n.Line
	return nil
}

// UnmarshalYAML decodes a call, rejecting unknown fields.
func (c *Call) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "call", "to", "delay", "delay_by", "reply", "net", "call_bytes", "reply_bytes", "parallel", "prob", "fail", "label", "derive", "calls"); err != nil {
		return err
	}
	type plain Call
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = Call(p)
	c.line = n.Line
	return nil
}

// UnmarshalYAML decodes a message template, rejecting unknown fields.
func (m *MsgSpec) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "message", "id", "after", "from", "to", "delay", "net", "bytes", "kind"); err != nil {
		return err
	}
	type plain MsgSpec
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*m = MsgSpec(p)
	m.line = n.Line
	return nil
}

func parseDur(n *yaml.Node, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, lineErrf(n, "bad duration %q (write it with a unit, e.g. 50ms)", s)
	}
	return d, nil
}

func scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", lineErrf(n, "%s must be a string", what)
	}
	return n.Value, nil
}

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	s, err := scalar(n, "a duration")
	if err != nil {
		return err
	}
	v, err := parseDur(n, s)
	*d = Duration(v)
	return err
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML parses "mean", "mean±sd", "mean+-sd", any of those with
// "+exp(tail)" after it, or {mean, sd, exp}.
func (g *Gauss) UnmarshalYAML(n *yaml.Node) error {
	*g = Gauss{}
	if n.Kind == yaml.MappingNode {
		d, err := durationFields(n, "delay", "mean", "sd", "exp")
		if err != nil {
			return err
		}
		*g = Gauss{Mean: d[0], SD: d[1], Exp: d[2]}
		return g.check(n)
	}
	s, err := scalar(n, "a delay")
	if err != nil {
		return err
	}
	if i := strings.Index(s, "+exp("); i >= 0 {
		tail := s[i+len("+exp("):]
		if !strings.HasSuffix(tail, ")") {
			return lineErrf(n, "bad delay %q: write the tail as +exp(2ms)", s)
		}
		if g.Exp, err = parseDur(n, strings.TrimSuffix(tail, ")")); err != nil {
			return err
		}
		s = s[:i]
	}
	mean, sd, ok := strings.Cut(s, "±")
	if !ok {
		mean, sd, ok = strings.Cut(s, "+-")
	}
	if g.Mean, err = parseDur(n, mean); err != nil {
		return err
	}
	g.SD = 0
	if ok {
		if g.SD, err = parseDur(n, sd); err != nil {
			return err
		}
	}
	return g.check(n)
}

// durationFields reads a mapping node holding durations under the given
// keys (any may be absent: zero), such as {mean, sd} or {min, max}, in the
// order of the keys; what names the node in errors.
func durationFields(n *yaml.Node, what string, keys ...string) ([]time.Duration, error) {
	if err := checkKeys(n, what, keys...); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(keys))
	for i := 0; i+1 < len(n.Content); i += 2 {
		s, err := scalar(n.Content[i+1], n.Content[i].Value)
		if err != nil {
			return nil, err
		}
		d, err := parseDur(n.Content[i+1], s)
		if err != nil {
			return nil, err
		}
		out[slices.Index(keys, n.Content[i].Value)] = d
	}
	return out, nil
}

func (g *Gauss) check(n *yaml.Node) error {
	if g.Mean < 0 || g.SD < 0 || g.Exp < 0 {
		return lineErrf(n, "delays must not be negative")
	}
	return nil
}

// String writes g as "mean±sd+exp(tail)", leaving out a zero sd or tail.
func (g Gauss) String() string {
	s := g.Mean.String()
	if g.SD != 0 {
		s += "±" + g.SD.String()
	}
	if g.Exp != 0 {
		s += "+exp(" + g.Exp.String() + ")"
	}
	return s
}

// MarshalYAML writes g as its String.
func (g Gauss) MarshalYAML() (any, error) { return g.String(), nil }

// UnmarshalYAML parses "min..max", "d" or {min, max}.
func (r *Range) UnmarshalYAML(n *yaml.Node) error {
	*r = Range{}
	if n.Kind == yaml.MappingNode {
		d, err := durationFields(n, "range", "min", "max")
		if err != nil {
			return err
		}
		r.Min, r.Max = d[0], d[1]
	} else {
		s, err := scalar(n, "a range")
		if err != nil {
			return err
		}
		lo, hi, ok := strings.Cut(s, "..")
		if r.Min, err = parseDur(n, lo); err != nil {
			return err
		}
		r.Max = r.Min
		if ok {
			if r.Max, err = parseDur(n, hi); err != nil {
				return err
			}
		}
	}
	if r.Min < 0 || r.Max < r.Min {
		return lineErrf(n, "range must have 0 <= min <= max")
	}
	return nil
}

// String writes r as "min..max".
func (r Range) String() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.Min.String() + ".." + r.Max.String()
}

// MarshalYAML writes r as its String.
func (r Range) MarshalYAML() (any, error) { return r.String(), nil }

// IsZero reports whether r is the zero range (for omitempty).
func (r Range) IsZero() bool { return r == Range{} }

// ParseChoice parses "A", "A|B" or "A:3|B:1".
func ParseChoice(s string) (Choice, error) {
	var c Choice
	for alt := range strings.SplitSeq(s, "|") {
		alt = strings.TrimSpace(alt)
		name, w, hasW := strings.Cut(alt, ":")
		a := Alt{Name: name, Weight: 1}
		if hasW {
			v, err := strconv.ParseFloat(w, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("bad weight %q in %q", w, s)
			}
			a.Weight = v
		}
		if err := checkName(a.Name); err != nil {
			return nil, err
		}
		c = append(c, a)
	}
	return c, nil
}

// UnmarshalYAML parses a Choice.
func (c *Choice) UnmarshalYAML(n *yaml.Node) error {
	s, err := scalar(n, "a node name")
	if err != nil {
		return err
	}
	v, err := ParseChoice(s)
	if err != nil {
		return lineErrf(n, "%v", err)
	}
	*c = v
	return nil
}

// String writes c in the syntax ParseChoice reads.
func (c Choice) String() string {
	parts := make([]string, len(c))
	equal := true
	for _, a := range c {
		if a.Weight != c[0].Weight {
			equal = false
		}
	}
	for i, a := range c {
		parts[i] = a.Name
		if !equal {
			parts[i] += ":" + strconv.FormatFloat(a.Weight, 'g', -1, 64)
		}
	}
	return strings.Join(parts, "|")
}

// MarshalYAML writes c as its String.
func (c Choice) MarshalYAML() (any, error) { return c.String(), nil }

// checkName accepts node names that survive in signatures, endpoints and
// Choice syntax.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty node name")
	}
	if len(name) > 64 {
		return fmt.Errorf("node name %.20q... is too long", name)
	}
	for _, r := range name {
		ok := r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !ok {
			return fmt.Errorf("node name %q: use letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}
