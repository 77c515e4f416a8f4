// Package captureflags holds what the commands that read captures (merge,
// stats, messages, nat, reconcile and analyze) share: the flags that say
// how files become sniffers and how packets are deduplicated and
// clock-corrected, opening the inputs with a progress display, the
// flags and run of the whole front half (Pipeline, for reconcile and
// analyze), and turning problems in the input into warnings and the
// partial-success exit code (and an option naming no sniffer into a usage
// error).
package captureflags

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/pcapio/pcapfilter"
	"github.com/wirepath/wirepath/pipeline"
)

// Flags are the capture-reading flags.
type Flags struct {
	SplitInterfaces bool
	Window          time.Duration
	Reference       string
	Offsets         []string // NAME=DURATION
	NoOffsets       bool
	NoDedupe        bool
	Filter          string // -f: a capture filter expression
	Start, End      string // --start, --end: absolute times or +DURATION
	// Context is the command's (set by its RunE, not a flag): cancelled
	// by SIGINT or SIGTERM, it stops the reading.
	Context context.Context
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.SplitInterfaces, "split-interfaces", false, "treat each pcapng interface as a sniffer of its own (default: each file is one sniffer)")
	fs.DurationVar(&f.Window, "dedupe-window", pcapio.DefaultWindow, "copies of a packet within this (after clock correction) are one packet; widened by the offset uncertainty")
	cmdutil.DeprecatedAlias(fs, "window", "dedupe-window", func(fs *pflag.FlagSet, name string) { fs.DurationVar(&f.Window, name, pcapio.DefaultWindow, "") })
	fs.StringVar(&f.Reference, "reference", "", "`NAME` of the sniffer whose clock is the reference (default: the first)")
	fs.StringArrayVar(&f.Offsets, "offset", nil, "known clock offset `NAME=DURATION` of a sniffer against the reference (e.g. b.pcap=-2m17.25s); repeatable")
	fs.BoolVar(&f.NoOffsets, "no-offsets", false, "do not estimate clock offsets (no first pass over the input)")
	fs.BoolVar(&f.NoDedupe, "no-dedupe", false, "keep every observation as a packet of its own")
	fs.StringVarP(&f.Filter, "filter", "f", "", "read only the packets the capture filter `EXPR` selects (tcpdump's syntax: 'tcp port 80 or udp port 53')")
	fs.StringVar(&f.Start, "start", "", "leave out packets before `TIME` (RFC 3339 on the reference clock, e.g. 2026-11-21T20:02:25Z, or +DURATION after the first packet)")
	fs.StringVar(&f.End, "end", "", "leave out packets from `TIME` on (as --start)")
}

// Options validates the flags and returns the pcapio options they give.
func (f *Flags) Options() (pcapio.Options, error) {
	o := pcapio.Options{
		SplitInterfaces: f.SplitInterfaces,
		Window:          f.Window,
		Reference:       f.Reference,
		NoOffsets:       f.NoOffsets,
		NoDedupe:        f.NoDedupe,
	}
	if f.Window <= 0 {
		return o, cmdutil.UsageErrorf("--dedupe-window must be positive, not %v", f.Window)
	}
	if f.Filter != "" {
		flt, err := pcapfilter.Compile(f.Filter)
		if err != nil {
			return o, cmdutil.UsageErrorf("-f: %v", err)
		}
		o.Filter = flt
	}
	var err error
	if o.Start, err = parseBound("--start", f.Start); err != nil {
		return o, err
	}
	if o.End, err = parseBound("--end", f.End); err != nil {
		return o, err
	}
	for _, s := range f.Offsets {
		name, dur, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return o, cmdutil.UsageErrorf("--offset %q: want NAME=DURATION", s)
		}
		d, err := time.ParseDuration(dur)
		if err != nil {
			return o, cmdutil.UsageErrorf("--offset %q: %v", s, err)
		}
		if o.Offsets == nil {
			o.Offsets = map[string]time.Duration{}
		}
		o.Offsets[name] = d
	}
	return o, nil
}

