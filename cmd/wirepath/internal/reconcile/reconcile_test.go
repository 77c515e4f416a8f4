package reconcile

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdtest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	rec "github.com/wirepath/wirepath/reconcile"
)

// TestFlags parses command lines through the command and checks the
// pipeline configuration it would run with, or that validation refuses
// them.
func TestFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
		check   func(o *Options) bool
	}{
		{[]string{"a.pcap"}, false, func(o *Options) bool {
			c, err := o.Config()
			return err == nil && c.Reconcile.Naming == rec.NameHost && c.Reconcile.Boundaries == rec.BoundFat &&
				!c.NoNAT && c.Flows.Framing && c.Flows.SplitPause == 500*time.Millisecond && len(c.Captures) == 1 && len(c.Preload) == 0
		}},
		{[]string{"--naming", "process", "--preload", "t1", "--preload", "dir", "--boundaries", "writes", "--no-nat", "--strict", "a", "b"}, false, func(o *Options) bool {
			c, err := o.Config()
			return err == nil && c.Reconcile.Naming == rec.NameProcess && c.Reconcile.Boundaries == rec.BoundWrites &&
				c.NoNAT && c.PreloadOptions.Strict && len(c.Preload) == 2 && len(c.Captures) == 2
		}},
		{[]string{"--naming", "ROLE", "--split-pause", "0", "--no-framing", "--json", "-o", "t.tsv", "--offset", "b=1s", "a"}, false, func(o *Options) bool {
			c, err := o.Config()
			return err == nil && c.Reconcile.Naming == rec.NameRole && c.Flows.SplitPause == 0 && !c.Flows.Framing &&
				c.Capture.Offsets["b"] == time.Second && o.JSON && o.Output == "t.tsv"
		}},
		{[]string{"--naming", "node", "a"}, true, nil},
		{[]string{"--boundaries", "lines", "a"}, true, nil},
		{[]string{"--format", "csv", "a"}, true, nil},
		{[]string{"--json", "a"}, true, nil},
		{[]string{"--json", "-o", "-", "a"}, true, nil},
		{[]string{"--split-pause", "-1s", "a"}, true, nil},
		{[]string{"--window", "0", "a"}, true, nil},
	}
	for _, tc := range tests {
		var got *Options
		cmd := newCmd(&cmdutil.IOStreams{}, func(o *Options) error { got = o; return nil })
		err := cmdtest.Execute(cmd, tc.args...)
		if tc.wantErr {
			cmdtest.WantUsage(t, err, "")
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
