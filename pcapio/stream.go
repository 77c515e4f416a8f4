package pcapio

import (
	"errors"
	"fmt"
	"io"

	"github.com/wirepath/wirepath/clock"
)

// batchSize is how many packets a producer hands over at a time, and
// streamBatches how many batches it may read ahead of the merge.
const (
	batchSize     = 256
	streamBatches = 4
)

// batch is a run of one stream's decoded packets, with the problems met
// and the counts of the records read while filling it.
type batch struct {
	pkts   []*Packet
	probs  []error
	counts Counts
	fatal  bool // a problem ended the file
	end    bool // the stream ends after this batch
}

// produce decodes s in its own goroutine, sending batches until the
// stream ends or the Merger is closed: first the records read ahead, then
// what r reads (r nil: nothing more). It owns r.
func (m *Merger) produce(s *stream, r *Reader) {
	defer m.producers.Done()
	if r != nil {
		defer r.Close()
	}
	f := s.file
	ahead, arena := f.ahead, f.arena
	if !m.aheadOnly {
		f.ahead, f.arena = nil, nil // freed as the merge goes on
	}
	if f.aheadEnd {
		r = nil // the read-ahead met the end of the file
	}
	pr := producer{m: m, s: s, f: f, lastIf: -2}
	freed := 0 // the arena's chunks before it are freed
	var rec Record
	for {
		b := &batch{pkts: make([]*Packet, 0, batchSize)}
		for len(b.pkts) < batchSize && !b.end {
			var err error
			switch {
			case len(ahead) > 0:
				a := &ahead[0]
				rec, err = a.rec, a.err
				if a.err == nil {
					if !m.aheadOnly && a.chunk > freed {
						clear(arena[freed:a.chunk]) // the merge is past them: let them go
						freed = a.chunk
					}
					c := arena[a.chunk]
					rec.Data = c[a.off : a.off+a.n : a.off+a.n]
				}
				ahead = ahead[1:]
			case r != nil:
				err = r.ReadRecord(&rec)
			default:
				err = io.EOF
			}
			if err == io.EOF {
				b.end = true
				break
			}
			if err != nil {
				pr.problem(b, err)
				continue
			}
			pr.add(b, &rec)
		}
		select {
		case s.ch <- b:
		case <-m.quit:
			return
		}
		if b.end {
			return
		}
	}
}

// producer is the state of one stream's producer goroutine.
type producer struct {
	m      *Merger
	s      *stream
	f      *fileIn
	free   []*Packet
	lastIf int          // the interface of the last record, -2 none
	sn     int          // its sniffer
	model  *clock.Model // and its clock
	// filterErr notes the link types whose filter error was reported.
	filterErr map[uint16]bool
}

// problem adds a reading problem to b, counting the record it cost.
func (pr *producer) problem(b *batch, err error) {
	b.probs = append(b.probs, err)
	var pe *ParseError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		b.counts.CutRecords++
	case errors.As(err, &pe) && pe.Packet > 0 &&
		(errors.Is(err, ErrBadLength) || errors.Is(err, ErrBadBlock) || errors.Is(err, ErrUnknownInterface) || errors.Is(err, ErrBadTimestamp)):
		b.counts.BadRecords++
	}
	b.fatal = b.fatal || IsFatal(err)
	b.end = IsFatal(err)
}

