// Package truth is the exact ground truth of a real system's run: the
// requests it served, each as the tree of its messages, and the calls no
// request caused (background), as the testbed (testbed/) records them from
// the services' own logs.
//
// Stage and contract: truth is read by `wirepath score` beside an engine's
// result and the trace the engine read; it is written by the testbed's
// truth builder (testbed/cmd/tbtruth). Each message is named by its
// connection (both endpoints, with the names on both sides of a NAT) and
// its ordinal on that connection in its direction, never by its timing, so
// that the truth does not depend on clocks. The format is JSON Lines,
// versioned, documented in docs/formats.md ("Ground truth of testbed runs").
package truth

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Version is the version of the format this package writes; it reads
// versions 1 and 2 (version 2 adds Message.Stream: calls multiplexed on
// their connection).
const Version = 2

// The directions of a message.
const (
	Call   = "CALL"
	Return = "RETURN"
)

// File is one truth file.
type File struct {
	Meta     Meta
	Conns    []Conn
	Requests []Request
	Messages []Message
}

// Meta describes the run.
type Meta struct {
	// Variant is the payload variant: "ids" (propagated request ids and
	// readable keys) or "opaque" (neither).
	Variant string `json:"variant"`
	// Tracing is "sniffed" or "preload" (a tier traced by the LD_PRELOAD
	// library instead of sniffed).
	Tracing  string `json:"tracing"`
	InFlight int    `json:"inflight"`
	// Requests is the number of requests the load generator was asked for.
	Requests int   `json:"requests"`
	Seed     int64 `json:"seed"`
	// WindowStartNS and WindowEndNS bound the capture: every message of
	// the truth lies within them (ns since the epoch, the hosts' clock).
	WindowStartNS int64 `json:"window_start_ns"`
	WindowEndNS   int64 `json:"window_end_ns"`
	// Sniffers are the capture points and what was done to their clocks.
	Sniffers []Sniffer `json:"sniffers,omitempty"`
	// Checks are the consistency checks the builder made, by name: how
	// many times each held and failed.
	Checks []Check `json:"checks,omitempty"`
}

// Sniffer is one capture point of the run.
type Sniffer struct {
	File string `json:"file"`
	// OffsetNS is added to every timestamp; DriftPPM makes the clock gain
	// that much after AnchorNS.
	OffsetNS int64   `json:"offset_ns"`
	DriftPPM float64 `json:"drift_ppm,omitempty"`
	AnchorNS int64   `json:"anchor_ns,omitempty"`
	// Loss is the probability with which each packet was dropped; Dropped
	// how many were.
	Loss      float64 `json:"loss,omitempty"`
	PacketsIn int     `json:"packets_in,omitempty"`
	Dropped   int     `json:"dropped,omitempty"`
}

// Check is one consistency check of the truth builder.
type Check struct {
	Name   string `json:"name"`
	Held   int    `json:"held"`
	Failed int    `json:"failed"`
}

// Conn is one connection (or UDP socket pair) as both of its ends named
// it.
type Conn struct {
	ID    int    `json:"id"`
	Proto string `json:"proto"`
	// Client and Server are the endpoints as the client saw them.
	Client string `json:"client"`
	Server string `json:"server"`
	// ClientInside and ServerInside are the names the server saw where a
	// NAT changed them (optional).
	ClientInside string `json:"client_inside,omitempty"`
	ServerInside string `json:"server_inside,omitempty"`
	// Caller and Callee are the tiers at either end (client, web, app,
	// redis, ...); CallerHost and CalleeHost the hosts.
	Caller     string `json:"caller"`
	Callee     string `json:"callee"`
	CallerHost string `json:"caller_host,omitempty"`
	CalleeHost string `json:"callee_host,omitempty"`
}

// Request is one request served, or one background call.
type Request struct {
	ID int `json:"id"`
	// Kind is the request's kind (item-hit, cart-miss, static, bad, ...;
	// bg-NAME for background jobs).
	Kind       string `json:"kind"`
	Background bool   `json:"background,omitempty"`
	Status     int    `json:"status,omitempty"`
	Path       string `json:"path,omitempty"`
	// Root is the id of the request's first CALL message.
	Root int `json:"root"`
	// Calls is the number of calls (CALL messages) in the request.
	Calls int `json:"calls"`
}

