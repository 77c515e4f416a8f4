package captureflags

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	rec "github.com/wirepath/wirepath/reconcile"
)

func TestOptions(t *testing.T) {
	cases := []struct {
		args    []string
		usage   bool
		check   func(t *testing.T, f *Flags)
		offsets map[string]time.Duration
	}{
		{args: nil, check: func(t *testing.T, f *Flags) {
			if f.Window != 5*time.Millisecond || f.SplitInterfaces || f.NoOffsets {
				t.Errorf("defaults %+v", f)
			}
		}},
		{args: []string{"--offset", "b.pcap=-2m17.25s", "--offset", "c.pcap=1ms"},
			offsets: map[string]time.Duration{"b.pcap": -(2*time.Minute + 17250*time.Millisecond), "c.pcap": time.Millisecond}},
		{args: []string{"--offset", "b.pcap"}, usage: true},
		{args: []string{"--offset", "=1s"}, usage: true},
		{args: []string{"--offset", "b.pcap=soon"}, usage: true},
		{args: []string{"--window", "0s"}, usage: true},
		{args: []string{"--split-interfaces", "--no-offsets", "--no-dedupe", "--reference", "x", "--window", "20ms"}, check: func(t *testing.T, f *Flags) {
			o, _ := f.Options()
			if !o.SplitInterfaces || !o.NoOffsets || !o.NoDedupe || o.Reference != "x" || o.Window != 20*time.Millisecond {
				t.Errorf("options %+v", o)
			}
		}},
	}
	for _, c := range cases {
		var f Flags
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		o, err := f.Options()
		if c.usage {
			if !errors.Is(err, cmdutil.ErrUsage) {
				t.Errorf("%v: error %v, want a usage error", c.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if c.offsets != nil {
			for k, v := range c.offsets {
				if o.Offsets[k] != v {
					t.Errorf("%v: offsets %v", c.args, o.Offsets)
				}
			}
		}
		if c.check != nil {
			c.check(t, &f)
		}
	}
}

func TestPipelineFlags(t *testing.T) {
	cases := []struct {
		args  []string
		usage bool
		check func(t *testing.T, p *Pipeline)
	}{
		{args: nil, check: func(t *testing.T, p *Pipeline) {
			c, err := p.Config()
			if err != nil || c.NoNAT || !c.Flows.Framing || c.Flows.SplitPause != 500*time.Millisecond || c.Reconcile.Naming.String() != "host" || c.PreloadOptions.Strict ||
				c.Reconcile.MaxTokens != 32 {
				t.Errorf("defaults: %+v %v", c, err)
			}
		}},
		{args: []string{"--naming", "role", "--no-nat", "--no-framing", "--split-pause", "0", "--strict", "--preload", "d", "--boundaries", "writes", "--reference", "o.pcap"}, check: func(t *testing.T, p *Pipeline) {
			c, err := p.Config()
			if err != nil || !c.NoNAT || c.Flows.Framing || c.Flows.SplitPause != 0 || c.Reconcile.Naming.String() != "role" ||
				!c.PreloadOptions.Strict || len(c.Preload) != 1 || c.Reconcile.Boundaries != rec.BoundWrites || c.Capture.Reference != "o.pcap" {
				t.Errorf("config: %+v %v", c, err)
			}
		}},
		{args: []string{"--tokens", "7"}, check: func(t *testing.T, p *Pipeline) {
			if c, err := p.Config(); err != nil || c.Reconcile.MaxTokens != 7 {
				t.Errorf("--tokens 7: MaxTokens %d, %v", c.Reconcile.MaxTokens, err)
			}
		}},
		{args: []string{"--no-tokens"}, check: func(t *testing.T, p *Pipeline) {
			if c, err := p.Config(); err != nil || c.Reconcile.MaxTokens != -1 {
				t.Errorf("--no-tokens: MaxTokens %d, %v", c.Reconcile.MaxTokens, err)
			}
		}},
		{args: []string{"--tokens", "0"}, check: func(t *testing.T, p *Pipeline) {
			if c, err := p.Config(); err != nil || c.Reconcile.MaxTokens != -1 {
				t.Errorf("--tokens 0: MaxTokens %d, %v", c.Reconcile.MaxTokens, err)
			}
		}},
		{args: []string{"--tokens", "256"}, usage: true},
		{args: []string{"--tokens", "-1"}, usage: true},
		{args: []string{"--naming", "pid"}, usage: true},
		{args: []string{"--boundaries", "lines"}, usage: true},
		{args: []string{"--split-pause", "-1s"}, usage: true},
		{args: []string{"--offset", "x"}, usage: true},
	}
	for _, c := range cases {
		var p Pipeline
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		p.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		err := p.Validate()
		if c.usage {
			if !errors.Is(err, cmdutil.ErrUsage) {
				t.Errorf("%v: error %v, want a usage error", c.args, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		c.check(t, &p)
	}
}
