package nesting

import (
	"github.com/wirepath/wirepath/trace"
)

// p5 builds traces in the style of Project 5's trace format: one timestamp
// per message (the send), node names and no endpoints.
type p5 struct{ t *trace.Trace }

func newP5() *p5 { return &p5{t: &trace.Trace{}} }

const ms = int64(1e6)

// add appends a message sent at ms milliseconds and returns its index.
func (b *p5) add(atMS float64, kind trace.Kind, from, to, id string) int32 {
	t := b.t
	t.Messages = append(t.Messages, trace.Message{
		SendTS:  trace.Timestamp(atMS * float64(ms)),
		RecvTS:  trace.NoTime,
		SrcNode: t.Intern(from),
		DstNode: t.Intern(to),
		CallID:  t.Intern(id),
		Kind:    kind,
		Bytes:   100,
	})
	return int32(len(t.Messages) - 1)
}

func (b *p5) call(atMS float64, from, to, id string) int32 {
	return b.add(atMS, trace.KindCall, from, to, id)
}

func (b *p5) ret(atMS float64, from, to, id string) int32 {
	return b.add(atMS, trace.KindReturn, from, to, id)
}

// nestParents runs the nesting engine and returns, for every call pair, the
// call message of its chosen parent by its call message (-1 for roots).
func nestParents(t *trace.Trace, opt Options) (map[int32]int32, *Result, error) {
	r, res, err := mustNew(opt).run(bgCtx, t)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[int32]int32, len(r.pairs))
	for i, p := range r.pairs {
		par := int32(-1)
		if r.parent[i] >= 0 {
			par = r.pairs[r.parent[i]].call
		}
		out[p.call] = par
	}
	return out, res, nil
}

// mustNew returns a nesting engine with options the test knows are valid.
func mustNew(opt Options) *Engine {
	e, err := New(opt)
	if err != nil {
		panic(err)
	}
	return e
}

// histogram returns scoreboard histogram trip, dense or rebuilt from the
// sparse cells.
func (r *nestRun) histogram(trip int) []float64 {
	bins := r.opt.Bins
	if r.hist != nil {
		return r.hist[trip*bins : (trip+1)*bins]
	}
	h := make([]float64, bins)
	for k, cell := range r.cellOf {
		if int(k)/bins == trip {
			h[int(k)%bins] = r.cell[cell]
		}
	}
	return h
}