// Message is one message: one request or response on one connection.
type Message struct {
	ID      int `json:"id"`
	Request int `json:"request"`
	Conn    int `json:"conn"`
	// Ordinal is the message's position on its connection in its
	// direction, from 0: the n-th CALL and its RETURN share n, unless the
	// connection multiplexes calls (Stream is set): then the CALLs are
	// numbered in the order they were sent and the RETURNs in the order
	// they arrived.
	Ordinal int `json:"ordinal"`
	// Stream is the multiplexing key a CALL and its RETURN share on a
	// connection that carries several calls at once (the HTTP/2 stream
	// id); 0 on serial connections.
	Stream uint64 `json:"stream,omitempty"`
	// Dir is CALL (client to server) or RETURN.
	Dir string `json:"dir"`
	// Label is a human label (GET /item/{n}, redis GET, dns A, ...).
	Label string `json:"label"`
	// From and To are the sending and receiving tiers.
	From string `json:"from"`
	To   string `json:"to"`
	// SendNS and RecvNS are the times the sender and the receiver logged,
	// ns since the epoch; 0 when that end does not log with sub-millisecond
	// precision.
	SendNS int64 `json:"send_ns,omitempty"`
	RecvNS int64 `json:"recv_ns,omitempty"`
	// Parent is the message whose arrival at this message's sender caused
	// it (the result contract's hop parent); -1 for a request's root.
	Parent int `json:"parent"`
	// Call is the id of the CALL message of this message's call (its own
	// id for a CALL).
	Call int `json:"call"`
	// CallParent is the call (id of its CALL message) that the caller was
	// serving when it made this call; -1 for a root call.
	CallParent int `json:"call_parent"`
}

// Time returns the message's send time when known, else its receive time.
func (m *Message) Time() int64 {
	if m.SendNS != 0 {
		return m.SendNS
	}
	return m.RecvNS
}

type header struct {
	Version *int `json:"wirepath_testbed_truth"`
	Meta    Meta `json:"meta"`
}

type record struct {
	Type string `json:"type"`
}

type connRec struct {
	Type string `json:"type"`
	Conn
}

type requestRec struct {
	Type string `json:"type"`
	Request
}

type messageRec struct {
	Type string `json:"type"`
	Message
}

// Write writes f: the header, then connections, requests and messages.
func Write(w io.Writer, f *File) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	v := Version
	if err := enc.Encode(header{Version: &v, Meta: f.Meta}); err != nil {
		return err
	}
	for _, c := range f.Conns {
		if err := enc.Encode(connRec{"conn", c}); err != nil {
			return err
		}
	}
	for _, r := range f.Requests {
		if err := enc.Encode(requestRec{"request", r}); err != nil {
			return err
		}
	}
	for _, m := range f.Messages {
		if err := enc.Encode(messageRec{"msg", m}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ErrFormat is wrapped by every error about the content of a truth file.
var ErrFormat = errors.New("bad testbed truth")

// ParseError is an error at one line of a truth file.
type ParseError struct {
	File string
	Line int
	Err  error
}

// Error formats the error as FILE:LINE: problem.
func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// IsTruth reports whether the first bytes of a file are a truth header.
func IsTruth(prefix []byte) bool {
	var h header
	line := prefix
	for i, b := range prefix {
		if b == '\n' {
			line = prefix[:i]
			break
		}
	}
	return json.Unmarshal(line, &h) == nil && h.Version != nil
}

// ReadFile reads and checks a truth file.
func ReadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return Read(fh, path)
}

// Read reads and checks a truth file; name is used in errors.
func Read(r io.Reader, name string) (*File, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	f := &File{}
	line := 0
	bad := func(format string, a ...any) error {
		return &ParseError{File: name, Line: line, Err: fmt.Errorf("%w: "+format, append([]any{ErrFormat}, a...)...)}
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if line == 1 {
			var h header
			if err := json.Unmarshal(b, &h); err != nil || h.Version == nil {
				return nil, bad("no header line {\"wirepath_testbed_truth\": %d, ...}", Version)
			}
			if *h.Version != 1 && *h.Version != Version {
				return nil, bad("version %d, this build reads 1 to %d", *h.Version, Version)
			}
			f.Meta = h.Meta
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, bad("%v", err)
		}
		var err error
		switch rec.Type {
		case "conn":
			var c connRec
			err = json.Unmarshal(b, &c)
			f.Conns = append(f.Conns, c.Conn)
		case "request":
			var q requestRec
			err = json.Unmarshal(b, &q)
			f.Requests = append(f.Requests, q.Request)
		case "msg":
			var m messageRec
			err = json.Unmarshal(b, &m)
			f.Messages = append(f.Messages, m.Message)
		default:
			// later versions may add record types
		}
		if err != nil {
			return nil, bad("%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{File: name, Line: line, Err: err}
	}
	if line == 0 {
		return nil, bad("empty file")
	}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}
