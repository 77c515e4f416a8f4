package trace

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchTrace makes a trace of n messages among a few hundred endpoints.
func benchTrace(n int) *Trace {
	t := &Trace{}
	for i := 0; i < n; i++ {
		c := i % 200
		m := Message{
			SendTS: Timestamp(1700000000000000000 + int64(i)*1000), RecvTS: Timestamp(1700000000000000000 + int64(i)*1000 + 400),
			Src: t.Intern(fmt.Sprintf("10.0.%d.%d:%d", c/50, c%50, 40000+c)), Dst: t.Intern("10.0.9.1:80"),
			SrcNode: t.Intern(fmt.Sprintf("10.0.%d.%d", c/50, c%50)), DstNode: t.Intern("10.0.9.1"),
			Bytes: int64(100 + i%1400), Kind: Kind(1 + i%2), CallID: t.Intern(fmt.Sprint("c", i%64)), Proto: ProtoTCP,
		}
		t.Messages = append(t.Messages, m)
	}
	return t
}

// withEvidence gives the messages of t what reconcile gives a decoded
// HTTP trace: a connection and ordinal, a label, a few tokens, and a
// request id on the calls.
func withEvidence(t *Trace) *Trace {
	labels := []Sym{t.Intern("GET /item/{id}"), t.Intern("200"), t.Intern("redis GET")}
	for i := range t.Messages {
		m := &t.Messages[i]
		m.Conn, m.Seq, m.Label = uint32(i%200+1), uint32(i/400+1), labels[i%3]
		m.Tokens, _ = t.Syms.AddTokens([]uint64{uint64(i) * 0x9e3779b97f4a7c15, uint64(i%64) * 0xc2b2ae3d27d4eb4f, 0xfeed})
		if m.Kind == KindCall {
			m.ReqID = t.Intern(fmt.Sprintf("traceparent:%032x", i/2))
		}
	}
	return t
}

func benchInputOf(b *testing.B, f Format, t *Trace) []byte {
	var buf bytes.Buffer
	switch f {
	case FormatProject5:
		for _, m := range t.Messages {
			op := "CALL_SENT"
			if m.Kind == KindReturn {
				op = "RET_SENT"
			}
			fmt.Fprintf(&buf, "%d.%09d\t%s\t%s\t%s\t%s\n", m.SendTS/1e9, m.SendTS%1e9, op, t.Str(m.SrcNode), t.Str(m.DstNode), t.Str(m.CallID))
		}
	default:
		if err := Write(&buf, t, f); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes()
}

func BenchmarkRead(b *testing.B) {
	const n = 20000
	for _, tc := range []struct {
		f  Format
		ev bool
	}{{FormatTSV, false}, {FormatJSONL, false}, {FormatProject5, false}, {FormatTSV, true}, {FormatJSONL, true}} {
		name := tc.f.String()
		if tc.ev {
			name += "-evidence"
		}
		f := tc.f
		b.Run(name, func(b *testing.B) {
			t := benchTrace(n)
			if tc.ev {
				t = withEvidence(t)
			}
			data := benchInputOf(b, f, t)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			var got int
			for i := 0; i < b.N; i++ {
				r := NewReader(bytes.NewReader(data), "bench", ReadOptions{Strict: true})
				got = 0
				for r.Scan() {
					got++
				}
				if r.Err() != nil {
					b.Fatal(r.Err())
				}
			}
			if got != n {
				b.Fatalf("read %d messages, want %d", got, n)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	const n = 20000
	t := benchTrace(n)
	for _, f := range []Format{FormatTSV, FormatJSONL} {
		b.Run(f.String(), func(b *testing.B) {
			var cw countWriter
			if err := Write(&cw, t, f); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(cw.n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := Write(io.Discard, t, f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkReadTable reads a TSV trace into a compact Table (what the
// nest command does), presized from the input's size.
func BenchmarkReadTable(b *testing.B) {
	benchReadTable(b, benchTrace(20000))
}

// BenchmarkReadTableEvidence is BenchmarkReadTable on a trace with
// evidence on every message.
func BenchmarkReadTableEvidence(b *testing.B) {
	benchReadTable(b, withEvidence(benchTrace(20000)))
}

func benchReadTable(b *testing.B, t *Trace) {
	n := len(t.Messages)
	data := benchInputOf(b, FormatTSV, t)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var tab *Table
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), "bench", ReadOptions{Strict: true})
		r.sizeHint = int64(len(data))
		var err error
		if tab, err = r.ReadTable(); err != nil {
			b.Fatal(err)
		}
	}
	if tab.Len() != n {
		b.Fatalf("read %d messages, want %d", tab.Len(), n)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(tab.Size()-tab.Syms.size())/float64(n), "table-B/msg")
}
