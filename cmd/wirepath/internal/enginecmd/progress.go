package enginecmd

import (
	"sync"

	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// Progress shows the engines' progress on stderr, on a terminal, after a
// while (cmdutil.Progress): the roots whose trees linking has built, the
// call pairs and call paths each step of nesting has gone through, the
// hops convolution has explored. Rates are over the real time since each
// display began. A display starts with the first report
// of an engine and ends with Finish. The zero value shows nothing; the
// methods may be called from any goroutine.
type Progress struct {
	ios  *cmdutil.IOStreams
	mu   sync.Mutex
	cur  *cmdutil.Progress
	open bool
	last int
	step string // the nesting step shown
}

// NewProgress returns a Progress that writes to ios.
func NewProgress(ios *cmdutil.IOStreams) *Progress { return &Progress{ios: ios} }

// Install sets the engines' progress callbacks in eo to p's.
func (p *Progress) Install(eo *engines.Options) {
	eo.Linking.Progress = p.linking
	eo.Nesting.Progress = p.nesting
	eo.Convolution.Progress = p.hops
}

// nesting reports that done of total units of a nesting step are done:
// one display per step, ended with its last report.
func (p *Progress) nesting(step string, done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open || p.step != step {
		p.cur.Finish()
		p.open, p.step, p.last = true, step, 0
		p.cur = cmdutil.NewProgress(p.ios, "nesting: "+step, int64(total), false)
	}
	p.cur.Add(int64(done - p.last))
	p.last = done
	if done == total {
		p.cur.Finish()
		p.cur, p.open, p.step = nil, false, ""
	}
}

// linking reports that done of total roots have their trees built; the
// display ends with the last.
func (p *Progress) linking(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open {
		p.open, p.last = true, 0
		p.cur = cmdutil.NewProgress(p.ios, "building paths", int64(total), false)
	}
	p.cur.Add(int64(done - p.last))
	p.last = done
	if done == total {
		p.cur.Finish()
	}
}

// hops reports n more hops explored.
func (p *Progress) hops(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open {
		p.open = true
		p.cur = cmdutil.NewProgress(p.ios, "convolution: hops", -1, false)
	}
	p.cur.Add(int64(n))
}

// Finish ends the display of the engine that reported last, if any.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur.Finish()
	p.cur, p.open, p.step = nil, false, ""
}
