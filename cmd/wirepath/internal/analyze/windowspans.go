package analyze

import (
	"bytes"
	"context"
	"errors"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/tables"
)

// windowSpans exports the spans of a windowed run as it goes: the
// requests an engine assembled in a window (the assembly engine's) are
// exported when the window is done, one OTLP export request per window
// (a line of the OTLP/JSON Lines output of --format otlp, a POST to
// --otlp-endpoint), so they leave memory with their window. Their traces
// are named by their first message's msg_id (report.ExportOptions.RootIDs),
// since the run numbers its requests only after the last window. Engines
// that assemble no requests keep no instances in a windowed run; their
// patterns' mean instances are exported once, after the last window.
type windowSpans struct {
	o    *Options
	ios  *cmdutil.IOStreams
	out  *cmdutil.Output // --format otlp: the JSON Lines output
	sent int             // export requests written or sent
	// assembles marks, by engine, those that assembled requests in some
	// window: their spans are out already.
	assembles []bool
}

// newWindowSpans returns the exporter of a windowed run's spans, nil
// when the run exports none.
func newWindowSpans(ios *cmdutil.IOStreams, o *Options) (*windowSpans, error) {
	ws := &windowSpans{o: o, ios: ios}
	if o.Common.Format == report.FormatOTLP {
		out, err := cmdutil.OpenOutput(ios, o.Common.Output)
		if err != nil {
			return nil, err
		}
		ws.out = out
	} else if o.Common.OTLPEndpoint == "" {
		return nil, nil
	}
	return ws, nil
}

// window exports the requests the engines assembled in win (results, in
// the run's engine order).
func (ws *windowSpans) window(ctx context.Context, results []*causal.Result, win *pipeline.Window) error {
	if len(ws.assembles) < len(results) {
		ws.assembles = append(ws.assembles, make([]bool, len(results)-len(ws.assembles))...)
	}
	var own []*causal.Result
	for i, r := range results {
		if len(r.Requests) > 0 {
			ws.assembles[i] = true
			own = append(own, r)
		}
	}
	if len(own) == 0 {
		return nil
	}
	src, index := win.Report.Sources, int64(win.Index)
	ids := func(m int) (int64, bool) {
		if m < len(src) && !src[m].IsZero() {
			return tables.MsgID(src[m]), true
		}
		// No flows message names it: an id of this export alone,
		// negative so that it is never a msg_id.
		return -(index<<32 | int64(m) + 1), true
	}
	return ws.export(ctx, own, report.Options{Top: ws.o.Common.ReportTop(), Trace: win.Trace, RootIDs: ids})
}

// finish exports the patterns of the engines that assembled no requests
// (results are the merged ones, by engine; nil where an engine has none)
// and puts the OTLP output in place.
func (ws *windowSpans) finish(ctx context.Context, results []*causal.Result) error {
	var rest []*causal.Result
	for i, r := range results {
		if r != nil && (i >= len(ws.assembles) || !ws.assembles[i]) {
			rest = append(rest, r)
		}
	}
	if len(rest) > 0 {
		if err := ws.export(ctx, rest, report.Options{Top: ws.o.Common.ReportTop()}); err != nil {
			return err
		}
	}
	if ws.o.Common.OTLPEndpoint != "" {
		ws.ios.Infof("OTLP export: %d export requests sent to %s", ws.sent, ws.o.Common.OTLPEndpoint)
	}
	if ws.out == nil {
		return nil
	}
	out := ws.out
	ws.out = nil
	return out.Finish(nil)
}

// abort removes an OTLP output file that was not finished.
func (ws *windowSpans) abort() {
	if ws != nil && ws.out != nil {
		_ = ws.out.Finish(errors.New("not finished"))
		ws.out = nil
	}
}

// export writes rs's spans as one export request: a line of the output,
// a POST to the endpoint.
func (ws *windowSpans) export(ctx context.Context, rs []*causal.Result, opt report.Options) error {
	var buf bytes.Buffer
	if err := report.WriteAll(&buf, report.FormatOTLP, rs, opt); err != nil {
		return err
	}
	if ws.out != nil {
		if _, err := ws.out.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	if ep := ws.o.Common.OTLPEndpoint; ep != "" {
		w, err := cmdutil.SendOTLP(ctx, ep, buf.Bytes())
		if err != nil {
			return err
		}
		if w != "" {
			ws.ios.Warnf("%s", w)
		}
	}
	ws.sent++
	return nil
}
