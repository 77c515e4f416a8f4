package analyze

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"slices"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/tables"
	"github.com/wirepath/wirepath/trace"
)

// validateWindow checks --window and what it cannot be combined with.
func (o *Options) validateWindow() error {
	if o.Window == 0 {
		return nil
	}
	w := pipeline.Windows{Length: o.Window, Margin: o.WindowMargin}
	if err := w.Validate(); err != nil {
		return cmdutil.UsageErrorf("--windowed: %v", err)
	}
	if o.MemoryMiB < 0 {
		return cmdutil.UsageErrorf("--memory-limit must not be negative")
	}
	switch {
	case o.Engine == convolution.Name:
		return cmdutil.UsageErrorf("--windowed does not run the convolution engine (its signals span the whole run)")
	case len(o.Preload) > 0:
		return cmdutil.UsageErrorf("--windowed does not read syscall traces (--preload)")
	case o.SaveTrace != "":
		return cmdutil.UsageErrorf("--windowed keeps no whole trace to save (--save-trace)")
	case o.Common.Instances != 0:
		return cmdutil.UsageErrorf("--windowed keeps no instances (--instances)")
	case o.PcapOut != "":
		return cmdutil.UsageErrorf("--windowed does not write the merged capture (--pcap-out: use 'wirepath merge')")
	case o.Common.Format == report.FormatPerfetto:
		// Its tracks are the patterns' instances, which windows do not
		// keep, on one time axis shifted over the whole run.
		return cmdutil.UsageErrorf("--windowed keeps no instances to make Perfetto tracks from (--format perfetto): " +
			"use --format otlp (written window by window), or save a trace of a shorter stretch (analyze --save-trace) and run 'wirepath report' on it")
	}
	return nil
}

// windowRun is the state of a windowed analysis: the engines chosen on
// the first window, a merger per engine, the trace's counters summed.
type windowRun struct {
	o       *Options
	eo      engines.Options
	ios     *cmdutil.IOStreams
	names   []string
	mergers []*causal.ResultMerger
	// spools hold, for the JSON report, each engine's requests on disk;
	// slowest, for the HTML report, the slowest of them (requestsTo)
	spools  []*resultjson.RequestSpool
	slowest []*report.SlowestRequests
	meta    trace.Meta
	acc     map[[2]string]int
	warned  map[string]bool
	// spans exports the requests' spans window by window (nil: no
	// --format otlp or --otlp-endpoint)
	spans *windowSpans
}

// runWindowed is Run with --windowed: the trace is reconciled and analysed
// window by window (pipeline.RunWindows), each engine's results merged
// (causal.ResultMerger), so memory holds one window's trace at a time.
func runWindowed(ctx context.Context, ios *cmdutil.IOStreams, o *Options, eo engines.Options) error {
	o.Pipeline.Context = ctx
	if o.MemoryMiB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// The live heap of a windowed run is bounded; the limit keeps
		// the garbage collector from letting the heap double over it.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(o.MemoryMiB) << 20))
	}
	wr := &windowRun{o: o, eo: eo, ios: ios, acc: map[[2]string]int{}, warned: map[string]bool{}}
	defer wr.removeSpools()
	spans, err := newWindowSpans(ios, o)
	if err != nil {
		return err
	}
	wr.spans = spans
	defer spans.abort()
	defer o.Parquet.Finish(ios, errors.New("not finished")) // removes the tables unless they were put in place
	w := pipeline.Windows{Length: o.Window, Margin: o.WindowMargin}
	res, _, err := o.Pipeline.RunWindows(ios, w, func(win *pipeline.Window) error { return wr.window(ctx, win) })
	if res == nil {
		return err
	}
	status := captureflags.PipelineStatus(res)
	var partial *cmdutil.PartialError
	if err == nil && status != nil && !errors.As(status, &partial) {
		err = status
	}
	if err != nil {
		for _, p := range res.Problems {
			ios.Warnf("%v", p)
		}
		return err
	}
	results := make([]*causal.Result, 0, len(wr.mergers))
	byEngine := make([]*causal.Result, len(wr.mergers))
	var spools []*resultjson.RequestSpool
	totals := map[string]int{}
	for i, m := range wr.mergers {
		r := m.Result()
		if r == nil {
			continue
		}
		byEngine[i] = r
		if slow := wr.slowest[i]; slow != nil {
			r.Requests, totals[r.Engine] = slow.Requests(), slow.Total()
		}
		results, spools = append(results, r), append(spools, wr.spools[i])
	}
	tr := wr.summaryTrace(res)
	for _, r := range results {
		r.Trace.Accounting, r.Trace.Warnings = tr.Meta.Accounting, tr.Meta.Warnings
	}
	if err := o.Parquet.Finish(ios, nil); err != nil {
		return err
	}
	if wr.spans != nil {
		if err := wr.spans.finish(ctx, byEngine); err != nil {
			return err
		}
	}
	if err := wr.write(results, spools, totals, tr); err != nil {
		return err
	}
	wr.warnAfter(results, tr)
	if partial != nil {
		partial.What = "the warnings say what was skipped"
		return partial
	}
	return nil
}

