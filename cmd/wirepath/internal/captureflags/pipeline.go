package captureflags

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pipeline"
	rec "github.com/wirepath/wirepath/reconcile"
)

// Pipeline holds the flags and arguments of the commands that run the
// front half of the pipeline (reconcile, analyze): the capture-reading
// flags, the syscall traces, NAT, reassembly and reconcile's naming.
type Pipeline struct {
	Flags
	Captures   []string
	Preload    []string
	Naming     string
	Roles      string
	Boundaries string
	NoNAT      bool
	NATTable   NATTable
	SplitPause time.Duration
	NoFraming  bool
	Strict     bool
	// The stages' tuning, as `wirepath messages` and `wirepath nat` take it.
	Settle, ReorderTimeout, IdleTimeout time.Duration
	FingerprintLen                      int
	NAT                                 nat.Options
	// Parquet is --parquet: the command writes the trace's messages (and
	// analyze the requests) with Parquet.Recorder and ends with
	// Parquet.Finish.
	Parquet Tables
	Protocols
	// warnings are what Config found worth a warning (the key log).
	warnings []string
}

// Register adds the flags to fs.
func (p *Pipeline) Register(fs *pflag.FlagSet) {
	def := flows.DefaultConfig()
	fs.StringArrayVar(&p.Preload, "preload", nil, "syscall trace `FILE` or directory of them (repeatable)")
	fs.StringVar(&p.Naming, "naming", "host", "node names: host, role or process")
	cmdutil.Enum(fs, "naming", "host", "role", "process")
	fs.StringVar(&p.Roles, "roles", "", "`FILE` naming hosts and endpoints, one \"ADDRESS[:PORT] NAME\" per line")
	fs.StringVar(&p.Boundaries, "boundaries", "fat", "message boundaries where a syscall trace shows the writes: fat (coalesce writes between direction changes) or writes")
	cmdutil.Enum(fs, "boundaries", "fat", "writes")
	fs.BoolVar(&p.NoNAT, "no-nat", false, "do not learn and undo address translations")
	p.NATTable.Register(fs)
	fs.DurationVar(&p.SplitPause, "split-pause", def.SplitPause, "cut a sniffed message when its sender pauses this long (0: never)")
	fs.BoolVar(&p.NoFraming, "no-framing", false, "do not cut sniffed messages at HTTP/DNS boundaries or pair calls by protocol")
	fs.BoolVar(&p.Strict, "strict", false, "stop at the first bad line of a syscall trace instead of skipping it")
	RegisterFlowsTuning(fs, &p.Settle, &p.ReorderTimeout, &p.IdleTimeout, &p.FingerprintLen)
	RegisterNATTuning(fs, &p.NAT)
	p.Parquet.Register(fs)
	p.Protocols.Register(fs)
	p.Flags.Register(fs)
}

// RegisterFlowsTuning adds flows' tuning flags (as messages has them).
func RegisterFlowsTuning(fs *pflag.FlagSet, settle, reorder, idle *time.Duration, fpLen *int) {
	def := flows.DefaultConfig()
	fs.DurationVar(settle, "settle", def.Settle, "how long a finished message waits for copies seen by other sniffers")
	fs.DurationVar(reorder, "reorder-timeout", def.ReorderTimeout, "how long out-of-order data waits for a missing segment")
	fs.DurationVar(idle, "idle-timeout", def.IdleTimeout, "end a TCP connection idle this long")
	fs.IntVar(fpLen, "fingerprint-len", def.FingerprintLen, fmt.Sprintf("leading bytes of a message its fingerprint covers (1-%d)", flows.MaxFingerprintLen))
}

// NATTable holds --nat-table and --nat-learn.
type NATTable struct {
	File  string
	Learn bool
}

// Register adds --nat-table and --nat-learn to fs.
func (t *NATTable) Register(fs *pflag.FlagSet) {
	fs.StringVar(&t.File, "nat-table", "", "undo the translations in `FILE` (the JSON of wirepath nat --format json, or \"[PROTO] OUTSIDE INSIDE\" lines) instead of learning them")
	fs.BoolVar(&t.Learn, "nat-learn", false, "with --nat-table, learn translations too: the learned ones first, the table renames the rest")
}

// Validate checks the flags against --no-nat; its errors are usage errors.
func (t *NATTable) Validate(noNAT bool) error {
	switch {
	case t.File != "" && noNAT:
		return cmdutil.UsageErrorf("--nat-table and --no-nat exclude each other")
	case t.Learn && t.File == "":
		return cmdutil.UsageErrorf("--nat-learn only goes with --nat-table (without a table, translations are learned unless --no-nat)")
	}
	return nil
}

// Apply reads the table, if one was given, into cfg.
func (t *NATTable) Apply(cfg *pipeline.Config) error {
	if t.File == "" {
		return nil
	}
	g, err := nat.ReadTableFile(t.File)
	if err != nil {
		return err
	}
	cfg.NATTable, cfg.NATLearn = g, t.Learn
	return nil
}

// RegisterNATTuning adds the NAT learner's tuning flags (as nat has them).
func RegisterNATTuning(fs *pflag.FlagSet, o *nat.Options) {
	def := nat.DefaultOptions()
	fs.DurationVar(&o.Window, "nat-window", def.Window, "how far apart in corrected time two copies of one packet may be")
	fs.DurationVar(&o.IdleTimeout, "nat-idle-timeout", def.IdleTimeout, "a connection silent this long has ended")
	fs.Float64Var(&o.MinEvidence, "min-evidence", def.MinEvidence, "weighted matches a mapping needs")
	fs.IntVar(&o.MinData, "min-data", def.MinData, "matches of packets with a payload a mapping needs")
	fs.Float64Var(&o.MinScore, "min-score", def.MinScore, "lowest score of an accepted mapping (0..1)")
}

