package cmdutil

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// progressDelay is how long a run must last before a progress line
// appears, so that short runs stay silent; progressEvery is how often it
// is redrawn.
const (
	progressDelay = 1500 * time.Millisecond
	progressEvery = 200 * time.Millisecond
)

// Progress shows how far a long stage has come on stderr, as one line
// redrawn in place: what is done (of the total, when known), the rate and
// the time left. The rate is what was done over the real time since the
// stage began (NewProgress), not since the line first appeared. It draws
// nothing unless stderr is a terminal, -q is not set and the stage has run
// for a while. A nil *Progress is valid and does nothing. It is safe for
// use from several goroutines.
type Progress struct {
	mu      sync.Mutex
	ios     *IOStreams
	total   int64
	desc    string
	bytes   bool
	done    int64
	started time.Time
	shown   time.Time // when the line was last drawn; zero before
	width   int       // of the line last drawn
	now     func() time.Time
}

// NewProgress returns a progress display for a stage of total units (bytes
// when bytes is set; -1 when unknown), or nil when progress must not show.
func NewProgress(ios *IOStreams, desc string, total int64, bytes bool) *Progress {
	if ios == nil || ios.Quiet || !ios.ErrTTY {
		return nil
	}
	return &Progress{ios: ios, total: total, desc: desc, bytes: bytes, started: time.Now(), now: time.Now}
}

// Add records n more units done.
func (p *Progress) Add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	now := p.now()
	if now.Sub(p.started) < progressDelay || now.Sub(p.shown) < progressEvery {
		return
	}
	p.shown = now
	line := p.line(now)
	pad := max(0, p.width-len(line))
	p.width = len(line)
	fmt.Fprintf(p.ios.ErrOut, "\r%s%s", line, strings.Repeat(" ", pad))
}

// line is the progress line at now.
func (p *Progress) line(now time.Time) string {
	elapsed := now.Sub(p.started).Seconds()
	rate := float64(p.done) / elapsed
	s := p.desc + "  " + p.amount(float64(p.done))
	if p.total > 0 {
		s += " of " + p.amount(float64(p.total)) + fmt.Sprintf(" (%d%%)", min(100, p.done*100/p.total))
	}
	s += "  " + p.amount(rate) + "/s"
	if p.total > 0 && rate > 0 && p.done < p.total {
		left := time.Duration(float64(p.total-p.done) / rate * float64(time.Second))
		s += "  " + left.Round(time.Second).String() + " left"
	}
	return s
}

// amount formats a count, or bytes in binary units.
func (p *Progress) amount(v float64) string {
	if !p.bytes {
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.1f M", v/1e6)
		case v >= 1e4:
			return fmt.Sprintf("%.0f k", v/1e3)
		}
		return fmt.Sprintf("%.0f", v)
	}
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if v < 1024 || u == "TiB" {
			if u == "B" {
				return fmt.Sprintf("%.0f B", v)
			}
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= 1024
	}
	return ""
}

// Finish clears the line, if one was drawn.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown.IsZero() {
		fmt.Fprintf(p.ios.ErrOut, "\r%s\r", strings.Repeat(" ", p.width))
		p.shown = time.Time{}
	}
}
