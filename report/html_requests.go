package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// FrameIndex maps a trace's messages to the frames of the merged capture
// that carried them (*frames.Index, which report does not import).
type FrameIndex interface {
	// FramesOf returns the frame numbers of the messages msgs (trace
	// indices), ascending, without duplicates.
	FramesOf(msgs []int) []int64
	// DisplayFilter returns the Wireshark display filter that selects
	// the frames fs, "" for none.
	DisplayFilter(fs []int64) string
}

// maxHTMLRequests is how many requests, the slowest, an engine's request
// list on the page holds (`wirepath requests` lists them all);
// requestPage is how many it shows at a time.
const (
	maxHTMLRequests = 1000
	requestPage     = 25
)

// htmlRequests is an engine's request list on the page: the slowest
// requests, each with its label, latency, confidence and, with the merged
// capture, its frames' Wireshark display filter.
type htmlRequests struct {
	Rows []htmlRequestRow
	// Total is how many requests the engine has; Frames is set when the
	// rows carry frames.
	Total  int
	Frames bool
	// Why says why there are none.
	Why string
}

// htmlRequestRow is one request of the list.
type htmlRequestRow struct {
	R           RequestRow
	Pos         int
	Start       string
	Latency     string
	PatternLink string // the pattern's element id when it is drawn
	Search      string
}

// htmlRequestsOf returns res's slowest requests for the page: the
// engine's own requests or the listed instances, timed from the trace t
// when there is one (else, for an engine's own requests, with the
// figures the result gives), with their frames when fx is set.
// detailed reports whether a pattern rank is drawn on the page.
func htmlRequestsOf(res *causal.Result, t *trace.Trace, fx FrameIndex, detailed func(rank int) bool, pre string) htmlRequests {
	var h htmlRequests
	var rows []RequestRow
	if t != nil && len(t.Messages) == 0 {
		t = nil // a summary of a trace (analyze --windowed), no messages
	}
	switch {
	case t != nil:
		var err error
		if rows, err = RequestRows([]*causal.Result{res}, t); err != nil {
			h.Why = err.Error()
			return h
		}
	case len(res.Requests) > 0:
		rows = resultRequestRows(res)
	default:
		h.Why = "no requests: the assembly engine lists its requests, another engine its instances with --instances -1; the report needs the trace (analyze has it, 'wirepath report --trace')"
		return h
	}
	h.Total = len(rows)
	slices.SortStableFunc(rows, func(a, b RequestRow) int { return cmp.Compare(b.LatencyUS, a.LatencyUS) })
	if len(rows) > maxHTMLRequests {
		rows = rows[:maxHTMLRequests]
	}
	origin := res.Trace.StartNS
	for i := range rows {
		r := rows[i]
		if fx != nil {
			r.Frames = fx.FramesOf(r.Messages)
			r.Filter = fx.DisplayFilter(r.Frames)
			h.Frames = true
		}
		hr := htmlRequestRow{R: r, Pos: i, Latency: FormatUS(r.LatencyUS), Start: "–"}
		if r.StartNS != noNS && t != nil {
			hr.Start = fmtSigned(float64(r.StartNS-origin) / 1e3)
		}
		if r.Pattern > 0 && detailed(r.Pattern) {
			hr.PatternLink = fmt.Sprintf("%sp%d", pre, r.Pattern)
		}
		hr.Search = strings.ToLower(r.Label + " " + r.Status)
		h.Rows = append(h.Rows, hr)
	}
	return h
}

// resultRequestRows lists an engine's own requests with what the result
// says of them (no times, endpoints or frames without the trace).
func resultRequestRows(res *causal.Result) []RequestRow {
	rows := make([]RequestRow, 0, len(res.Requests))
	for i := range res.Requests {
		q := &res.Requests[i]
		r := request{Engine: res.Engine, ID: q.ID, Instance: -1, Own: true, Confidence: q.Confidence, Background: q.Background}
		row := RequestRow{Engine: res.Engine, Request: q.ID, Instance: -1, Label: q.Label, StartNS: noNS,
			Confidence: q.Confidence, Background: q.Background}
		tid := traceID(&r)
		row.TraceID = fmt.Sprintf("%x", tid[:])
		if q.Latency != nil {
			row.LatencyUS = *q.Latency
		}
		for k, m := range q.Messages {
			if m.Msg >= 0 {
				row.Messages = append(row.Messages, m.Msg)
			}
			if m.Call == k {
				row.Calls++
			}
			if k > 0 && m.Call == 0 && m.Kind == "RETURN" {
				row.Status = m.Label
			}
		}
		rows = append(rows, row)
	}
	return rows
}
