package causal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// fuzzTrace decodes bytes into a trace, five bytes a message:
//
//	0-1  time since the previous message, in units of unit ns (big endian)
//	2    sender node (low 3 bits), receiver node (next 3 bits), kind (top 2)
//	3    call id (low 4 bits; 0 = none), receive time known (bit 4),
//	     endpoints known (bit 5), send time unknown (bit 6), clock offset
//	     for the sender (bit 7)
//	4    message size
func fuzzTrace(data []byte, unit int64) *trace.Trace {
	t := &trace.Trace{}
	at := int64(1e15)
	offsets := map[string]bool{}
	for len(data) >= 5 {
		b := data[:5]
		data = data[5:]
		at += (int64(b[0])<<8 | int64(b[1])) * unit
		src := fmt.Sprint("n", b[2]&7)
		dst := fmt.Sprint("n", (b[2]>>3)&7)
		m := trace.Message{
			SendTS: trace.Timestamp(at), RecvTS: trace.NoTime,
			SrcNode: t.Intern(src), DstNode: t.Intern(dst),
			Kind: trace.Kind(b[2] >> 6 % 3), Bytes: int64(b[4]),
		}
		if id := b[3] & 15; id != 0 {
			m.CallID = t.Intern(fmt.Sprint("id", id))
		}
		if b[3]&16 != 0 {
			m.RecvTS = m.SendTS + trace.Timestamp(b[4])*1000
		}
		if b[3]&32 != 0 {
			m.Src, m.Dst = t.Intern(src+":"+fmt.Sprint(b[4]%3+80)), t.Intern(dst+":80")
		}
		if b[3]&64 != 0 {
			m.SendTS = trace.NoTime
		}
		if b[3]&128 != 0 && !offsets[src] {
			offsets[src] = true
			t.Meta.Offsets = append(t.Meta.Offsets, trace.Offset{Node: src, Known: true, OffsetNS: int64(b[4]) * 1e5})
		}
		t.Messages = append(t.Messages, m)
	}
	return t
}

// checkPatterns checks what every result must satisfy: hops parent first,
// signatures that parse and match the hops.
func checkPatterns(t *testing.T, res *Result) {
	t.Helper()
	for _, p := range res.Patterns {
		if len(p.Hops) == 0 || p.Hops[0].Parent != nil {
			t.Fatalf("pattern %s: bad root", p.Signature)
		}
		for i, h := range p.Hops[1:] {
			if h.Parent == nil || *h.Parent > i {
				t.Fatalf("pattern %s: hop %d's parent comes after it", p.Signature, i+1)
			}
		}
		n, err := ParseSignature(p.Signature)
		if err != nil {
			t.Fatalf("pattern %s: %v", p.Signature, err)
		}
		if n.Size() != len(p.Hops) {
			t.Fatalf("pattern %s: %d hops, signature has %d", p.Signature, len(p.Hops), n.Size())
		}
	}
}

func FuzzNesting(f *testing.F) {
	// a call and its return
	f.Add([]byte{0, 10, 0x48, 1, 100, 0, 20, 0x81, 1, 100})
	// Figure 3: A calls B, B calls C then D, then returns
	f.Add([]byte{
		0, 10, 0x48, 1, 0, 0, 20, 0x51, 2, 0, 0, 20, 0x8a, 2, 0,
		0, 20, 0x59, 3, 0, 0, 20, 0x8b, 3, 0, 0, 20, 0x81, 1, 0,
	})
	// no call ids, endpoints, receive times and a skewed sender
	f.Add([]byte{0, 1, 0x48, 0xb0, 7, 0, 1, 0x48, 0x30, 9, 0, 5, 0x81, 0x30, 7, 0, 5, 0x81, 0x30, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := fuzzTrace(data, 100e3)
		opt := DefaultNestingOptions()
		if len(data) > 0 && data[0]&1 != 0 {
			opt.SkewWindow = 3 * ms
			opt.Smooth = 1
			opt.SameExp, opt.GenericExp = 1, 0.5
		}
		res, err := NewNesting(opt).Run(bgCtx, tr)
		if err != nil {
			t.Fatal(err)
		}
		checkNestingBalance(t, res.Result)
		checkPatterns(t, res.Result)
		msgs := int64(0)
		for _, p := range res.Patterns {
			msgs += int64(p.Count * len(p.Hops))
		}
		if msgs != 2*count(res.Result, "call_pairs") {
			t.Fatalf("patterns hold %d messages, %d call pairs", msgs, count(res.Result, "call_pairs"))
		}
		paths := 0
		for _, cp := range res.CallPaths {
			paths += cp.Count
		}
		if int64(paths) != count(res.Result, "call_paths") {
			t.Fatalf("call-path table holds %d paths, %d roots", paths, count(res.Result, "call_paths"))
		}
	})
}

func FuzzConvolution(f *testing.F) {
	seed := make([]byte, 0, 500)
	for i := 0; i < 100; i++ {
		// n0 -> n1 then, 30 ms later, n1 -> n2
		seed = append(seed, byte(i%7), 100, 0x08, 0, 1, 11, 184, 0x11, 0, 1)
	}
	f.Add(seed)
	f.Add([]byte{0, 1, 0x08, 0x10, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 2000 {
			return // 400 messages are plenty; longer traces only make signals longer
		}
		tr := fuzzTrace(data, 10e3) // gaps up to 0.65 s
		opt := DefaultConvolutionOptions()
		opt.MinCount = 2
		opt.Quantum = 10e6
		// Random traffic between 8 nodes makes every edge correlate with
		// every other: bound the exploration so that runs stay quick.
		opt.MaxDepth = 5
		opt.MaxVertices = 64
		opt.Roots = []string{"n0"}
		res, err := NewConvolution(opt).Infer(bgCtx, tr)
		if err != nil {
			var oe *OptionError
			if errors.As(err, &oe) {
				t.Fatal(err)
			}
			return // e.g. a span too long for the quantum
		}
		checkConvBalance(t, res)
		checkPatterns(t, res)
		for _, p := range res.Patterns {
			if p.Count != int(p.Expected) || p.MaxProbability != 1 {
				t.Fatalf("pattern %s: count %d expected %v max %v", p.Signature, p.Count, p.Expected, p.MaxProbability)
			}
			for _, h := range p.Hops[1:] {
				sum := 0
				for _, d := range h.Delays {
					sum += d.Count
					if d.DelayUS < 0 {
						t.Fatalf("negative delay %+v", d)
					}
				}
				if h.Start == nil || sum != h.Start.N {
					t.Fatalf("hop %s->%s: delays count %d messages, the hop has %v", h.From, h.To, sum, h.Start)
				}
			}
		}
	})
}
