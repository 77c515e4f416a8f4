package convolve

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdtest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(o convolution.Options) bool
	}{
		{args: []string{"t.tsv"}, check: func(o convolution.Options) bool {
			return o.Quantum == 10e6 && o.NSigma == 4 && o.Dip == 3 && o.Window == 0 && o.MaxDelay == 0 &&
				o.MaxDepth == 16 && o.MinCount == 10 && o.MinFraction == 0.05 && o.MaxVertices == 2000 && len(o.Roots) == 0
		}},
		{args: []string{"--quantum", "5s", "--max-delay", "10m", "--window", "7s", "t.tsv"}, check: func(o convolution.Options) bool {
			return o.Quantum == int64(5*time.Second) && o.MaxDelay == int64(10*time.Minute) && o.Window == int64(7*time.Second)
		}},
		{args: []string{"--spike-sigma", "5", "--dip-sigma", "2", "--min-count", "100", "--min-fraction", "0.2", "t.tsv"}, check: func(o convolution.Options) bool {
			return o.NSigma == 5 && o.Dip == 2 && o.MinCount == 100 && o.MinFraction == 0.2
		}},
		{args: []string{"--root", "a", "--root", "b,c", "--max-depth", "4", "--max-hops", "9", "t.tsv"}, check: func(o convolution.Options) bool {
			return slices.Equal(o.Roots, []string{"a", "b", "c"}) && o.MaxDepth == 4 && o.MaxVertices == 9
		}},
		{args: []string{"--quantum", "0s", "t.tsv"}, wantErr: "--quantum"},
		{args: []string{"--dip-sigma", "4", "t.tsv"}, wantErr: "--dip-sigma"},
		{args: []string{"--spike-sigma", "0", "t.tsv"}, wantErr: "--spike-sigma"},
		{args: []string{"--min-fraction", "1.5", "t.tsv"}, wantErr: "--min-fraction"},
		{args: []string{"--max-hops", "0", "t.tsv"}, wantErr: "--max-hops"},
		{args: []string{"--rank", "best", "t.tsv"}, wantErr: "--rank"},
		{args: []string{"a.tsv", "b.tsv"}, wantErr: "accepts 1 arg"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *convolution.Options
			ios := &cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}
			cmd := newCmd(ios, func(_ context.Context, _ *cmdutil.IOStreams, _ *enginecmd.Options, eng causal.Engine) error {
				opt := eng.(*convolution.Engine).Options()
				got = &opt
				return nil
			})
			err := cmdtest.Execute(cmd, tc.args...)
			if tc.wantErr != "" {
				if strings.HasPrefix(tc.wantErr, "--") {
					cmdtest.WantUsage(t, err, tc.wantErr)
				} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !tc.check(*got) {
				t.Errorf("options %+v", got)
			}
		})
	}
}
