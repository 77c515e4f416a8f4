// Package pipeline runs the front half of the wirepath pipeline, from
// capture files (and syscall traces) to a message trace:
//
//	captures ─► pcapio ─► nat (learn, delay, rename) ─► flows ─► reconcile ─► trace
//	            offsets,                                          + preload
//	            dedupe
//
// It only wires the stages together; each stage's logic lives in its own
// package. Messages runs the stages up to flows and hands each write-level
// message to a callback (what `wirepath messages` prints); Run goes on
// through reconcile and returns the trace with every stage's accounting in
// its Meta (what `wirepath reconcile` writes and `wirepath analyze` hands
// to the engines); LearnNAT runs NAT learning alone (what `wirepath nat`
// prints).
//
// Every input is read once, so a capture may come from a pipe or standard
// input. pcapio reads ahead in each input (Options.LookAhead) and
// estimates the clock offsets from what it read; NAT learning on that
// read-ahead completes them across translations (Options.Refine). The
// merge then streams through a nat.Streamer, which learns translations as
// the packets go by and holds each packet back for the learning window
// before renaming it with what it learned by then, and on into flows. The
// merge and NAT run on a goroutine of their own and hand their packets to
// flows, on the caller's goroutine, in batches (pipe; Config.Serial runs
// them on one): the same packets in the same order, so the results do not
// depend on it. The phases: openCaptures, openSource, then flows
// (readMessages) and the accounting (account). With a given translation table (Config.NATTable)
// the merge is renamed by the table instead, or by the table after the
// Streamer with Config.NATLearn.
//
// Memory is bounded as each stage bounds it (pcapio by its read-ahead and
// window, nat by the delay and the translated connections, flows by the
// open connections), except that reconcile keeps every message of the run
// (about 0.9 KB of memory each with its sightings).
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// Stage names a step of the pipeline in progress reports.
type Stage uint8

// The stages, in the order they run.
const (
	StageLearn     Stage = iota // wirepath nat: the merge through the NAT learner
	StageMessages               // the merged reading through NAT and flows
	StagePreload                // reading the syscall traces
	StageReconcile              // reconciling messages and syscalls into the trace
)

var stageNames = [...]string{"learning NAT", "reassembling messages", "reading syscall traces", "reconciling"}

// String returns a short description of the stage, for progress displays.
func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("stage %d", s)
}

// Progress reports how far a stage has come: done units out of total
// (bytes read for the capture passes, files for the syscall traces,
// messages for reconcile; total -1 when unknown). A stage's first call may
// come with done = 0; its last has done = total. It fits
// cmdutil.NewProgress: one progress display per stage. It may be called
// from pcapio's reading goroutines, but never by two at once.
type Progress func(stage Stage, done, total int64)

// Config configures a run.
type Config struct {
	// Captures are the capture files, one sniffer each (or one per
	// interface with Capture.SplitInterfaces).
	Captures []string
	// Capture configures pcapio; its Progress is set by the pipeline.
	Capture pcapio.Options
	// NoNAT skips NAT learning and rewriting.
	NoNAT bool
	// NATTable is a translation table given by the user: with it the
	// packets are renamed by the table alone, unless NATLearn is set too
	// (then the learned translations come first and the table renames
	// the rest). Without it, translations are learned unless NoNAT.
	NATTable *nat.Given
	NATLearn bool
	// NAT configures the learner; the zero value means nat.DefaultOptions.
	NAT nat.Options
	// NATDelay is how long each packet is held back, in capture time,
	// before it is renamed with the translations learned by then (0 means
	// NAT.Window); see nat.Streamer.
	NATDelay time.Duration
	// Flows configures reassembly; the zero value means
	// flows.DefaultConfig. Its OnConn, if set, is still called.
	Flows flows.Config
	// Preload are syscall trace files, or directories of them (*.jsonl,
	// *.jsonl.gz, *.jsonl.zst).
	Preload []string
	// PreloadOptions configure the trace reader.
	PreloadOptions preload.Options
	// Reconcile configures reconcile; the pipeline fills in Preload,
	// Canonical and Sniffers.
	Reconcile reconcile.Options
	// Progress, if set, is called as the stages advance.
	Progress Progress
	// OnOpen, if set, is called once the captures are open, with the
	// sniffers and their offsets in the Result, before the first packet.
	OnOpen func(*Result)
	// OnPacket, if set, is called with every packet flows is handed (NAT
	// undone), in order; the packet is reused after it returns.
	OnPacket func(*pcapio.Packet)
	// Context, if set, stops the run when it is cancelled: the reading
	// ends and the run returns its error.
	Context context.Context
	// Serial runs the merge, NAT, flows and what follows on one goroutine
	// (the captures are still read and decoded on one goroutine each).
	// By default the merge and NAT run on a goroutine of their own and
	// hand their packets to flows in batches: the same packets in the
	// same order, so the results are identical (a test compares them).
	Serial bool

	// onSource, if set, is told before the first message what tells the
	// translations the packet flows read last was renamed with (nil
	// without NAT): RunWindows' aliases.
	onSource func(tabler)
}

