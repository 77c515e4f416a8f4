package flows

import (
	"errors"
	"io"

	"github.com/wirepath/wirepath/pcapio"
)

// Source yields packets in corrected time order. Next returns io.EOF at
// the end; the packet it returns may be reused by the following call.
// pcapio's merged reader is one; SliceSource is another, for tests.
type Source interface {
	Next() (*pcapio.Packet, error)
}

// SliceSource is a Source over packets held in memory.
type SliceSource struct {
	Packets []*pcapio.Packet
	i       int
}

// Next returns the next packet, or io.EOF.
func (s *SliceSource) Next() (*pcapio.Packet, error) {
	if s.i >= len(s.Packets) {
		return nil, io.EOF
	}
	p := s.Packets[s.i]
	s.i++
	return p, nil
}

// Reader is the flows stage in pull form: it reads packets from a Source
// and returns messages. The *Message Next returns is reused by the next
// call; use Clone to keep it. Errors other than io.EOF from the Source are
// returned by Next (after the messages already complete) and are sticky.
type Reader struct {
	src  Source
	asm  *Assembler
	msg  Message
	err  error
	done bool
}

// NewReader returns a Reader of src with configuration cfg.
func NewReader(src Source, cfg Config) (*Reader, error) {
	a, err := NewAssembler(cfg)
	if err != nil {
		return nil, err
	}
	return &Reader{src: src, asm: a}, nil
}

// Next returns the next message, or io.EOF after the last one.
func (r *Reader) Next() (*Message, error) {
	for {
		if r.asm.Next(&r.msg) {
			return &r.msg, nil
		}
		if r.done {
			if r.err != nil {
				return nil, r.err
			}
			return nil, io.EOF
		}
		p, err := r.src.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.err = err
			}
			r.done = true
			r.asm.Flush()
			continue
		}
		r.asm.Add(p)
	}
}

// Stats returns the accounting so far (see Assembler.Stats).
func (r *Reader) Stats() *Stats { return r.asm.Stats() }