// window runs the engines on one window's trace and merges their results.
func (wr *windowRun) window(ctx context.Context, win *pipeline.Window) error {
	tr := win.Trace
	if err := win.Report.Check(); err != nil {
		wr.ios.Warnf("%v (a bug)", err)
	}
	wr.addMeta(&tr.Meta)
	if wr.names == nil {
		names, why, err := engines.Resolve(wr.o.Engine, tr)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		if i := slices.Index(names, convolution.Name); i >= 0 {
			wr.ios.Warnf("--windowed: the convolution engine is left out (its signals span the whole run)")
			names = slices.Delete(names, i, i+1)
		}
		if why != "" {
			wr.ios.Infof("engine %s: %s, chosen on the first window (--engine chooses another)", names[0], why)
		}
		wr.names = names
		for _, n := range names {
			c := wr.eo.Common(n)
			m := causal.NewResultMerger(c.Rank, c.Aggregate.MaxPatterns)
			if err := wr.requestsTo(m); err != nil {
				return err
			}
			wr.mergers = append(wr.mergers, m)
		}
	}
	eo := wr.eo
	eo.SetWindow(win.From, win.To)
	engs := make([]causal.Engine, len(wr.names))
	for i, n := range wr.names {
		var err error
		if engs[i], err = eo.New(n); err != nil {
			return err
		}
	}
	results, err := causal.InferAll(ctx, tr, engs, nil)
	if err != nil {
		return err
	}
	// The window's own messages and the requests it counts (its
	// instances: the engines keep those whose root is in its core).
	wr.o.Parquet.Do(func(rec *tables.Recorder) {
		wr.o.tableRows(rec, results, tr, tables.TraceRows{Sources: win.Report.Sources, Owned: win.Owned, WindowStart: win.From})
	})
	if wr.spans != nil {
		if err := wr.spans.window(ctx, results, win); err != nil {
			return err
		}
	}
	index := win.Index
	for i, r := range results {
		for k := range r.Requests {
			// the requests' message indices are the window's trace's
			r.Requests[k].Window = &index
		}
		wr.mergers[i].Add(r)
		if err := wr.mergers[i].Err(); err != nil {
			return err // the requests' spool could not be written
		}
	}
	return nil
}

// requestsTo says where merger m puts the requests of the windows (the
// assembly engine's), so that memory does not grow with them: the text
// and DOT reports show none, so they are counted and dropped; the JSON
// report lists them all, so they wait on disk (a spool) for the writer to
// stream them; the HTML report lists the slowest, so only those are kept
// (report.SlowestRequests); the OTLP report has their spans already
// (windowSpans), so they are dropped too; the Perfetto report is refused
// (validateWindow). It appends m's spool and keeper (nil when not used).
func (wr *windowRun) requestsTo(m *causal.ResultMerger) error {
	var sp *resultjson.RequestSpool
	var slow *report.SlowestRequests
	switch wr.o.Common.Format {
	case report.FormatText, report.FormatDOT, report.FormatOTLP:
		m.SendRequests(func([]causal.Request) error { return nil })
	case report.FormatJSON:
		var err error
		if sp, err = resultjson.NewRequestSpool(""); err != nil {
			return err
		}
		m.SendRequests(sp.Add)
	case report.FormatHTML:
		slow = report.NewSlowestRequests()
		m.SendRequests(slow.Add)
	}
	wr.spools, wr.slowest = append(wr.spools, sp), append(wr.slowest, slow)
	return nil
}

