package report

import (
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// RequestListVersion is the version of the request list's JSON Lines
// (docs/formats.md, "Request list").
// Version 2 adds background.
const RequestListVersion = 2

// The formats WriteRequests knows.
const (
	RequestsText  = "text"
	RequestsJSONL = "jsonl"
	RequestsCSV   = "csv"
)

// RequestFormats lists the formats of WriteRequests.
var RequestFormats = []string{RequestsText, RequestsJSONL, RequestsCSV}

// RequestRow is one request as `wirepath requests` lists it: what it was,
// when, how long it took, which pattern it took, how sure the engine is,
// and its messages (trace indices) and, when a merged capture was given,
// their frames and the Wireshark display filter that selects them.
type RequestRow struct {
	Engine string `json:"engine"`
	// Request numbers the request within its engine's list.
	Request int `json:"request"`
	// Pattern is the rank of the request's pattern (0 when the engine
	// gives none), Signature that pattern's signature; Instance is the
	// request's index among the pattern's listed instances (-1 for an
	// engine's own request).
	Pattern   int    `json:"pattern,omitempty"`
	Signature string `json:"signature,omitempty"`
	Instance  int    `json:"instance"`
	// Label is the root message's label, Status its reply's.
	Label  string `json:"label,omitempty"`
	Status string `json:"status,omitempty"`
	// StartNS is the root's send on the reference clock.
	StartNS    int64   `json:"start_ns"`
	LatencyUS  float64 `json:"latency_us"`
	Confidence float64 `json:"confidence"`
	// Calls counts the request's calls (a CALL and its RETURN are one).
	Calls int `json:"calls"`
	// Background marks an engine's tree of calls that no request made
	// (causal.Request.Background).
	Background bool `json:"background,omitempty"`
	// TraceID is the id of the request's trace in the OTLP export (32
	// hex digits): where Jaeger shows it (/trace/TRACEID).
	TraceID  string `json:"trace_id"`
	Messages []int  `json:"messages"`
	// Frames are the frame numbers of the messages in the merged capture;
	// Filter the display filter that selects them.
	Frames []int64 `json:"frames,omitempty"`
	Filter string  `json:"filter,omitempty"`
}

// ErrNoRequests is returned for a result whose requests cannot be listed:
// no engine requests, and no instances with a trace to time them.
var ErrNoRequests = errors.New("the result lists no requests or instances (run the assembly engine, or another with --instances -1, and give the trace)")

// RequestRows returns the requests of the results: the requests an engine
// assembled itself (Result.Requests) where the result has them, else
// every listed instance of every pattern, timed and labelled from the
// trace t (which must be the one the results were inferred from), in
// order of their start.
func RequestRows(rs []*causal.Result, t *trace.Trace) ([]RequestRow, error) {
	if t == nil {
		return nil, ErrNoRequests
	}
	var rows []RequestRow
	for _, res := range rs {
		reqs, err := exportRequests(res, t, 0)
		if err != nil {
			return nil, err
		}
		n := 0
		for i := range reqs {
			r := &reqs[i]
			if !r.Own && r.Instance < 0 && r.Pattern > 0 {
				continue // a mean instance is no request
			}
			rows = append(rows, requestRow(r, n))
			n++
		}
	}
	if len(rows) == 0 && len(rs) > 0 {
		if err := anyListed(rs); err != nil {
			return nil, err
		}
	}
	sortRows(rows)
	// An instance's number is its place in its engine's list by start.
	next := map[string]int{}
	for i := range rows {
		if rows[i].Instance >= 0 {
			rows[i].Request = next[rows[i].Engine]
			next[rows[i].Engine]++
		}
	}
	return rows, nil
}

// anyListed returns ErrNoRequests when no result lists an instance.
func anyListed(rs []*causal.Result) error {
	for _, res := range rs {
		if len(res.Requests) > 0 {
			return nil
		}
		for i := range res.Patterns {
			if len(res.Patterns[i].Instances) > 0 {
				return nil
			}
		}
	}
	return ErrNoRequests
}

func requestRow(r *request, n int) RequestRow {
	row := RequestRow{Engine: r.Engine, Request: n, Pattern: r.Pattern, Signature: r.Signature, Instance: r.Instance,
		Label: r.Label(), StartNS: r.Start(), LatencyUS: r.Latency(), Confidence: r.Confidence, Background: r.Background}
	tid := traceID(r)
	row.TraceID = hex.EncodeToString(tid[:])
	if r.Own || r.Pattern == 0 {
		row.Request, row.Instance = r.ID, -1
	}
	ret := returnsOf(r)
	for i := range r.Msgs {
		m := &r.Msgs[i]
		if m.Msg >= 0 {
			row.Messages = append(row.Messages, m.Msg)
		}
		if m.Call == i {
			row.Calls++
		}
	}
	if len(r.Msgs) > 0 && ret[0] >= 0 {
		row.Status = r.Msgs[ret[0]].Label
	}
	return row
}

// sortRows orders rows by start, then engine and request.
func sortRows(rows []RequestRow) {
	less := func(a, b *RequestRow) int {
		switch {
		case a.StartNS != b.StartNS:
			return cmpI(a.StartNS, b.StartNS)
		case a.Engine != b.Engine:
			return strings.Compare(a.Engine, b.Engine)
		}
		return a.Request - b.Request
	}
	slices.SortStableFunc(rows, func(a, b RequestRow) int { return less(&a, &b) })
}

func cmpI(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RequestFilter selects requests; its zero value selects every one.
type RequestFilter struct {
	// Patterns keeps the requests of these pattern ranks (none: all).
	Patterns []int
	// Label keeps the requests whose label (or, failing that, status)
	// it matches.
	Label *regexp.Regexp
	// MinLatency and MaxLatency bound the latency (0: no bound).
	MinLatency, MaxLatency time.Duration
	// From and To bound the start, ns since the epoch, To excluded (0:
	// no bound).
	From, To int64
}

// Keep reports whether the filter selects row.
func (f *RequestFilter) Keep(row *RequestRow) bool {
	if len(f.Patterns) > 0 {
		found := false
		for _, p := range f.Patterns {
			found = found || p == row.Pattern
		}
		if !found {
			return false
		}
	}
	if f.Label != nil && !f.Label.MatchString(row.Label) {
		return false
	}
	lat := time.Duration(row.LatencyUS * 1e3)
	if f.MinLatency > 0 && lat < f.MinLatency || f.MaxLatency > 0 && lat > f.MaxLatency {
		return false
	}
	return (f.From == 0 || row.StartNS >= f.From) && (f.To == 0 || row.StartNS < f.To)
}

// WriteRequests writes rows in format: text (an aligned table), jsonl (a
// header line {"wirepath_requests":1}, then a RequestRow per line) or csv
// (a header row, lists space-separated).
func WriteRequests(w io.Writer, format string, rows []RequestRow) error {
	switch format {
	case RequestsText:
		return writeRequestsText(w, rows)
	case RequestsJSONL:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]int{"wirepath_requests": RequestListVersion}); err != nil {
			return err
		}
		for i := range rows {
			if err := enc.Encode(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	case RequestsCSV:
		return writeRequestsCSV(w, rows)
	}
	return fmt.Errorf("unknown request list format %q (want one of %s)", format, strings.Join(RequestFormats, ", "))
}

// requestColumns are the CSV columns, in order.
var requestColumns = []string{"engine", "request", "pattern", "instance", "label", "status", "start", "start_ns",
	"latency_us", "confidence", "calls", "trace_id", "messages", "frames", "filter", "background"}

func writeRequestsCSV(w io.Writer, rows []RequestRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(requestColumns); err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		rec := []string{r.Engine, strconv.Itoa(r.Request), strconv.Itoa(r.Pattern), strconv.Itoa(r.Instance),
			r.Label, r.Status, startText(r.StartNS), strconv.FormatInt(r.StartNS, 10),
			strconv.FormatFloat(r.LatencyUS, 'f', 3, 64), strconv.FormatFloat(r.Confidence, 'g', 6, 64),
			strconv.Itoa(r.Calls), r.TraceID, joinInts(r.Messages), joinInts(r.Frames), r.Filter, strconv.FormatBool(r.Background)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeRequestsText(w io.Writer, rows []RequestRow) error {
	engines := map[string]bool{}
	frames := false
	for i := range rows {
		engines[rows[i].Engine] = true
		frames = frames || rows[i].Filter != ""
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "START (UTC)\tLATENCY\tPATTERN\tCONF\tCALLS\tLABEL\tSTATUS"
	if len(engines) > 1 {
		head = "ENGINE\t" + head
	}
	if frames {
		head += "\tWIRESHARK FILTER"
	}
	fmt.Fprintln(tw, head)
	for i := range rows {
		r := &rows[i]
		label := dash(r.Label)
		if r.Background {
			label += " (background)"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%.2f\t%d\t%s\t%s", startText(r.StartNS), FormatUS(r.LatencyUS), patternText(r),
			r.Confidence, r.Calls, label, dash(r.Status))
		if len(engines) > 1 {
			line = r.Engine + "\t" + line
		}
		if frames {
			line += "\t" + dash(r.Filter)
		}
		fmt.Fprintln(tw, line)
	}
	fmt.Fprintf(tw, "%d requests\n", len(rows))
	return tw.Flush()
}

func patternText(r *RequestRow) string {
	if r.Pattern == 0 {
		return "-"
	}
	return "#" + strconv.Itoa(r.Pattern)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// startText formats a start time as RFC 3339 with nanoseconds, UTC.
func startText(ns int64) string {
	if ns == noNS {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z")
}

func joinInts[T int | int64](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(int64(x), 10)
	}
	return strings.Join(s, " ")
}
