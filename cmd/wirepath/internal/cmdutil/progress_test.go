package cmdutil

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressRate: the rate is what was done over the real time since
// the stage began. The bar used to start its clock when it first drew,
// 1.5 s in, with everything read by then as one step: 2.8 to 36 TB/s.
func TestProgressRate(t *testing.T) {
	var errOut bytes.Buffer
	ios := &IOStreams{ErrOut: &errOut, ErrTTY: true}
	p := NewProgress(ios, "reading captures", 100<<20, true)
	start := p.started
	clock := start
	p.now = func() time.Time { return clock }
	for i := 1; i <= 20; i++ {
		clock = start.Add(time.Duration(i) * 100 * time.Millisecond)
		p.Add(1 << 20) // 1 MiB every 100 ms: 10 MiB/s
	}
	out := errOut.String()
	if !strings.Contains(out, "10.0 MiB/s") || !strings.Contains(out, "19.0 MiB of 100.0 MiB (19%)") || !strings.Contains(out, "8s left") {
		t.Errorf("progress line %q", out)
	}
	p.Finish()
	if !strings.HasSuffix(errOut.String(), "\r") {
		t.Error("the line was not cleared")
	}
	if NewProgress(&IOStreams{ErrOut: &errOut, ErrTTY: true, Quiet: true}, "x", 1, false) != nil {
		t.Error("progress shown with -q")
	}
}
