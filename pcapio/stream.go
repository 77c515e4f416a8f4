package pcapio

import (
	"errors"
	"io"
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

// produce reads and decodes s in its own goroutine, sending batches until
// the stream ends or the Merger is closed. It owns r.
func (m *Merger) produce(s *stream, r *Reader) {
	defer m.producers.Done()
	defer r.Close()
	var rec Record
	var free []*Packet
	model := &m.models[s.sniffer]
	for {
		b := &batch{pkts: make([]*Packet, 0, batchSize)}
		for len(b.pkts) < batchSize && !b.end {
			err := r.ReadRecord(&rec)
			if err == io.EOF {
				b.end = true
				break
			}
			if err != nil {
				if s.primary {
					b.probs = append(b.probs, err)
					var pe *ParseError
					switch {
					case errors.Is(err, io.ErrUnexpectedEOF):
						b.counts.CutRecords++
					case errors.As(err, &pe) && pe.Packet > 0 &&
						(errors.Is(err, ErrBadLength) || errors.Is(err, ErrBadBlock) || errors.Is(err, ErrUnknownInterface)):
						b.counts.BadRecords++
					}
					b.fatal = b.fatal || IsFatal(err)
				}
				b.end = IsFatal(err)
				continue
			}
			if s.iface >= 0 && rec.Interface != s.iface {
				continue
			}
			if len(free) == 0 {
				free = m.packets()
			}
			p := free[len(free)-1]
			free = free[:len(free)-1]
			if cap(p.buf) < len(rec.Data) {
				p.buf = make([]byte, len(rec.Data), max(len(rec.Data), 2048))
			}
			buf := p.buf[:len(rec.Data)]
			copy(buf, rec.Data)
			Decode(p, rec.LinkType, buf, rec.WireLen)
			o := &p.Obs[0]
			o.Sniffer = SnifferID(s.sniffer)
			o.Interface = uint16(rec.Interface)
			o.TS = rec.TS
			o.Corrected = model.Local(rec.TS)
			p.num = rec.Number
			p.stream = int32(s.idx)
			b.counts.count(p)
			b.pkts = append(b.pkts, p)
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

func (r *reorderBuf) insert(p *Packet) {
	if r.head > 0 && len(r.buf) == cap(r.buf) {
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
