package assembly

import (
	"fmt"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// Name is the assembly engine's name in results and on the command line.
const Name = "assembly"

// EM says how the models are re-fitted between passes.
type EM string

// The re-fitting modes.
const (
	// EMHard re-fits the models from the best assignment of the last pass.
	EMHard EM = "hard"
	// EMSoft re-fits them from the last pass's posterior of each call's
	// request (softfit.go).
	EMSoft EM = "soft"
	// EMAuto re-fits a node's models by soft EM while its calls' requests
	// are in doubt (their mean posterior below softBelow), by hard EM
	// once they are not.
	EMAuto EM = "auto"
)

// Init says how a node's first model estimates its delays and call graph
// before any assignment (deconv.go).
type Init string

// The first models.
const (
	// InitFloor subtracts, from the histogram of the delays from each
	// kind of trigger to each kind of message, the floor of unrelated
	// pairs measured beyond the delays (Project 5's convolution).
	InitFloor Init = "floor"
	// InitCluster fits the messages sent as a Poisson cluster process of
	// the triggers (each message caused by one trigger before it, or by
	// none) by EM.
	InitCluster Init = "cluster"
)

// Options are the parameters of the assembly engine.
type Options struct {
	causal.Options
	// Tolerance is the clock error allowed when two timestamps compared at
	// one node were taken by different capture points: a child may be sent
	// up to Tolerance before its parent's arrival, and answered up to
	// Tolerance after its parent's reply left.
	Tolerance time.Duration
	// StatedClockError, when the trace states every node's clock offset
	// as known, takes the tolerance from them instead: the largest
	// offset's stated uncertainty, at least MinTolerance and at most
	// Tolerance (statedTolerance).
	StatedClockError bool
	// LearnClockError, when the trace does not state every node's clock
	// offset, learns the tolerance per node from the links the trace
	// makes certain, at most Tolerance (tolerance.go).
	LearnClockError bool
	// Beam is the most hypotheses the search keeps per node; a window in
	// which it never had to drop one is solved exactly.
	Beam int
	// Passes is the number of search passes every node runs; the models
	// are re-fitted between passes (EM).
	Passes int
	// MaxPasses is the most passes a node runs whose assignment has not
	// settled after Passes (passPlan); at most Passes, every node runs
	// Passes.
	MaxPasses int
	// EM is how the models are re-fitted: hard, soft or auto.
	EM EM
	// Init is how the first model is estimated: floor or cluster.
	Init Init
	// Alternatives is the number K of alternative parents listed per link,
	// at most searchAlts: a presentation choice, the search keeps
	// searchAlts per call whatever K is.
	Alternatives int
	// MaxOpen bounds how long a request whose arrival or reply was not seen
	// is taken to have been open.
	MaxOpen time.Duration
	// Workers bounds the goroutines used; 0 means GOMAXPROCS.
	Workers int
}

// DefaultOptions returns the engine's defaults.
func DefaultOptions() Options {
	return Options{
		Options:          causal.DefaultOptions(),
		Tolerance:        100 * time.Microsecond,
		StatedClockError: true,
		LearnClockError:  true,
		Beam:             16,
		Passes:           3,
		MaxPasses:        8,
		EM:               EMAuto,
		Init:             InitFloor,
		Alternatives:     3,
		MaxOpen:          10 * time.Second,
	}
}

// Validate checks the options. The error is a *causal.OptionError naming
// the first option out of range by its flag.
func (o *Options) Validate() error {
	bad := func(option, msg string) error { return causal.OptionErrorf(Name, option, "%s", msg) }
	switch {
	case o.Tolerance < 0 || o.Tolerance > time.Minute:
		return bad("clock-error", "the clock error must be between 0 and 1m")
	case o.Beam < 1 || o.Beam > 1<<16:
		return bad("beam", "the beam must be between 1 and 65536 hypotheses")
	case o.Passes < 1 || o.Passes > 100:
		return bad("passes", "the number of passes must be between 1 and 100")
	case o.MaxPasses < 1 || o.MaxPasses > 100:
		return bad("max-passes", "the most passes must be between 1 and 100")
	case o.EM != EMHard && o.EM != EMSoft && o.EM != EMAuto:
		return bad("em", "em must be hard, soft or auto")
	case o.Init != InitFloor && o.Init != InitCluster:
		return bad("init", "init must be floor or cluster")
	case o.Alternatives < 0 || o.Alternatives > searchAlts:
		return bad("alternatives", fmt.Sprintf("the number of alternatives must be between 0 and %d (the engine ranks %d other requests per link)", searchAlts, searchAlts))
	case o.MaxOpen <= 0:
		return bad("max-open", "max-open must be positive")
	case o.Workers < 0:
		return bad("workers", "workers must not be negative")
	}
	return o.Options.Validate(Name)
}

// Params returns the options by the names of the assemble command's
// flags, for Result.Params.
func (o *Options) Params() map[string]any {
	return map[string]any{
		"clock-error":        o.Tolerance.String(),
		"stated-clock-error": o.StatedClockError,
		"learn-clock-error":  o.LearnClockError,
		"beam":               o.Beam,
		"passes":             o.Passes,
		"max-passes":         o.MaxPasses,
		"em":                 string(o.EM),
		"init":               string(o.Init),
		"alternatives":       o.Alternatives,
		"max-open":           o.MaxOpen.String(),
		"rank":               string(o.Rank),
	}
}

// MinTolerance is the least tolerance taken from a trace's stated clock
// error: a microsecond, the resolution of classic pcap timestamps.
const MinTolerance = time.Microsecond

// statedTolerance is the tolerance for the messages ms: with
// StatedClockError and a trace that states every node's clock offset as
// known (reconcile's, from the sniffers' and traced hosts' clocks) it is
// the largest stated uncertainty, between MinTolerance and Tolerance;
// otherwise (generated traces, a node no capture point timed) Tolerance.
func statedTolerance(opt Options, ms trace.Messages) int64 {
	tol := int64(opt.Tolerance)
	meta := ms.Metadata()
	if !opt.StatedClockError || meta == nil || len(meta.Offsets) == 0 {
		return tol
	}
	var u int64
	for _, o := range meta.Offsets {
		if !o.Known {
			return tol
		}
		u = max(u, o.UncertaintyNS)
	}
	return min(tol, max(u, int64(MinTolerance)))
}
