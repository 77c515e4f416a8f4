package nest

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdtest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
)

func TestFlags(t *testing.T) {
	def := nesting.DefaultOptions()
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(o nesting.Options) bool
	}{
		{args: []string{"t.tsv"}, check: func(o nesting.Options) bool {
			return o.OverlapExp == 2 && o.SameExp == 0 && o.GenericExp == 0 && o.Smooth == 0 &&
				o.SkewWindow == 0 && o.BinBase == 1.05 && o.BinMin == 1e6 && o.Bins == 340 && o.Rank == def.Rank
		}},
		{args: []string{"--overlap-penalty", "1.5", "--same-penalty", "1", "--generic-penalty", "0.5", "t.tsv"}, check: func(o nesting.Options) bool {
			return o.OverlapExp == 1.5 && o.SameExp == 1 && o.GenericExp == 0.5
		}},
		{args: []string{"--skew-window", "30ms", "--smooth", "2", "t.tsv"}, check: func(o nesting.Options) bool {
			return o.SkewWindow == int64(30*time.Millisecond) && o.Smooth == 2
		}},
		{args: []string{"--bin-base", "1.1", "--bin-min", "100us", "--bins", "200", "t.tsv"}, check: func(o nesting.Options) bool {
			return o.BinBase == 1.1 && o.BinMin == 100e3 && o.Bins == 200
		}},
		{args: []string{"--no-aggregate-clients", "--rank", "count", "--instances", "-1", "t.tsv"}, check: func(o nesting.Options) bool {
			return !o.Aggregate.Naming.AggregateClients && o.Rank == causal.RankCount && o.Aggregate.KeepInstances && o.Aggregate.MaxKept == 0
		}},
		{args: []string{"--bins", "0", "t.tsv"}, wantErr: "--bins"},
		{args: []string{"--bin-base", "1", "t.tsv"}, wantErr: "--bin-base"},
		{args: []string{"--skew-window", "-1s", "t.tsv"}, wantErr: "--skew-window"},
		{args: []string{"--smooth", "-1", "t.tsv"}, wantErr: "--smooth"},
		{args: []string{"--format", "xml", "t.tsv"}, wantErr: "--format"},
		{args: []string{"--call-paths", "-1", "t.tsv"}, wantErr: "--call-paths"},
		{args: []string{}, wantErr: "accepts 1 arg"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *nesting.Options
			ios := &cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}
			cmd := newCmd(ios, &flags{}, func(_ context.Context, _ *cmdutil.IOStreams, o *enginecmd.Options, eng causal.Engine) error {
				opt := eng.(*nesting.Engine).Options()
				got = &opt
				if o.Path != "t.tsv" {
					t.Errorf("path %q", o.Path)
				}
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
