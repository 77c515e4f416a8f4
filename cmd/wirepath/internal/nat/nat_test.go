package nat

import (
	"io"
	"testing"
	"time"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdtest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pcapio"
)

// TestFlags parses command lines through the command and checks the
// options it would run with, or that validation refuses them.
func TestFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // a usage error naming it
		check   func(o *Options) bool
	}{
		{args: []string{"a.pcap"}, check: func(o *Options) bool {
			n := o.NAT()
			po, err := o.Flags.Options()
			return err == nil && n.Window == 2*time.Second && n.IdleTimeout == 2*time.Minute && n.MinData == 2 &&
				po.Window == pcapio.DefaultWindow && !po.NoOffsets && len(o.Captures) == 1
		}},
		{args: []string{"--nat-window", "5s", "--nat-idle-timeout", "1m", "--min-score", "0.7", "--all", "--json", "a", "b"}, check: func(o *Options) bool {
			n := o.NAT()
			return n.Window == 5*time.Second && n.IdleTimeout == time.Minute && n.MinScore == 0.7 && o.All && o.JSON && len(o.Captures) == 2
		}},
		// The shared capture flags mean what they mean everywhere.
		{args: []string{"--dedupe-window", "20ms", "--no-offsets", "--split-interfaces", "--reference", "b", "--offset", "b=1s", "a", "b"}, check: func(o *Options) bool {
			po, err := o.Flags.Options()
			return err == nil && po.Window == 20*time.Millisecond && po.NoOffsets && po.SplitInterfaces && po.Reference == "b" &&
				po.Offsets["b"] == time.Second && o.NAT().Window == 2*time.Second
		}},
		// The old names still work.
		{args: []string{"--no-clock-offsets", "--window", "7ms", "a"}, check: func(o *Options) bool {
			return o.NoOffsets && o.Flags.Window == 7*time.Millisecond
		}},
		{args: []string{"--nat-window", "0s", "a"}, wantErr: "--nat-window"},
		{args: []string{"--nat-window", "2m", "a"}, wantErr: "--nat-idle-timeout"},
		{args: []string{"--min-data", "-1", "a"}, wantErr: "--min-data"},
		{args: []string{"--min-score", "1.5", "a"}, wantErr: "--min-score"},
		{args: []string{"--window", "0s", "a"}, wantErr: "--dedupe-window"},
		{args: []string{"--offset", "b", "a"}, wantErr: "--offset"},
	}
	for _, tc := range tests {
		var got *Options
		cmd := newCmd(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(o *Options) error { got = o; return nil })
		err := cmdtest.Execute(cmd, tc.args...)
		if tc.wantErr != "" {
			cmdtest.WantUsage(t, err, tc.wantErr)
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got == nil || !tc.check(got) {
			t.Errorf("%v: options %+v", tc.args, got)
		}
	}
}
