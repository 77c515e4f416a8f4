package gen

import (
	"bytes"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// parse runs the command on multitier with args, with a run function that
// applies the parsed options to the config instead of generating.
func parse(t *testing.T, args ...string) (*Options, *gen.Config, error) {
	t.Helper()
	ios := &cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	var opts *Options
	var cfg *gen.Config
	cmd := newCmd(ios, func(_ *cmdutil.IOStreams, o *Options) error {
		opts = o
		c, err := gen.LoadConfig(o.Config)
		if err != nil {
			return err
		}
		o.apply(c)
		cfg = c
		return c.Validate()
	})
	cmd.SetArgs(append([]string{"multitier"}, args...))
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return opts, cfg, err
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		check func(*Options, *gen.Config) bool
		bad   bool
	}{
		{"defaults keep the config", nil, func(o *Options, c *gen.Config) bool {
			return c.Seed == 1 && c.Duration == gen.Duration(1300*time.Second) && c.DelayScale == nil && c.Drop == gen.Drop{} && o.Truth == ""
		}, false},
		{"truth next to -o", []string{"-o", "x/mt.tsv"}, func(o *Options, c *gen.Config) bool { return o.Truth == "x/mt.truth.tsv" }, false},
		{"instances replace duration", []string{"--instances", "10"}, func(o *Options, c *gen.Config) bool { return c.Instances == 10 && c.Duration == 0 }, false},
		{"duration replaces", []string{"--duration", "5s"}, func(o *Options, c *gen.Config) bool { return c.Duration == gen.Duration(5*time.Second) }, false},
		{"skew", []string{"--skew", "WS2=30ms", "--skew", "CLIENT=-1s"}, func(o *Options, c *gen.Config) bool {
			return c.Skew["WS2"] == gen.Duration(30*time.Millisecond) && c.Skew["CLIENT"] == gen.Duration(-time.Second)
		}, false},
		{"drop", []string{"--drop-rate", "400"}, func(o *Options, c *gen.Config) bool { return c.Drop.Rate == 400 && c.Drop.Queue == 64 }, false},
		{"delay scale 0", []string{"--delay-scale", "0"}, func(o *Options, c *gen.Config) bool { return c.DelayScale != nil && *c.DelayScale == 0 }, false},
		{"single", []string{"--single-timestamp", "--no-call-ids", "--names", "addr"}, func(o *Options, c *gen.Config) bool {
			return c.Timestamps == "single" && c.CallIDs != nil && !*c.CallIDs && c.Names == "addr"
		}, false},
		{"bad skew", []string{"--skew", "WS2"}, nil, true},
		{"bad skew node", []string{"--skew", "WS9=1ms"}, nil, true},
		{"bad names", []string{"--names", "ip"}, nil, true},
		{"bad random", []string{"--drop-random", "1"}, nil, true},
		{"truth is output", []string{"-o", "a.tsv", "--truth", "a.tsv"}, nil, true},
	} {
		o, c, err := parse(t, tc.args...)
		if (err != nil) != tc.bad {
			t.Errorf("%s: error %v", tc.name, err)
			continue
		}
		if err == nil && !tc.check(o, c) {
			t.Errorf("%s: options %+v config %+v", tc.name, o, c)
		}
	}
}