// parseBound reads a --start or --end value: "" (none), +DURATION after
// the first packet, or an RFC 3339 time (nanoseconds allowed).
func parseBound(flag, s string) (pcapio.TimeBound, error) {
	switch {
	case s == "":
		return pcapio.TimeBound{}, nil
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return pcapio.TimeBound{}, cmdutil.UsageErrorf("%s %q: want +DURATION (e.g. +1m30s) or an RFC 3339 time", flag, s)
		}
		return pcapio.TimeBound{Set: true, Relative: true, Offset: d}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return pcapio.TimeBound{}, cmdutil.UsageErrorf("%s %q: want an RFC 3339 time (2026-11-21T20:02:25Z) or +DURATION", flag, s)
	}
	return pcapio.TimeBound{Set: true, At: t.UnixNano()}, nil
}

// Open validates the flags and opens the captures with a progress display
// on stderr. Call the returned finish function when reading is done, and
// Close the Merger.
func (f *Flags) Open(ios *cmdutil.IOStreams, paths []string) (*pcapio.Merger, func(), error) {
	opts, err := f.Options()
	if err != nil {
		return nil, nil, err
	}
	return Open(ios, paths, opts)
}

// Open opens the captures with a progress display on stderr. Call the
// returned finish function when reading is done.
func Open(ios *cmdutil.IOStreams, paths []string, opts pcapio.Options) (*pcapio.Merger, func(), error) {
	// The callback runs on pcapio's reading goroutines (one call at a
	// time); finish runs on the command's.
	var mu sync.Mutex
	var prog *cmdutil.Progress
	var last int64
	started := false
	opts.Progress = func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			started = true
			prog = cmdutil.NewProgress(ios, "reading captures", total, true)
		}
		prog.Add(done - last)
		last = done
	}
	finish := func() {
		mu.Lock()
		defer mu.Unlock()
		prog.Finish()
		prog = nil
	}
	m, err := pcapio.Open(paths, opts)
	if err != nil {
		finish()
		return nil, nil, UsageOf(err)
	}
	return m, finish, nil
}

// UsageOf returns err as a usage error when it says that an option names
// no sniffer (--reference, --offset), and as it is otherwise.
func UsageOf(err error) error {
	var ne *pcapio.SnifferNameError
	if errors.As(err, &ne) {
		return cmdutil.UsageErrorf("%v", err)
	}
	return err
}

// Outcome prints each problem in the input as a warning and returns the
// command's result: nil, a *cmdutil.PartialError when some input was bad,
// or an error when no file could be read at all.
func Outcome(ios *cmdutil.IOStreams, m *pcapio.Merger) error {
	return OutcomeOf(ios, m.Problems(), m.Stats())
}

// OutcomeOf is Outcome for a run that has closed its merger (such as
// package pipeline's): the problems found and the merge's accounting.
func OutcomeOf(ios *cmdutil.IOStreams, probs []error, st pcapio.Stats) error {
	for _, p := range probs {
		ios.Warnf("%v", p)
	}
	return StatusOf(st)
}

// StatusOf is OutcomeOf without the warnings: the command's result from
// the merge's accounting.
func StatusOf(st pcapio.Stats) error {
	n := 0
	for _, f := range st.Files {
		n += f.Problems
	}
	if n == 0 {
		return nil
	}
	if st.Total.Records == 0 {
		return fmt.Errorf("no packets could be read from the %d capture file(s)", len(st.Files))
	}
	return &cmdutil.PartialError{Skipped: n, What: "see the warnings above"}
}

// StageProgress returns a pipeline progress callback that shows one
// progress display per stage (on a terminal, after a while). Call it with
// a stage past the last (or call the returned finish) to remove the last
// display.
func StageProgress(ios *cmdutil.IOStreams) (pipeline.Progress, func()) {
	var cur *cmdutil.Progress
	stage := pipeline.Stage(255)
	var last int64
	return func(s pipeline.Stage, done, total int64) {
			if s != stage {
				cur.Finish()
				cur, stage, last = nil, s, 0
				bytes := s == pipeline.StageLearn || s == pipeline.StageMessages
				cur = cmdutil.NewProgress(ios, s.String(), total, bytes)
			}
			cur.Add(done - last)
			last = done
		}, func() {
			cur.Finish()
		}
}
