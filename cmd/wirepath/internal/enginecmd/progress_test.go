package enginecmd

import (
	"bytes"
	"testing"

	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// TestNestingProgress: Install gives nesting a progress callback, and each
// of its steps gets a display of its own, ended by the step's last report.
func TestNestingProgress(t *testing.T) {
	var errOut bytes.Buffer
	p := NewProgress(&cmdutil.IOStreams{ErrOut: &errOut, ErrTTY: true})
	var eo engines.Options
	p.Install(&eo)
	if eo.Nesting.Progress == nil || eo.Linking.Progress == nil || eo.Convolution.Progress == nil {
		t.Fatal("Install left an engine without progress")
	}
	eo.Nesting.Progress("candidates", 0, 100)
	eo.Nesting.Progress("candidates", 50, 100)
	if !p.open || p.step != "candidates" || p.cur == nil {
		t.Fatalf("no display for candidates: open %v step %q", p.open, p.step)
	}
	first := p.cur
	eo.Nesting.Progress("parents", 0, 10) // a new step ends the last display
	if p.cur == first || p.step != "parents" || p.last != 0 {
		t.Errorf("step parents: display %p (was %p), step %q, last %d", p.cur, first, p.step, p.last)
	}
	eo.Nesting.Progress("parents", 10, 10)
	if p.open || p.cur != nil {
		t.Error("the display outlived its step")
	}
	p.Finish()
}
