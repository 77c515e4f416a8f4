package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// The output formats Write knows.
const (
	FormatText     = "text"
	FormatJSON     = "json"
	FormatDOT      = "dot"
	FormatHTML     = "html"
	FormatOTLP     = "otlp"
	FormatPerfetto = "perfetto"
)

// Formats lists the formats Write accepts, in the order help texts show them.
var Formats = []string{FormatText, FormatJSON, FormatDOT, FormatHTML, FormatOTLP, FormatPerfetto}

// Options are the settings of every format; each format uses those that
// apply to it.
type Options struct {
	// Top limits the patterns shown (0 = all). JSON always has all.
	Top int
	// Title is the HTML page title.
	Title string
	// Trace, for the otlp and perfetto exports, lets listed instances be
	// exported with their real times (see ExportOptions); for html, it
	// times the request list (HTMLOptions.Trace).
	Trace *trace.Trace
	// Frames, for html, gives each listed request its frames' Wireshark
	// display filter (HTMLOptions.Frames).
	Frames FrameIndex
	// RootIDs, for otlp, names the traces of an engine's own requests by
	// their first message (ExportOptions.RootIDs).
	RootIDs func(msg int) (int64, bool)
	// Summary, for text, prints the accounting as one line per stage
	// (TextOptions.Summary).
	Summary bool
	// RequestTotals, for html, says how many requests each engine
	// assembled where the results hold only those the page lists
	// (HTMLOptions.RequestTotals).
	RequestTotals map[string]int
	// Agreement, for text and HTML of several results, is how the engines
	// agree on the requests' trees; WriteAll computes it from the
	// results' instances when it is nil.
	Agreement *Agreement
}

// Write renders res in format to w.
func Write(w io.Writer, format string, res *causal.Result, opt Options) error {
	switch format {
	case FormatText:
		return WriteText(w, res, TextOptions{Top: opt.Top, Summary: opt.Summary})
	case FormatJSON:
		return WriteJSON(w, res)
	case FormatDOT:
		return WriteDOT(w, res, DOTOptions{Top: opt.Top})
	case FormatHTML:
		return WriteHTML(w, res, HTMLOptions{Top: opt.Top, Title: opt.Title, Trace: opt.Trace, Frames: opt.Frames, RequestTotals: opt.RequestTotals})
	case FormatOTLP:
		return WriteOTLP(w, res, ExportOptions{Top: opt.Top, Trace: opt.Trace, RootIDs: opt.RootIDs})
	case FormatPerfetto:
		return WritePerfetto(w, res, ExportOptions{Top: opt.Top, Trace: opt.Trace})
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}
