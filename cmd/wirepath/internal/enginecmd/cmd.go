package enginecmd

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// Spec describes an engine command (link, nest, convolve): its help, the
// engine it runs and the flags it has beyond the shared ones.
type Spec struct {
	Use, Short, Long, Example string
	// Flags are the engine's own flags; their Engine names the engine.
	Flags EngineFlags
	// AddFlags registers the command's own flags, if it has any.
	AddFlags func(fs *pflag.FlagSet)
	// Check checks the command's own flags once the shared ones are, if it
	// has any: an error is a usage error; it may warn on ios.
	Check func(ios *cmdutil.IOStreams, o *Options) error
}

// Options are an engine command's flags and argument.
type Options struct {
	Common Common
	// Workers is the number of goroutines the engine uses (0 = GOMAXPROCS).
	Workers int
	// Path is the trace to read.
	Path string
	// Progress shows the engine's progress; Run finishes it.
	Progress *Progress
}

// RunFunc does an engine command's work once its flags are checked and
// its engine is built: Run, or a command's own run around it.
type RunFunc func(ctx context.Context, ios *cmdutil.IOStreams, o *Options, eng causal.Engine) error

// NewCmd returns the engine command spec describes. Its RunE checks the
// shared flags, the engine's and the command's own, builds the engine
// (causal/engines) from them, mapping the engine's option error to a
// usage error that names the flag, and calls runF.
func NewCmd(ios *cmdutil.IOStreams, spec Spec, runF RunFunc) *cobra.Command {
	o := &Options{Progress: NewProgress(ios)}
	cmd := &cobra.Command{
		Use:     spec.Use,
		Short:   spec.Short,
		Long:    spec.Long,
		Example: spec.Example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			if err := o.Common.Resolve(cmd.Flags()); err != nil {
				return err
			}
			eng, err := o.engine(ios, &spec)
			if err != nil {
				return err
			}
			return runF(cmd.Context(), ios, o, eng)
		},
	}
	fs := cmd.Flags()
	o.Common.AddFlags(fs)
	spec.Flags.Register(fs, "")
	if spec.AddFlags != nil {
		spec.AddFlags(fs)
	}
	fs.IntVar(&o.Workers, "workers", 0, "goroutines to use (0 = one per CPU)")
	return cmd
}

// engine checks the flags and builds the engine they describe.
func (o *Options) engine(ios *cmdutil.IOStreams, spec *Spec) (causal.Engine, error) {
	if err := o.Common.Validate(); err != nil {
		return nil, err
	}
	if err := spec.Flags.Validate(); err != nil {
		return nil, err
	}
	if spec.Check != nil {
		if err := spec.Check(ios, o); err != nil {
			return nil, err
		}
	}
	eo := engines.DefaultOptions()
	eo.SetCommon(o.Common.Options())
	spec.Flags.Apply(&eo)
	eo.SetWorkers(o.Workers)
	o.Progress.Install(&eo)
	eng, err := eo.New(spec.Flags.Engine())
	if err != nil {
		return nil, OptionUsageError(err, spec.Flags)
	}
	return eng, nil
}