// Result is what a run produced besides the messages or the trace.
type Result struct {
	// Trace is the reconciled trace (Run only), with the NAT aliases,
	// the clocks, the node offsets, every stage's accounting and the
	// warnings in its Meta.
	Trace *trace.Trace
	// Report is reconcile's accounting (Run only).
	Report *reconcile.Report
	// Sniffers and Offsets describe the capture points and their clock
	// offsets against the reference sniffer (pcapio's estimates, with
	// offsets nat found across translations marked Method "nat").
	Sniffers []pcapio.Sniffer
	Offsets  []pcapio.Offset
	// Capture is pcapio's accounting of the merge.
	Capture pcapio.Stats
	// NAT is the learned translation table (nil with NoNAT), NATApply
	// the renaming counters.
	NAT      *nat.Table
	NATApply nat.ApplyStats
	// Flows is the flows stage's accounting.
	Flows *flows.Stats
	// Preload is the syscall traces' table (nil without any).
	Preload *preload.Table
	// Problems are the bad input found (pcapio's *ParseErrors, the
	// syscall traces' skipped lines), in the order found.
	Problems []error
	// Accounting is every stage's counters, as in the trace's Meta.
	Accounting []trace.Count
	// Warnings are what a user must see about the run besides the bad
	// input and reconcile's own warnings (Run only): clocks nothing ties
	// to the reference, nodes seen on one side only, gaps in TCP streams,
	// connections whose start was missed. They end the trace's
	// Meta.Warnings.
	Warnings []string
}

// Messages runs captures → pcapio → nat → flows and calls fn with each
// write-level message (reused after fn returns; Clone to keep it). An error
// from fn stops the run and is returned. Result's Trace and Report are nil.
func Messages(cfg Config, fn func(*flows.Message) error) (*Result, error) {
	cfg.Progress = serialize(cfg.Progress)
	res := &Result{}
	err := runMessages(&cfg, res, fn)
	return res, err
}

// Run runs the front half of the pipeline and returns the trace.
func Run(cfg Config) (*Result, error) {
	cfg.Progress = serialize(cfg.Progress)
	res := &Result{}
	var tab *preload.Table
	if len(cfg.Preload) > 0 {
		var err error
		if tab, err = readPreload(&cfg, res); err != nil {
			return res, err
		}
	}
	var rec *reconcile.Reconciler // made once the sniffers and offsets are known
	ropts := cfg.Reconcile
	ropts.Preload = tab
	userOnConn := cfg.Flows.OnConn
	cfg.Flows.OnConn = func(cs *flows.ConnStats) {
		rec.AddConn(cs)
		if userOnConn != nil {
			userOnConn(cs)
		}
	}
	start := func() error {
		ropts.Sniffers = sniffersFor(res.Sniffers, res.Offsets)
		if !cfg.NoNAT {
			// reconcile renames traced endpoints as it finishes, when
			// the final table is known.
			ropts.Canonical = func(proto uint8, src, dst netip.AddrPort, ts int64) (netip.AddrPort, netip.AddrPort, bool) {
				if res.NAT == nil {
					return src, dst, false
				}
				return res.NAT.Lookup(proto, src, dst, ts)
			}
		}
		var err error
		rec, err = reconcile.New(ropts)
		return err
	}
	err := runMessagesHook(&cfg, res, start, func(m *flows.Message) error {
		rec.AddMessage(m)
		return nil
	})
	if err != nil {
		return res, err
	}
	progress(cfg.Progress, StageReconcile, 0, -1)
	tr, rep, err := rec.Finish()
	if err != nil {
		return res, err
	}
	progress(cfg.Progress, StageReconcile, int64(len(tr.Messages)), int64(len(tr.Messages)))
	res.Trace, res.Report = tr, rep
	// The trace's Meta: reconcile's clocks, offsets and accounting, plus
	// the NAT aliases and the other stages' accounting and problems.
	if res.NAT != nil {
		tr.Meta.Aliases = res.NAT.Aliases()
	}
	acc := slices.Clone(res.Accounting)
	acc = append(acc, tr.Meta.Accounting...)
	tr.Meta.Accounting = acc
	res.Accounting = acc
	var warns []string
	for _, p := range res.Problems {
		warns = append(warns, p.Error())
	}
	res.Warnings = checkRun(&cfg, res, tr)
	tr.Meta.Warnings = append(append(warns, tr.Meta.Warnings...), res.Warnings...)
	return res, nil
}

