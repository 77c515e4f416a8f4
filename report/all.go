package report

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
)

// WriteAll renders the results of one run (one trace, one or several
// engines) in format. One result is written as Write does. Several are one
// document, as docs/formats.md ("Several engines") defines:
//
//   - text: each engine's patterns in turn, then one trailer (clocks, NAT
//     table, accounting of every stage and engine, warnings);
//   - json: the resultjson.Analysis envelope;
//   - dot: one digraph with a cluster per engine;
//   - html: one page with a section per engine and the shared tables once;
//   - otlp: one export request holding every engine's traces;
//   - perfetto: one trace-event document, engine i's patterns as processes
//     (i+1)·PerfettoPIDStride + rank.
func WriteAll(w io.Writer, format string, rs []*causal.Result, opt Options) error {
	if len(rs) == 0 {
		return errors.New("no result to write")
	}
	if len(rs) == 1 {
		return Write(w, format, rs[0], opt)
	}
	if opt.Agreement == nil && (format == FormatText || format == FormatHTML) {
		opt.Agreement = ComputeAgreement(rs)
	}
	switch format {
	case FormatText:
		return writeText(w, rs, TextOptions{Top: opt.Top, Summary: opt.Summary, agreement: opt.Agreement})
	case FormatJSON:
		return resultjson.WriteAnalysis(w, rs)
	case FormatDOT:
		return writeDOT(w, rs, DOTOptions{Top: opt.Top})
	case FormatHTML:
		return writeHTML(w, rs, HTMLOptions{Top: opt.Top, Title: opt.Title, Trace: opt.Trace, Frames: opt.Frames, RequestTotals: opt.RequestTotals, agreement: opt.Agreement})
	case FormatOTLP:
		return writeOTLP(w, rs, ExportOptions{Top: opt.Top, Trace: opt.Trace, RootIDs: opt.RootIDs})
	case FormatPerfetto:
		return writePerfetto(w, rs, ExportOptions{Top: opt.Top, Trace: opt.Trace})
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}
