package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// Windows configures a windowed run (RunWindows).
type Windows struct {
	// Length is each window's core: the capture time whose messages (and
	// whose requests' roots) it owns. Windows are aligned to multiples of
	// Length since the Unix epoch.
	Length time.Duration
	// Margin is how far before and after its core a window also
	// reconciles messages, so that a request whose root is in the core has
	// its whole tree (the causal window, 2 s by default in the engines,
	// plus the reconciliation's own slack). It must be below Length.
	Margin time.Duration
}

// Validate checks w.
func (w Windows) Validate() error {
	switch {
	case w.Length <= 0:
		return errors.New("the window must be positive")
	case w.Margin < 0:
		return errors.New("the window margin must not be negative")
	case w.Margin >= w.Length:
		return fmt.Errorf("the window margin (%v) must be shorter than the window (%v)", w.Margin, w.Length)
	}
	return nil
}

// Window is one window of a windowed run, handed to RunWindows' callback.
type Window struct {
	// Index counts the windows of the run from 0, in time order.
	Index int
	// From and To bound the core [From, To) in nanoseconds of capture
	// time (the reference sniffer's clock); the trace holds the messages
	// that started in [From-Margin, To+Margin).
	From, To int64
	// Trace is the window's reconciled trace and Report reconcile's
	// accounting of it; both are the callback's only until it returns.
	Trace  *trace.Trace
	Report *reconcile.Report
	// Owned says, by trace index, which of the trace's messages this
	// window owns: those whose first flows message started in its core
	// (the rest are copies in its margins, owned by a neighbour), so that
	// over a run every message is owned once. A message that names no
	// flows message (Report.Sources) is owned where its send time, else
	// its receive time, falls in the core.
	Owned []bool
}

// owned is Window.Owned: copies are the flows messages the window
// reconciled in its margins.
func owned(tr *trace.Trace, src []flows.MessageID, copies map[flows.MessageID]struct{}, from, to int64) []bool {
	own := make([]bool, len(tr.Messages))
	for i := range tr.Messages {
		if i < len(src) && !src[i].IsZero() {
			_, c := copies[src[i]]
			own[i] = !c
			continue
		}
		m := &tr.Messages[i]
		t := m.SendTS
		if !t.Known() {
			t = m.RecvTS
		}
		own[i] = int64(t) >= from && int64(t) < to
	}
	return own
}

// WindowStats count what a windowed run did with the messages: every
// message flows gave is Owned by one window, or Late (it started in a
// window already reconciled: a message longer than the margin) and
// dropped; Copies are the messages also reconciled in a neighbour's margin.
type WindowStats struct {
	Windows, Owned, Copies, Late int64
}

// Counts returns the counters for a trace's accounting (stage "window").
func (s WindowStats) Counts() []trace.Count {
	c := func(name string, v int64) trace.Count { return trace.Count{Stage: "window", Name: name, Value: v} }
	return []trace.Count{c("windows", s.Windows), c("messages_owned", s.Owned),
		c("messages_in_margins", s.Copies), c("messages_late_dropped", s.Late)}
}

// openWindow is a window being filled.
type openWindow struct {
	k   int64 // index of the window: core [k*L, (k+1)*L)
	rec *reconcile.Reconciler
	// copies are the messages added in the margins (Window.Owned)
	copies map[flows.MessageID]struct{}
}

// windower splits the message stream into windows.
type windower struct {
	w      Windows
	l, mg  int64 // Length, Margin in ns
	lag    int64 // how long after a window's end its messages may still come
	open   []*openWindow
	next   int64 // the first window index not yet finished
	done   bool  // next is meaningful: a window was started
	hi     int64 // the latest message end seen
	newRec func() (*reconcile.Reconciler, error)
	emit   func(ow *openWindow) error
	stats  WindowStats
	// pending delivers the outcome of the window being reconciled and
	// handed on (nil when none is)
	pending chan error
}

// wait waits for the window being handed on, and returns its error.
func (wd *windower) wait() error {
	if wd.pending == nil {
		return nil
	}
	err := <-wd.pending
	wd.pending = nil
	return err
}