// serialize makes p safe to call from several goroutines: one call at a
// time.
func serialize(p Progress) Progress {
	if p == nil {
		return nil
	}
	var mu sync.Mutex
	return func(s Stage, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		p(s, done, total)
	}
}

func progress(p Progress, s Stage, done, total int64) {
	if p != nil {
		p(s, done, total)
	}
}

func runMessages(cfg *Config, res *Result, fn func(*flows.Message) error) error {
	return runMessagesHook(cfg, res, nil, fn)
}

// runMessagesHook is Messages with a hook called once the sniffers and
// offsets are known, before the first message.
func runMessagesHook(cfg *Config, res *Result, ready func() error, fn func(*flows.Message) error) error {
	src, m, err := openSource(cfg, res)
	if err != nil {
		return err
	}
	defer m.Close()
	if cfg.OnOpen != nil {
		cfg.OnOpen(res)
	}
	if ready != nil {
		if err := ready(); err != nil {
			return err
		}
	}
	ns, _ := src.(natStage)
	tab, _ := src.(tabler)
	var pp *pipe
	var fsrc flows.Source = src
	if cfg.Serial {
		if cfg.Context != nil {
			fsrc = &ctxSource{Source: src, ctx: cfg.Context}
		}
	} else {
		pp = newPipe(src, tab, cfg.Context)
		defer pp.stop()
		fsrc = pp
		if tab != nil {
			tab = pp
		}
	}
	if cfg.onSource != nil {
		cfg.onSource(tab)
	}
	if cfg.OnPacket != nil {
		fsrc = &tapSource{Source: fsrc, fn: cfg.OnPacket}
	}
	r, err := flows.NewReader(fsrc, flowsConfig(cfg.Flows))
	if err != nil {
		return err
	}
	if err := readMessages(r, fn); err != nil {
		return err
	}
	if pp != nil {
		pp.stop() // the source is this goroutine's again
	}
	if ns != nil {
		res.NAT, res.NATApply = ns.finish()
		res.NAT.SetSnifferNames(snifferNames(res.Sniffers))
	}
	account(res, m, r)
	return nil
}

// LearnNAT runs NAT learning alone (what `wirepath nat` prints):
// captures → pcapio → nat, whatever cfg.NoNAT says. Result holds the
// sniffers, the offsets (pcapio's, completed with what nat found across
// translations: Method "nat"), the translation table, and the merge's
// accounting (Capture, Accounting) and problems.
func LearnNAT(cfg Config) (*Result, error) {
	cfg.Progress = serialize(cfg.Progress)
	res := &Result{}
	o, err := natOptions(cfg.NAT)
	if err != nil {
		return res, err
	}
	m, err := openCaptures(&cfg, res, StageLearn, nil)
	if err != nil {
		return res, err
	}
	defer m.Close()
	l, err := observeAll(m, o)
	if err != nil {
		return res, err
	}
	res.Problems = append(res.Problems, m.Problems()...)
	res.Sniffers = m.Sniffers()
	res.Capture = m.Stats()
	res.NAT = l.Finish()
	res.NAT.SetSnifferNames(snifferNames(res.Sniffers))
	completeOffsets(res.Offsets, res.NAT.Clocks)
	res.Accounting = append(captureCounts(&res.Capture), res.NAT.Accounting()...)
	return res, nil
}

