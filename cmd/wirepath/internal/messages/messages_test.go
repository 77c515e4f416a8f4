package messages

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdtest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// TestFlags parses command lines through the command and checks the
// options it would run with, or that validation refuses them.
func TestFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
		check   func(o *Options) bool
	}{
		{[]string{"a.pcap"}, false, func(o *Options) bool {
			return o.Format == "tsv" && o.SplitPause == 500*time.Millisecond && o.Config().Framing && len(o.Captures) == 1
		}},
		{[]string{"--format", "jsonl", "--split-pause", "0", "--no-framing", "a", "b"}, false, func(o *Options) bool {
			return o.Format == "jsonl" && o.Config().SplitPause == 0 && !o.Config().Framing && len(o.Captures) == 2
		}},
		{[]string{"--conns", "--json", "-o", "x", "--fingerprint-len", "128", "--settle", "0", "a"}, false, func(o *Options) bool {
			return o.Conns && o.JSON && o.Output == "x" && o.Config().FingerprintLen == 128 && o.Config().Settle == 0
		}},
		{[]string{"--format", "csv", "a"}, true, nil},
		{[]string{"--fingerprint-len", "129", "a"}, true, nil},
		{[]string{"--reorder-timeout", "0s", "a"}, true, nil},
		{[]string{"--idle-timeout", "-1s", "a"}, true, nil},
		{[]string{"--settle", "-1s", "a"}, true, nil},
		{[]string{"--window", "0", "a"}, true, nil},
		{[]string{"--offset", "b.pcap", "a"}, true, nil},
		{[]string{"--split-interfaces", "--no-dedupe", "--offset", "b.pcap=-2s", "a", "b.pcap"}, false, func(o *Options) bool {
			po, err := o.Flags.Options()
			return err == nil && po.SplitInterfaces && po.NoDedupe && po.Offsets["b.pcap"] == -2*time.Second
		}},
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