// write renders the merged results, the JSON report's requests streamed
// from their spools, the HTML report's with each engine's count of
// requests (totals).
func (wr *windowRun) write(results []*causal.Result, spools []*resultjson.RequestSpool, totals map[string]int, tr *trace.Trace) error {
	o := wr.o
	if o.Common.Format == report.FormatOTLP {
		return nil // written window by window (windowSpans)
	}
	if o.Common.Format != report.FormatJSON {
		// no agreement: windows keep no instances
		return o.writeReport(wr.ios, results, report.Options{Top: o.Common.ReportTop(), Title: o.Title, Trace: tr, Summary: true, RequestTotals: totals})
	}
	out, err := cmdutil.OpenOutput(wr.ios, o.Common.Output)
	if err != nil {
		return err
	}
	return out.Finish(resultjson.WriteSpooled(out, results, spools))
}

// removeSpools deletes the requests' spools.
func (wr *windowRun) removeSpools() {
	for _, sp := range wr.spools {
		if sp != nil {
			_ = sp.Remove()
		}
	}
}

// addMeta sums one window's trace counters and keeps its warnings and
// its clocks (the latest window's).
func (wr *windowRun) addMeta(m *trace.Meta) {
	for _, c := range m.Accounting {
		k := [2]string{c.Stage, c.Name}
		if i, ok := wr.acc[k]; ok {
			wr.meta.Accounting[i].Value += c.Value
			continue
		}
		wr.acc[k] = len(wr.meta.Accounting)
		wr.meta.Accounting = append(wr.meta.Accounting, c)
	}
	for _, w := range m.Warnings {
		if !wr.warned[w] {
			wr.warned[w] = true
			wr.meta.Warnings = append(wr.meta.Warnings, w)
		}
	}
	if len(m.Clocks) > 0 {
		wr.meta.Clocks, wr.meta.Offsets = m.Clocks, m.Offsets
	}
	if len(m.Aliases) > 0 {
		wr.meta.Aliases = m.Aliases
	}
	if wr.meta.Source == "" {
		wr.meta.Source = m.Source
	}
}

// summaryTrace is the trace the report's summary reads: no messages, the
// stages' accounting (the pipeline's up to flows and the windows', then
// reconcile's summed over the windows: messages in the margins count in
// each window that reconciled them) and every warning.
func (wr *windowRun) summaryTrace(res *pipeline.Result) *trace.Trace {
	meta := wr.meta
	meta.Accounting = append(slices.Clone(res.Accounting), meta.Accounting...)
	var warns []string
	for _, p := range res.Problems {
		warns = append(warns, p.Error())
	}
	meta.Warnings = append(warns, meta.Warnings...)
	if res.NAT != nil {
		meta.Aliases = res.NAT.Aliases()
	}
	return &trace.Trace{Meta: meta}
}

// warnAfter repeats the warnings on stderr when the report is not text on
// stdout (which ends with them).
func (wr *windowRun) warnAfter(results []*causal.Result, tr *trace.Trace) {
	o, ios := wr.o, wr.ios
	toFile := o.Common.Output != "" && o.Common.Output != "-"
	if o.Common.Format != report.FormatText || toFile {
		for _, w := range tr.Meta.Warnings {
			ios.Warnf("%s", w)
		}
		for _, r := range results {
			for _, w := range r.Warnings {
				ios.Warnf("%s: %s", r.Engine, w)
			}
		}
	}
	if toFile {
		ios.Infof("%s report written to %s", o.Common.Format, o.Common.Output)
	}
}