// openSource opens the captures and returns what flows reads, and the
// merge under it: pcapio's merge; or with NAT, the merge through a
// nat.Streamer, the offsets completed across translations from the
// read-ahead (refine).
func openSource(cfg *Config, res *Result) (holder, *pcapio.Merger, error) {
	if cfg.NoNAT {
		m, err := openCaptures(cfg, res, StageMessages, nil)
		return mergeSource{m}, m, err
	}
	if cfg.NATTable != nil && !cfg.NATLearn {
		m, err := openCaptures(cfg, res, StageMessages, nil)
		if err != nil {
			return nil, nil, err
		}
		return &givenSource{m: m, c: nat.NewCanonicalizer(nat.NewGivenTable(cfg.NATTable))}, m, nil
	}
	o, err := natOptions(cfg.NAT)
	if err != nil {
		return nil, nil, err
	}
	m, err := openCaptures(cfg, res, StageMessages, refine(o))
	if err != nil {
		return nil, nil, err
	}
	s := nat.NewStreamer(nat.StreamOptions{Learn: o, Delay: cfg.NATDelay, Given: cfg.NATTable})
	return &natSource{m: m, s: s}, m, nil
}

// openCaptures opens the captures, pcapio's progress reported as stage s,
// and notes the sniffers and their offsets.
func openCaptures(cfg *Config, res *Result, s Stage, refine func(*pcapio.Merger) ([]pcapio.Offset, error)) (*pcapio.Merger, error) {
	if len(cfg.Captures) == 0 {
		return nil, errors.New("no capture files")
	}
	popts := cfg.Capture
	popts.Progress = func(done, total int64) { progress(cfg.Progress, s, done, total) }
	popts.Refine = refine
	m, err := pcapio.Open(cfg.Captures, popts)
	if err != nil {
		return nil, err
	}
	res.Sniffers = m.Sniffers()
	res.Offsets = slices.Clone(m.Offsets())
	return m, nil
}

// refine is pcapio's Options.Refine with NAT: the read-ahead through a
// Learner, whose clocks across translations complete the offsets.
func refine(o nat.Options) func(*pcapio.Merger) ([]pcapio.Offset, error) {
	return func(ahead *pcapio.Merger) ([]pcapio.Offset, error) {
		l, err := observeAll(ahead, o)
		if err != nil {
			return nil, err
		}
		offs := slices.Clone(ahead.Offsets())
		completeOffsets(offs, l.Finish().Clocks)
		return offs, nil
	}
}

// natOptions is o, or nat's defaults when o is the zero value, checked.
func natOptions(o nat.Options) (nat.Options, error) {
	if o == (nat.Options{}) {
		o = nat.DefaultOptions()
	}
	return o, o.Validate()
}

// observeAll reads the merge to its end through a NAT learner.
func observeAll(m *pcapio.Merger, o nat.Options) (*nat.Learner, error) {
	l := nat.NewLearner(o)
	for {
		p, err := m.Next()
		if errors.Is(err, io.EOF) {
			return l, nil
		}
		if err != nil {
			return nil, err
		}
		l.Observe(p)
	}
}

func snifferNames(sn []pcapio.Sniffer) []string {
	names := make([]string, len(sn))
	for i, s := range sn {
		names[i] = s.Name
	}
	return names
}

// flowsConfig is fc, or flows' defaults (keeping fc's OnConn) when fc is
// the zero value.
func flowsConfig(fc flows.Config) flows.Config {
	if fc.FingerprintLen == 0 {
		on := fc.OnConn
		fc = flows.DefaultConfig()
		fc.OnConn = on
	}
	return fc
}

// readMessages hands every message r reads to fn.
func readMessages(r *flows.Reader, fn func(*flows.Message) error) error {
	for {
		msg, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(msg); err != nil {
			return err
		}
	}
}

