// Package enginetest holds what the tests of the causal engines share:
// a decoder of fuzz inputs into traces, the checks every result must
// pass, counter lookup, and the generated multi-tier trace of the
// benchmarks. Only tests import it.
package enginetest

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/genfix"
	"github.com/wirepath/wirepath/trace"
)

// Count returns the value of the accounting counter name in res (-1 if
// absent).
func Count(res *causal.Result, name string) int64 {
	for _, c := range res.Accounting {
		if c.Name == name {
			return c.Value
		}
	}
	return -1
}

// FuzzTrace decodes bytes into a trace, five bytes a message:
//
//	0-1  time since the previous message, in units of unit ns (big endian)
//	2    sender node (low 3 bits), receiver node (next 3 bits), kind (top 2)
//	3    call id (low 4 bits; 0 = none), receive time known (bit 4),
//	     endpoints known (bit 5), send time unknown (bit 6), clock offset
//	     for the sender (bit 7)
//	4    message size
func FuzzTrace(data []byte, unit int64) *trace.Trace {
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
func CheckPatterns(t *testing.T, res *causal.Result) {
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
		n, err := causal.ParseSignature(p.Signature)
		if err != nil {
			t.Fatalf("pattern %s: %v", p.Signature, err)
		}
		if n.Size() != len(p.Hops) {
			t.Fatalf("pattern %s: %d hops, signature has %d", p.Signature, len(p.Hops), n.Size())
		}
	}
}

// MultiTier generates a multi-tier trace for the benchmarks
// (internal/genfix) with the given clients, ending after msgs messages or
// at dur. The sizes are small so that "make test" can smoke-run every
// benchmark; scripts/bench-nestconv.sh runs the paper's sizes.
func MultiTier(b testing.TB, clients, msgs int, dur time.Duration) *trace.Trace {
	b.Helper()
	tr, _, err := genfix.Generate(genfix.RPC{Clients: clients, Messages: msgs, Duration: dur, Seed: 1}.Config())
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// SetMessageBytes makes the benchmark's MB/s the rate at which in-memory
// messages are consumed.
func SetMessageBytes(b *testing.B, t *trace.Trace) {
	b.SetBytes(int64(len(t.Messages)) * int64(unsafe.Sizeof(trace.Message{})))
}
