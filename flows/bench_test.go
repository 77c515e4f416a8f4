package flows

import (
	"bytes"
	"io"
	"testing"

	"github.com/wirepath/wirepath/flows/internal/benchgen"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// benchPackets decodes a synthetic capture of n packets into memory.
func benchPackets(tb testing.TB, n int) ([]*pcapio.Packet, int64) {
	tb.Helper()
	o := benchgen.DefaultOptions()
	o.Packets = n
	var buf bytes.Buffer
	st, err := benchgen.Write(&buf, o)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := pcapio.NewReader(&buf, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	var pkts []*pcapio.Packet
	var rec pcapio.Record
	for {
		if err := r.ReadRecord(&rec); err == io.EOF {
			break
		} else if err != nil {
			tb.Fatal(err)
		}
		p := &pcapio.Packet{}
		pcapio.Decode(p, rec.LinkType, rec.Data, rec.WireLen)
		p.Obs[0].TS, p.Obs[0].Corrected = rec.TS, rec.TS
		pkts = append(pkts, p.Clone())
	}
	return pkts, st.Payload
}

// BenchmarkAssembler measures the flows stage alone on decoded packets:
// many concurrent HTTP connections, in order.
func BenchmarkAssembler(b *testing.B) {
	pkts, payload := benchPackets(b, 20000)
	b.ReportAllocs()
	b.SetBytes(payload)
	var m Message
	var msgs int
	for b.Loop() {
		a, _ := NewAssembler(DefaultConfig())
		for _, p := range pkts {
			a.Add(p)
			for a.Next(&m) {
				msgs++
			}
		}
		a.Flush()
		for a.Next(&m) {
			msgs++
		}
		if err := a.Stats().Check(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pkts))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
	if msgs == 0 {
		b.Fatal("no messages")
	}
}

// TestNoAllocsPerPacket guards the hot path: once a connection is open and
// the pools are warm, in-order request/response traffic (messages cut,
// kinds assigned, messages emitted) allocates nothing per packet.
func TestNoAllocsPerPacket(t *testing.T) {
	a, err := NewAssembler(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(cli, srv, 1, 1).handshake()
	for _, p := range c.pkts {
		a.Add(p)
	}
	req := tcpP(cli, srv, fPA, 0, 0, get1, at(0))
	rsp := tcpP(srv, cli, fPA, 0, 0, resp, at(0))
	ack := tcpP(cli, srv, fA, 0, 0, "", at(0))
	var m Message
	step := func() {
		// One exchange, each packet a second after the last so that the
		// messages before it settle and are emitted.
		c.t += 1e9
		req.Seq, req.Ack, req.Obs[0].Corrected = c.cseq, c.sseq, c.t
		a.Add(req)
		c.cseq += uint32(len(get1))
		c.t += 1e9
		rsp.Seq, rsp.Ack, rsp.Obs[0].Corrected = c.sseq, c.cseq, c.t
		a.Add(rsp)
		c.sseq += uint32(len(resp))
		c.t += 1e9
		ack.Seq, ack.Ack, ack.Obs[0].Corrected = c.cseq, c.sseq, c.t
		a.Add(ack)
		for a.Next(&m) {
		}
	}
	for i := 0; i < 100; i++ { // warm the pools
		step()
	}
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per exchange of 3 packets, want 0", allocs)
	}
	if m.Kind != trace.KindReturn || m.Bytes != int64(len(resp)) {
		t.Errorf("last message %+v", m)
	}
}