// account notes what the merge and flows counted, and appends every
// stage's counters to res.Accounting.
func account(res *Result, m *pcapio.Merger, r *flows.Reader) {
	res.Problems = append(res.Problems, m.Problems()...)
	res.Sniffers = m.Sniffers()
	res.Capture = m.Stats()
	res.Flows = r.Stats()
	res.Accounting = append(res.Accounting, captureCounts(&res.Capture)...)
	if res.NAT != nil {
		res.Accounting = append(res.Accounting, res.NAT.Accounting()...)
		a := res.NATApply
		c := func(name string, v int64) trace.Count {
			return trace.Count{Stage: trace.StageNAT, Name: name, Value: v}
		}
		res.Accounting = append(res.Accounting, c("rewrite_packets", a.Packets), c("rewrite_rewritten", a.Rewritten),
			c("rewrite_canonical", a.Canonical), c("rewrite_untouched", a.Untouched), c("rewrite_fragments", a.Fragments),
			c("rewrite_late", a.Late), c("rewrite_provisional", a.Provisional), c("delay_left_early", a.Early))
		if res.NAT.Given() != nil {
			res.Accounting = append(res.Accounting, c("rewrite_by_table", a.ByTable))
		}
	}
	res.Accounting = append(res.Accounting, res.Flows.Counts()...)
}

// ctxSource ends a source with its context's error once it is cancelled
// (checked every 4096 packets).
type ctxSource struct {
	flows.Source
	ctx context.Context
	n   int
}

func (c *ctxSource) Next() (*pcapio.Packet, error) {
	if c.n++; c.n%4096 == 0 && c.ctx.Err() != nil {
		return nil, c.ctx.Err()
	}
	return c.Source.Next()
}

// natStage is a source that renames packets: what it renamed them with,
// and its counters, once the source has ended.
type natStage interface {
	finish() (*nat.Table, nat.ApplyStats)
}

// givenSource is what flows reads with a given translation table and no
// learning: the merge renamed by the table as it goes.
type givenSource struct {
	m *pcapio.Merger
	c *nat.Canonicalizer
}

func (g *givenSource) Next() (*pcapio.Packet, error) {
	p, err := g.m.Next()
	if err != nil {
		return nil, err
	}
	g.c.Rewrite(p)
	return p, nil
}

func (g *givenSource) finish() (*nat.Table, nat.ApplyStats) {
	return g.c.Table(), g.c.Stats()
}

func (g *givenSource) keep()                    { g.m.Keep() }
func (g *givenSource) release(p *pcapio.Packet) { g.m.Release(p) }

// table is the given table: its aliases are the rows applied.
func (g *givenSource) table() *nat.Table { return g.c.Table() }

// tapSource hands every packet to fn on its way to flows.
type tapSource struct {
	flows.Source
	fn func(*pcapio.Packet)
}

func (t *tapSource) Next() (*pcapio.Packet, error) {
	p, err := t.Source.Next()
	if err == nil {
		t.fn(p)
	}
	return p, err
}

// natSource is what flows reads with NAT: the merge through a
// nat.Streamer (observed, held back, renamed).
type natSource struct {
	m     *pcapio.Merger
	s     *nat.Streamer
	ended bool
}

func (w *natSource) finish() (*nat.Table, nat.ApplyStats) {
	t := w.s.Finish()
	return t, w.s.Stats()
}

func (w *natSource) Next() (*pcapio.Packet, error) {
	for {
		if p := w.s.Pop(w.ended); p != nil {
			return p, nil
		}
		if w.ended {
			return nil, io.EOF
		}
		p, err := w.m.Next()
		if err == nil {
			w.s.Push(p)
			continue
		}
		if !errors.Is(err, io.EOF) {
			return nil, err
		}
		w.ended = true
	}
}

func (w *natSource) keep()                    { w.s.Keep() }
func (w *natSource) release(p *pcapio.Packet) { w.s.Recycle(p) }

// completeOffsets gives sniffers pcapio could not relate to the reference
// the offsets nat measured across translations: chained (clock.Chain) from
// the sniffers pcapio tied to the reference, each with its own offset and
// uncertainty, along the least summed uncertainty. For sniffers A < B,
// Clock.Offset is B's corrected clock minus A's. A completed sniffer has
// Method "nat", Via its path's root's Via and the sniffers from that root
// on. It reports whether it completed any.
func completeOffsets(offs []pcapio.Offset, clocks []nat.ClockOffset) bool {
	var roots []clock.Root
	for i, o := range offs {
		if o.Known {
			roots = append(roots, clock.Root{Clock: i, Offset: o.Offset, Uncertainty: o.Uncertainty})
		}
	}
	var edges []clock.Edge
	for _, c := range clocks {
		if c.Known {
			e := clock.Estimate{Known: true, Offset: c.Offset, Uncertainty: c.Uncertainty, Samples: min(c.SamplesAB, c.SamplesBA)}
			edges = append(edges, clock.Edge{A: int(c.A), B: int(c.B), Estimate: e})
		}
	}
	chained := clock.Chain(len(offs), roots, edges, clock.Options{})
	did := false
	for i, c := range chained {
		if offs[i].Known || !c.Known {
			continue
		}
		root := offs[c.Root]
		via := slices.Clone(root.Via)
		path := clock.Path(chained, i)
		for _, x := range path[:len(path)-1] {
			via = append(via, pcapio.SnifferID(x))
		}
		offs[i] = pcapio.Offset{Sniffer: pcapio.SnifferID(i), Reference: root.Reference, Known: true, Offset: c.Offset,
			Uncertainty: c.Uncertainty, Samples: c.Samples, Method: "nat", Via: via,
			Model: clock.Constant(clock.Estimate{Known: true, Offset: c.Offset, Uncertainty: c.Uncertainty, Samples: c.Samples})}
		did = true
	}
	return did
}

