package analyze

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdtest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	rec "github.com/wirepath/wirepath/reconcile"
)

// TestFlags parses command lines through the command and checks the
// pipeline configuration and engine options it would run with, or that
// validation refuses them with a usage error naming the flag.
func TestFlags(t *testing.T) {
	def := engines.DefaultOptions()
	tests := []struct {
		args    []string
		wantErr string
		check   func(o *Options, eo engines.Options) bool
	}{
		{args: []string{"a.pcap"}, check: func(o *Options, eo engines.Options) bool {
			c, err := o.Config()
			return err == nil && o.Engine == "auto" && o.Common.Format == "text" && o.Common.Top == 10 &&
				c.Reconcile.Naming == rec.NameHost && !c.NoNAT && len(c.Captures) == 1 &&
				eo.Linking.Window == def.Linking.Window && eo.Nesting.Bins == def.Nesting.Bins && eo.Convolution.Quantum == def.Convolution.Quantum &&
				eo.Linking.Aggregate.MaxPatterns == 10000 && eo.Nesting.Rank == causal.RankExpected
		}},
		{args: []string{"--engine", "all", "--format", "json", "-o", "r.json", "--save-trace", "t.tsv", "a", "b"}, check: func(o *Options, _ engines.Options) bool {
			return o.Engine == "all" && o.Common.Format == "json" && o.Common.Output == "r.json" && o.SaveTrace == "t.tsv" && len(o.Captures) == 2
		}},
		// The pipeline's flags are reconcile's.
		{args: []string{"--naming", "role", "--roles", "r.txt", "--no-nat", "--reference", "b", "--offset", "c=2s", "--preload", "tr/", "a"}, check: func(o *Options, _ engines.Options) bool {
			c, err := o.Config()
			return err == nil && c.Reconcile.Naming == rec.NameRole && o.Roles == "r.txt" && c.NoNAT &&
				c.Capture.Reference == "b" && c.Capture.Offsets["c"] == 2*time.Second && len(c.Preload) == 1
		}},
		// The shared result flags reach every engine.
		{args: []string{"--rank", "count", "--no-aggregate-clients", "--keep-ephemeral-ports", "--min-peers", "5", "--histograms", "--instances", "-1", "--workers", "3", "a"}, check: func(_ *Options, eo engines.Options) bool {
			for _, c := range []causal.Options{eo.Linking.Options, eo.Nesting.Options, eo.Convolution.Options} {
				n := c.Aggregate.Naming
				if c.Rank != causal.RankCount || n.AggregateClients || n.EphemeralPorts || n.Roles.MinPeers != 5 || !c.Aggregate.Histograms || !c.Aggregate.KeepInstances {
					return false
				}
			}
			return eo.Linking.Workers == 3 && eo.Nesting.Workers == 3 && eo.Convolution.Workers == 3
		}},
		// Each engine's own flags, prefixed.
		{args: []string{"--link-window", "100ms", "--link-try-both-budget", "6", "--link-clients", "--link-max-patterns", "5", "a"}, check: func(_ *Options, eo engines.Options) bool {
			return eo.Linking.Window == 100*time.Millisecond && eo.Linking.TryBothBudget == 6 && !eo.Linking.ClientRoots && eo.Linking.Aggregate.MaxPatterns == 5
		}},
		{args: []string{"--link-calls=false", "--link-delay-model", "exponential", "--link-normalize-roots=false", "--link-reparent=false", "a"}, check: func(_ *Options, eo engines.Options) bool {
			return !eo.Linking.Calls && eo.Linking.DelayModel == linking.DelayExponential && !eo.Linking.NormalizeRoots && !eo.Linking.Reparent
		}},
		{args: []string{"--link-pure-wap5", "a"}, check: func(_ *Options, eo engines.Options) bool {
			p := linking.PureWAP5Options()
			return eo.Linking.Calls == p.Calls && eo.Linking.DelayModel == p.DelayModel && eo.Linking.Iterations == p.Iterations &&
				eo.Linking.NormalizeRoots == p.NormalizeRoots && eo.Linking.Reparent == p.Reparent
		}},
		{args: []string{"--link-pure-wap5", "--link-iterations", "2", "a"}, wantErr: "--link-pure-wap5 sets --link-iterations"},
		{args: []string{"--link-delay-model", "gamma", "a"}, wantErr: "delay model"},
		{args: []string{"--nest-skew-window", "30ms", "--nest-smooth", "2", "--nest-bins", "200", "a"}, check: func(_ *Options, eo engines.Options) bool {
			return eo.Nesting.SkewWindow == int64(30*time.Millisecond) && eo.Nesting.Smooth == 2 && eo.Nesting.Bins == 200
		}},
		{args: []string{"--conv-quantum", "5ms", "--conv-root", "client", "--conv-max-delay", "1s", "a"}, check: func(_ *Options, eo engines.Options) bool {
			return eo.Convolution.Quantum == int64(5*time.Millisecond) && len(eo.Convolution.Roots) == 1 && eo.Convolution.MaxDelay == int64(time.Second)
		}},
		// The stages' tuning flags reach the pipeline's configuration.
		{args: []string{"--min-score", "0.7", "--idle-timeout", "1m", "--settle", "2s", "--reorder-timeout", "3s", "--fingerprint-len", "32", "--nat-window", "1s", "-f", "tcp", "--start", "+1s", "a"}, check: func(o *Options, _ engines.Options) bool {
			cfg, err := o.Pipeline.Config()
			return err == nil && cfg.NAT.MinScore == 0.7 && cfg.Flows.IdleTimeout == time.Minute && cfg.Flows.Settle == 2*time.Second &&
				cfg.Flows.ReorderTimeout == 3*time.Second && cfg.Flows.FingerprintLen == 32 && cfg.NAT.Window == time.Second &&
				cfg.Capture.Filter != nil && cfg.Capture.Start.Relative
		}},
		{args: []string{"--fingerprint-len", "0", "a"}, wantErr: "--fingerprint-len"},
		{args: []string{"--min-score", "2", "a"}, wantErr: "score"},
		{args: []string{"--engine", "bogus", "a"}, wantErr: "--engine"},
		{args: []string{"--format", "xml", "a"}, wantErr: "--format"},
		{args: []string{"--naming", "pid", "a"}, wantErr: "--naming"},
		{args: []string{"--dedupe-window", "0", "a"}, wantErr: "--dedupe-window"},
		{args: []string{"--nest-bins", "0", "a"}, wantErr: "--nest-bins"},
		{args: []string{"--conv-quantum", "0", "a"}, wantErr: "--conv-quantum"},
		{args: []string{"--link-try-both-low", "0.8", "a"}, wantErr: "try-both low"},
		{args: []string{"--link-max-patterns", "-1", "a"}, wantErr: "--link-max-patterns"},
		{args: []string{"--workers", "-1", "a"}, wantErr: "--workers"},
		{args: []string{"--top", "-1", "a"}, wantErr: "--top"},
		{args: []string{}, wantErr: "requires at least 1 arg"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *Options
			var gotEO engines.Options
			ios := &cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}
			cmd := newCmd(ios, func(_ context.Context, o *Options, eo engines.Options) error {
				got, gotEO = o, eo
				return nil
			})
			cmd.SetArgs(tc.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmdutil.Execute(cmd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
				}
				if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
					t.Errorf("error %v exits %d, want %d", err, cmdutil.ExitCode(err), cmdutil.ExitUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !tc.check(got, gotEO) {
				t.Errorf("options %+v\nengines %+v", got, gotEO)
			}
		})
	}
}

// TestUsageErrorsAreUsage checks errors.Is for the usage sentinel on an
// engine option error, which exit codes rely on.
func TestUsageErrorsAreUsage(t *testing.T) {
	ios := &cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}
	cmd := newCmd(ios, func(context.Context, *Options, engines.Options) error { return nil })
	cmdtest.WantUsage(t, cmdtest.Execute(cmd, "--nest-smooth", "-1", "a"), "--nest-smooth")
}