// add decodes rec into a pooled packet of b, unless the filter leaves it
// out.
func (pr *producer) add(b *batch, rec *Record) {
	if f := pr.m.opts.Filter; f != nil {
		ok, err := f.Match(rec.LinkType, rec.Data, rec.WireLen)
		if err != nil && !pr.filterErr[rec.LinkType] {
			if pr.filterErr == nil {
				pr.filterErr = map[uint16]bool{}
			}
			pr.filterErr[rec.LinkType] = true
			b.probs = append(b.probs, &ParseError{File: pr.f.path, Packet: rec.Number, Offset: rec.Offset, Err: err})
		}
		if !ok {
			b.counts.Filtered++
			return
		}
	}
	if rec.Interface != pr.lastIf {
		pr.lastIf = rec.Interface
		pr.sn = pr.f.sniffer
		if sn, ok := pr.f.ifaces[rec.Interface]; ok {
			pr.sn = sn
		} else if sn, ok := pr.f.ifaces[-1]; ok {
			pr.sn = sn
		} else {
			b.probs = append(b.probs, &ParseError{File: pr.f.path, Packet: rec.Number, Offset: rec.Offset,
				Err: fmt.Errorf("interface %d has its first packet after the read-ahead: its packets are counted as interface %d's",
					rec.Interface, pr.m.sniffers[pr.sn].Interface)})
			pr.f.ifaces[rec.Interface] = pr.sn
		}
		pr.model = &pr.m.models[pr.sn]
	}
	if len(pr.free) == 0 {
		pr.free = pr.m.packets()
	}
	p := pr.free[len(pr.free)-1]
	pr.free = pr.free[:len(pr.free)-1]
	if cap(p.buf) < len(rec.Data) {
		p.buf = make([]byte, len(rec.Data), max(len(rec.Data), 2048))
	}
	buf := p.buf[:len(rec.Data)]
	copy(buf, rec.Data)
	Decode(p, rec.LinkType, buf, rec.WireLen)
	o := &p.Obs[0]
	o.Sniffer = SnifferID(pr.sn)
	o.Interface = uint16(rec.Interface)
	o.TS = rec.TS
	o.Corrected = pr.model.Local(rec.TS)
	p.num = rec.Number
	p.stream = int32(pr.s.idx)
	b.counts.count(p)
	b.pkts = append(b.pkts, p)
}

// packets returns recycled packets for a producer, or new ones.
func (m *Merger) packets() []*Packet {
	select {
	case ps := <-m.pool:
		return ps
	default:
	}
	ps := make([]*Packet, batchSize)
	for i := range ps {
		ps[i] = &Packet{Obs: make([]Observation, 0, 2)}
	}
	return ps
}

// reorderBuf holds a stream's next packets sorted by corrected time, then
// record number. Captures are nearly in order, so an insert is nearly
// always an append.
type reorderBuf struct {
	buf  []*Packet
	head int
}

func (r *reorderBuf) len() int { return len(r.buf) - r.head }

func (r *reorderBuf) front() *Packet { return r.buf[r.head] }

func (r *reorderBuf) pop() *Packet {
	p := r.buf[r.head]
	r.buf[r.head] = nil
	r.head++
	if r.head == len(r.buf) {
		r.buf, r.head = r.buf[:0], 0
	}
	return p
}

// insert adds p in order. When the buffer is full, the packets still
// held are moved to its front only if at least half of it was popped,
// else it grows: moving them at every insert once it was full (one
// packet popped since) cost about 250 instructions a packet on the mix
// of scripts/bench-commands.sh. The buffer holds at most about four
// times the packets held at once.
func (r *reorderBuf) insert(p *Packet) {
	if r.head > 0 && len(r.buf) == cap(r.buf) && r.head >= len(r.buf)/2 {
		n := copy(r.buf, r.buf[r.head:])
		clear(r.buf[n:])
		r.buf, r.head = r.buf[:n], 0
	}
	r.buf = append(r.buf, p)
	for i := len(r.buf) - 1; i > r.head && earlier(r.buf[i], r.buf[i-1]); i-- {
		r.buf[i], r.buf[i-1] = r.buf[i-1], r.buf[i]
	}
}

// earlier orders one stream's packets: corrected time, then record number.
func earlier(a, b *Packet) bool {
	if a.Obs[0].Corrected != b.Obs[0].Corrected {
		return a.Obs[0].Corrected < b.Obs[0].Corrected
	}
	return a.num < b.num
}