// sniffersFor describes the sniffers' clocks to reconcile.
func sniffersFor(sn []pcapio.Sniffer, offs []pcapio.Offset) []reconcile.Sniffer {
	out := make([]reconcile.Sniffer, len(sn))
	for i, s := range sn {
		out[i].Name = s.Name
		if i < len(offs) {
			o := offs[i]
			out[i].Known = o.Known
			out[i].Reference = o.Method == "reference"
			out[i].OffsetNS, out[i].UncertaintyNS, out[i].Samples, out[i].Method = o.Offset, o.Uncertainty, o.Samples, o.Method
			out[i].EpochNS, out[i].DriftKnown, out[i].DriftPPM, out[i].DriftUncertaintyPPM = o.EpochNS, o.DriftKnown, o.DriftPPM, o.DriftUncertaintyPPM
			for _, st := range o.Steps {
				out[i].Steps = append(out[i].Steps, trace.ClockStep{AtNS: st.AtNS, ByNS: st.ByNS})
			}
		}
	}
	return out
}

// captureCounts returns pcapio's accounting as trace counts.
func captureCounts(s *pcapio.Stats) []trace.Count {
	c := func(name string, v int64) trace.Count {
		return trace.Count{Stage: trace.StagePcapio, Name: name, Value: v}
	}
	t := s.Total
	return []trace.Count{
		c("records", t.Records), c("bytes", t.Bytes), c("decoded", t.Decoded), c("non_ip", t.NonIP),
		c("undecodable", t.Undecodable), c("truncated", t.Truncated), c("bad_ip_length", t.BadIPLength), c("bad_records", t.BadRecords),
		c("cut_records", t.CutRecords), c("filtered", t.Filtered), c("outside_time", s.OutsideTime), c("packets", s.Packets), c("duplicates", s.Duplicates),
		c("out_of_order", s.OutOfOrder), c("dropped_copies", s.DroppedCopies), c("early_releases", s.EarlyReleases),
	}
}

// readPreload reads the syscall traces into a table.
func readPreload(cfg *Config, res *Result) (*preload.Table, error) {
	paths, err := preload.ExpandPaths(cfg.Preload)
	if err != nil {
		return nil, err
	}
	tab := preload.NewTable()
	for i, p := range paths {
		progress(cfg.Progress, StagePreload, int64(i), int64(len(paths)))
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		r := preload.NewReader(f, p, cfg.PreloadOptions)
		err = tab.ReadFrom(r)
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, w := range r.Warnings() {
			res.Problems = append(res.Problems, errors.New(w))
		}
	}
	progress(cfg.Progress, StagePreload, int64(len(paths)), int64(len(paths)))
	res.Preload = tab
	c := func(name string, v int64) trace.Count {
		return trace.Count{Stage: trace.StagePreload, Name: name, Value: v}
	}
	k := tab.Counters
	res.Accounting = append(res.Accounting,
		c("files", int64(len(paths))), c("records", k.Records), c("data_calls", k.DataCalls), c("failed_calls", k.FailedCalls),
		c("empty_calls", k.EmptyCalls), c("peek_calls", k.PeekCalls), c("socket_calls", k.SocketCalls),
		c("process_calls", k.ProcessCalls), c("unknown_calls", k.UnknownCalls), c("unattributed", k.Unattributed), c("reopened", k.Reopened),
		c("skipped_lines", tab.Skipped))
	return tab, nil
}
