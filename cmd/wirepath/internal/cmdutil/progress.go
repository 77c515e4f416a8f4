package cmdutil

import (
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressDelay is how long a run must last before a progress bar appears,
// so that short runs stay silent.
const progressDelay = 1500 * time.Millisecond

// Progress shows how far a long stage has come on stderr. It draws nothing
// unless stderr is a terminal, -q is not set and the stage has run for a
// while. A nil *Progress is valid and does nothing. It is safe for use from
// several goroutines.
type Progress struct {
	mu      sync.Mutex
	ios     *IOStreams
	total   int64
	desc    string
	bytes   bool
	done    int64
	started time.Time
	bar     *progressbar.ProgressBar
}

// NewProgress returns a progress display for a stage of total units (bytes
// when bytes is set; -1 when unknown), or nil when progress must not show.
func NewProgress(ios *IOStreams, desc string, total int64, bytes bool) *Progress {
	if ios == nil || ios.Quiet || !ios.ErrTTY {
		return nil
	}
	return &Progress{ios: ios, total: total, desc: desc, bytes: bytes, started: time.Now()}
}

// Add records n more units done.
func (p *Progress) Add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.bar == nil {
		if time.Since(p.started) < progressDelay {
			return
		}
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(p.ios.ErrOut),
			progressbar.OptionSetDescription(p.desc),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30),
		}
		if p.bytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		}
		p.bar = progressbar.NewOptions64(p.total, opts...)
		_ = p.bar.Set64(p.done)
		return
	}
	_ = p.bar.Add64(n)
}

// Finish removes the bar, if one was drawn.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
