package pipeline

import (
	"context"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pcapio"
)

// The hand-over between the two goroutines of a run (pipe): the packets
// cross in batches of pipeBatch, at most pipeDepth batches at a time.
const (
	pipeBatch = 256
	pipeDepth = 8
)

// holder is a source whose packets the caller may keep instead of copying
// them: keep makes the packet Next returned last the caller's, release
// gives one back (on the goroutine that calls Next).
type holder interface {
	flows.Source
	keep()
	release(*pcapio.Packet)
}

// tabler is a source that renames packets with a translation table: the
// one the packet Next returned last was renamed with (windows' aliases).
type tabler interface {
	table() *nat.Table
}

// batch is one hand-over: packets in flows' order, with the table each
// was renamed with, and after the last one the source's end (io.EOF or
// its error) with the table then.
type batch struct {
	pkts   []*pcapio.Packet
	tabs   []*nat.Table
	err    error
	endTab *nat.Table
}

// pipe runs a source (the merge, NAT) on a goroutine of its own and hands
// its packets to flows in batches on the caller's: the run's two cores.
// What flows reads is exactly what the source returns, in the same order,
// so the run's results are those of reading the source directly
// (Config.Serial); the packets are not copied but kept (holder) and given
// back once flows is done with their batch.
type pipe struct {
	full, empty chan *batch
	quit, done  chan struct{}
	cur         *batch
	pos         int
	tab         *nat.Table // the table of the packet last returned
	stopped     bool
}

// newPipe starts reading src on a goroutine of its own; tab, if set,
// tells the table of each packet src returned; ctx, if set, stops the
// reading once cancelled (checked before the first packet and every
// 4096).
func newPipe(src holder, tab tabler, ctx context.Context) *pipe {
	p := &pipe{full: make(chan *batch, pipeDepth), empty: make(chan *batch, pipeDepth),
		quit: make(chan struct{}), done: make(chan struct{})}
	for range pipeDepth {
		p.empty <- &batch{pkts: make([]*pcapio.Packet, 0, pipeBatch), tabs: make([]*nat.Table, 0, pipeBatch)}
	}
	go p.run(src, tab, ctx)
	return p
}

// run is the reading goroutine: it fills empty batches from src, giving
// back the packets of the batches flows returned, until src ends or the
// pipe is stopped.
func (p *pipe) run(src holder, tab tabler, ctx context.Context) {
	defer close(p.done)
	n := 0
	for {
		var b *batch
		select {
		case b = <-p.empty:
		case <-p.quit:
			return
		}
		for _, q := range b.pkts {
			src.release(q)
		}
		clear(b.pkts)
		b.pkts, b.tabs = b.pkts[:0], b.tabs[:0]
		for len(b.pkts) < pipeBatch && b.err == nil {
			if ctx != nil && n%4096 == 0 && ctx.Err() != nil {
				b.err = ctx.Err()
				break
			}
			q, err := src.Next()
			if err != nil {
				b.err = err
				break
			}
			n++
			src.keep()
			b.pkts = append(b.pkts, q)
			var t *nat.Table
			if tab != nil {
				t = tab.table()
			}
			b.tabs = append(b.tabs, t)
		}
		if b.err != nil && tab != nil {
			b.endTab = tab.table()
		}
		end := b.err != nil
		select {
		case p.full <- b:
		case <-p.quit:
			return
		}
		if end {
			return
		}
	}
}

// Next returns the source's next packet, on flows' goroutine.
func (p *pipe) Next() (*pcapio.Packet, error) {
	for {
		if b := p.cur; b != nil {
			if p.pos < len(b.pkts) {
				q := b.pkts[p.pos]
				p.tab = b.tabs[p.pos]
				p.pos++
				return q, nil
			}
			if b.err != nil {
				p.tab = b.endTab
				return nil, b.err
			}
			p.cur = nil
			p.empty <- b
		}
		p.cur, p.pos = <-p.full, 0
	}
}

// table is the table of the packet Next returned last (tabler).
func (p *pipe) table() *nat.Table { return p.tab }

// stop ends the reading goroutine and waits for it: after it, the source
// is the caller's again.
func (p *pipe) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.quit)
	<-p.done
}

// mergeSource is pcapio's merge as a holder.
type mergeSource struct{ m *pcapio.Merger }

func (s mergeSource) Next() (*pcapio.Packet, error) { return s.m.Next() }
func (s mergeSource) keep()                         { s.m.Keep() }
func (s mergeSource) release(p *pcapio.Packet)      { s.m.Release(p) }
