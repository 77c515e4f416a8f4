// Package clientlog reads the testbed client's log of its requests
// (RUN/logs/client.jsonl, written by tbload): each request's id, the
// times it was sent and answered, and why it failed if it did. The
// testbed's validation tools (tbwhatif, tbwait) share it.
package clientlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Request is one request of the client's log.
type Request struct {
	ID     int    `json:"id"`
	SendNS int64  `json:"send_ns"` // Unix ns when the client sent it
	RecvNS int64  `json:"recv_ns"` // Unix ns when its answer (or failure) came
	Err    string `json:"err"`     // why it failed; empty when answered
}

// Latency is the request's latency as the client measured it (ns).
func (r Request) Latency() int64 { return r.RecvNS - r.SendNS }

// Log is a run's client log: its requests in the log's order and how many
// lines were not a request (a line cut short when the client was stopped).
type Log struct {
	Requests []Request
	Skipped  int
}

// Path is where a run directory keeps the client's log.
func Path(runDir string) string { return filepath.Join(runDir, "logs", "client.jsonl") }

// Read reads run directory runDir's client log.
func Read(runDir string) (Log, error) {
	f, err := os.Open(Path(runDir))
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	l, err := Parse(f)
	if err != nil {
		return Log{}, fmt.Errorf("%s: %w", Path(runDir), err)
	}
	return l, nil
}

// Parse reads a client log from r. Blank lines are ignored; lines that are
// not a JSON object are counted in Skipped.
func Parse(r io.Reader) (Log, error) {
	var l Log
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var q Request
		if json.Unmarshal(b, &q) != nil {
			l.Skipped++
			continue
		}
		l.Requests = append(l.Requests, q)
	}
	if err := sc.Err(); err != nil {
		return l, fmt.Errorf("after line %d: %w", line, err)
	}
	return l, nil
}

// Answered is the log's requests that did not fail, in the log's order.
func (l Log) Answered() []Request {
	var out []Request
	for _, q := range l.Requests {
		if q.Err == "" {
			out = append(out, q)
		}
	}
	return out
}

// Span is the first send and the last answer among rs (Unix ns; 0, 0
// when rs is empty).
func Span(rs []Request) (first, last int64) {
	for _, q := range rs {
		if first == 0 || q.SendNS < first {
			first = q.SendNS
		}
		last = max(last, q.RecvNS)
	}
	return first, last
}