// RunWindows is Run in bounded memory: the messages are reconciled in
// windows of capture time (w.Length plus w.Margin on each side), each
// window's trace handed to fn as soon as no later message can belong to
// it, then dropped. fn runs in a goroutine of its own while the next
// window is read, one window at a time, in order. Home points, fixed ports and clock offsets are
// estimated per window; a connection that ends after its window closed
// does not tell that window who opened it (reconcile then guesses from the
// ports and the kinds, as it does without flows' connection reports). The
// syscall traces (Config.Preload) are not supported.
//
// The returned Result has every stage's accounting up to flows, plus
// WindowStats' (stage "window"); its Trace and Report are nil.
func RunWindows(cfg Config, w Windows, fn func(*Window) error) (*Result, WindowStats, error) {
	cfg.Progress = serialize(cfg.Progress)
	res := &Result{}
	if err := w.Validate(); err != nil {
		return res, WindowStats{}, err
	}
	if len(cfg.Preload) > 0 {
		return res, WindowStats{}, errors.New("windowed runs do not read syscall traces")
	}
	fc := flowsConfig(cfg.Flows)
	wd := &windower{w: w, l: int64(w.Length), mg: int64(w.Margin), lag: int64(fc.Settle + fc.ReorderTimeout)}
	var ns tabler
	userOnConn := cfg.Flows.OnConn
	cfg.Flows.OnConn = func(cs *flows.ConnStats) {
		for _, ow := range wd.open {
			ow.rec.AddConn(cs)
		}
		if userOnConn != nil {
			userOnConn(cs)
		}
	}
	ropts := cfg.Reconcile
	ready := func() error {
		// No syscall traces, so no traced endpoint for reconcile to
		// rename (Options.Canonical): flows' packets are renamed already.
		ropts.Sniffers = sniffersFor(res.Sniffers, res.Offsets)
		_, err := reconcile.New(ropts) // the options are checked before the first message
		return err
	}
	wd.newRec = func() (*reconcile.Reconciler, error) { return reconcile.New(ropts) }
	index := 0
	wd.emit = func(ow *openWindow) error {
		k := ow.k
		var aliases []trace.Alias
		var t *nat.Table
		if ns != nil {
			t = ns.table()
		}
		if t != nil {
			aliases = t.Aliases()
		}
		win := &Window{Index: index, From: k * wd.l, To: (k + 1) * wd.l}
		index++
		wd.stats.Windows++
		// The window is reconciled and handed on in a goroutine of its
		// own while the next is read (the second core), one at a time
		// and in order.
		if err := wd.wait(); err != nil {
			return err
		}
		done := make(chan error, 1)
		wd.pending = done
		go func() {
			tr, rep, err := ow.rec.Finish()
			if err == nil {
				tr.Meta.Aliases = aliases
				win.Trace, win.Report = tr, rep
				win.Owned = owned(tr, rep.Sources, ow.copies, win.From, win.To)
				progress(cfg.Progress, StageReconcile, int64(len(tr.Messages)), int64(len(tr.Messages)))
				err = fn(win)
			}
			done <- err
		}()
		return nil
	}
	cfg.onSource = func(s tabler) { ns = s }
	err := runMessagesHook(&cfg, res, ready, wd.add)
	if err == nil {
		err = wd.flush()
	}
	if werr := wd.wait(); err == nil {
		err = werr
	}
	res.Accounting = append(res.Accounting, wd.stats.Counts()...)
	return res, wd.stats, err
}

// add places one message in its window (and the neighbours whose margin
// it falls in), then finishes the windows no later message can reach.
func (wd *windower) add(m *flows.Message) error {
	t, end, ok := msgSpan(m)
	if !ok {
		// no sighting: nothing to place it by; the oldest open window
		// owns it (reconcile counts it as without a timestamp)
		t, end = wd.hi, wd.hi
	}
	wd.hi = max(wd.hi, end)
	k := floorDiv(t, wd.l)
	if wd.done && k < wd.next {
		wd.stats.Late++
		return nil
	}
	if !wd.done {
		wd.next, wd.done = k, true
	}
	for j := k - 1; j <= k+1; j++ {
		if j < wd.next || (j == k-1 && t >= j*wd.l+wd.l+wd.mg) || (j == k+1 && t < j*wd.l-wd.mg) {
			continue
		}
		ow, err := wd.window(j)
		if err != nil {
			return err
		}
		ow.rec.AddMessage(m)
		if j == k {
			wd.stats.Owned++
		} else {
			wd.stats.Copies++
			ow.copies[m.ID()] = struct{}{}
		}
	}
	return wd.finishUpTo(wd.hi - wd.mg - wd.lag)
}

// window returns open window k, opening it if needed (a window no
// message starts in is never opened).
func (wd *windower) window(k int64) (*openWindow, error) {
	for _, ow := range wd.open {
		if ow.k == k {
			return ow, nil
		}
	}
	rec, err := wd.newRec()
	if err != nil {
		return nil, err
	}
	ow := &openWindow{k: k, rec: rec, copies: map[flows.MessageID]struct{}{}}
	i, _ := slices.BinarySearchFunc(wd.open, k, func(o *openWindow, k int64) int { return cmpI64(o.k, k) })
	wd.open = slices.Insert(wd.open, i, ow)
	return ow, nil
}

// finishUpTo finishes, in order, the open windows whose core ends at or
// before t.
func (wd *windower) finishUpTo(t int64) error {
	for len(wd.open) > 0 && (wd.open[0].k+1)*wd.l <= t {
		ow := wd.open[0]
		wd.open = wd.open[1:]
		wd.next = ow.k + 1
		if err := wd.emit(ow); err != nil {
			return err
		}
	}
	return nil
}

// flush finishes every open window, at the end of the input.
func (wd *windower) flush() error {
	for len(wd.open) > 0 {
		ow := wd.open[0]
		wd.open = wd.open[1:]
		wd.next = ow.k + 1
		if err := wd.emit(ow); err != nil {
			return err
		}
	}
	return nil
}

// msgSpan returns when m's first byte was first seen and its last byte
// last seen, on any capture point.
func msgSpan(m *flows.Message) (first, last int64, ok bool) {
	for i := range m.Sightings {
		s := &m.Sightings[i]
		if !ok || s.First < first {
			first = s.First
		}
		if !ok || s.Last > last {
			last = s.Last
		}
		ok = true
	}
	return first, last, ok
}

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func cmpI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// table returns the translations learned so far (nil before any).
func (w *natSource) table() *nat.Table { return w.s.Table() }