// Validate checks the flags; its errors are usage errors.
func (p *Pipeline) Validate() error {
	if _, err := rec.ParseNaming(p.Naming); err != nil {
		return cmdutil.UsageErrorf("--naming: %v", err)
	}
	if p.Boundaries != "fat" && p.Boundaries != "writes" {
		return cmdutil.UsageErrorf("--boundaries must be fat or writes, not %q", p.Boundaries)
	}
	if p.SplitPause < 0 {
		return cmdutil.UsageErrorf("--split-pause must not be negative")
	}
	if p.FingerprintLen < 1 || p.FingerprintLen > flows.MaxFingerprintLen {
		return cmdutil.UsageErrorf("--fingerprint-len must be within 1-%d, not %d", flows.MaxFingerprintLen, p.FingerprintLen)
	}
	if err := p.NAT.Validate(); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err := p.NATTable.Validate(p.NoNAT); err != nil {
		return err
	}
	if err := p.Protocols.Validate(); err != nil {
		return err
	}
	_, err := p.Flags.Options()
	return err
}

// Config returns the pipeline configuration the flags describe (without
// the roles map, which Run reads).
func (p *Pipeline) Config() (pipeline.Config, error) {
	popts, err := p.Flags.Options()
	if err != nil {
		return pipeline.Config{}, err
	}
	naming, _ := rec.ParseNaming(p.Naming)
	fc := flows.DefaultConfig()
	fc.SplitPause = p.SplitPause
	fc.Framing = !p.NoFraming
	fc.Settle, fc.ReorderTimeout, fc.IdleTimeout = p.Settle, p.ReorderTimeout, p.IdleTimeout
	fc.FingerprintLen = p.FingerprintLen
	if p.warnings, err = p.Protocols.Apply(&fc); err != nil {
		return pipeline.Config{}, err
	}
	cfg := pipeline.Config{
		Captures: p.Captures, Capture: popts, NoNAT: p.NoNAT, Flows: fc, NAT: p.NAT,
		Preload: p.Preload,
	}
	if err := p.NATTable.Apply(&cfg); err != nil {
		return pipeline.Config{}, err
	}
	cfg.PreloadOptions.Strict = p.Strict
	cfg.Reconcile.Naming = naming
	if p.Boundaries == "writes" {
		cfg.Reconcile.Boundaries = rec.BoundWrites
	}
	// One cap for both: what the decoders take is what the trace keeps.
	cfg.Reconcile.MaxTokens = fc.MaxTokens
	if fc.MaxTokens == 0 || !fc.Evidence {
		cfg.Reconcile.MaxTokens = -1
	}
	return cfg, nil
}

// Run reads the roles map and runs the front half of the pipeline with a
// progress display per stage on stderr. An option that names no sniffer
// is a usage error (UsageOf), as in every command that reads captures.
func (p *Pipeline) Run(ios *cmdutil.IOStreams) (*pipeline.Result, error) {
	cfg, err := p.Config()
	if err != nil {
		return nil, err
	}
	for _, w := range p.warnings {
		ios.Warnf("%s", w)
	}
	if p.Roles != "" {
		if cfg.Reconcile.Roles, err = rec.ReadRoles(p.Roles); err != nil {
			return nil, err
		}
	}
	var done func()
	if err := p.Parquet.Install(&cfg); err != nil {
		return nil, err
	}
	cfg.Progress, done = StageProgress(ios)
	cfg.Context = p.Context
	res, err := pipeline.Run(cfg)
	done()
	if err != nil {
		return res, p.Parquet.Finish(ios, UsageOf(err))
	}
	return res, nil
}

// RunWindows is Run in windows of capture time (pipeline.RunWindows):
// fn gets each window's trace. With --parquet the packets and connections
// go to the tables as in Run; fn writes the windows' messages and
// requests (Parquet.Do), and the caller finishes the tables.
func (p *Pipeline) RunWindows(ios *cmdutil.IOStreams, w pipeline.Windows, fn func(*pipeline.Window) error) (*pipeline.Result, pipeline.WindowStats, error) {
	cfg, err := p.Config()
	if err != nil {
		return nil, pipeline.WindowStats{}, err
	}
	for _, w := range p.warnings {
		ios.Warnf("%s", w)
	}
	if p.Roles != "" {
		if cfg.Reconcile.Roles, err = rec.ReadRoles(p.Roles); err != nil {
			return nil, pipeline.WindowStats{}, err
		}
	}
	if err := p.Parquet.Install(&cfg); err != nil {
		return nil, pipeline.WindowStats{}, err
	}
	var done func()
	cfg.Progress, done = StageProgress(ios)
	cfg.Context = p.Context
	res, st, err := pipeline.RunWindows(cfg, w, fn)
	done()
	if err != nil {
		return res, st, p.Parquet.Finish(ios, UsageOf(err))
	}
	return res, st, nil
}

// PipelineOutcome prints the problems in the input as warnings and returns
// the exit status of a pipeline run: a *cmdutil.PartialError when some
// input (a capture record, a syscall-trace line) was bad and skipped.
func PipelineOutcome(ios *cmdutil.IOStreams, res *pipeline.Result) error {
	for _, p := range res.Problems {
		ios.Warnf("%v", p)
	}
	return PipelineStatus(res)
}

// PipelineStatus is PipelineOutcome without the warnings, for a command
// that shows the problems otherwise (in its report).
func PipelineStatus(res *pipeline.Result) error {
	err := StatusOf(res.Capture)
	if err == nil && res.Preload != nil && res.Preload.Skipped > 0 {
		err = &cmdutil.PartialError{Skipped: int(res.Preload.Skipped), What: "bad lines in the syscall traces were skipped"}
	}
	return err
}
