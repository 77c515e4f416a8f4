package flows

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/proto/grpctest"
	ptls "github.com/wirepath/wirepath/proto/tls"
	"github.com/wirepath/wirepath/trace"
)

// replay turns a connection recorded by grpctest into the packets of one
// TCP connection between cli and srv: a handshake, each event sent in
// segments of at most mss bytes, a close.
func replay(cli, srv string, events []grpctest.Event, mss int) *conv {
	c := newConv(cli, srv, 1000, 5000).handshake()
	c.step = ms / 10
	for _, e := range events {
		c.send(e.Dir == 0, string(e.Data), mss)
	}
	return c.close()
}

// checkCalls checks that msgs are the calls 0 to calls exactly: per call
// one CALL and one RETURN, paired by call id, on one stream, labelled
// with the method and the status, the request carrying its x-request-id.
func checkCalls(t *testing.T, msgs []*Message, calls int, app App) {
	t.Helper()
	type pair struct{ call, ret *Message }
	byID := map[CallID]*pair{}
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.App != app {
			t.Errorf("message of %v, want %v: %+v", m.App, app, *m)
			continue
		}
		p := byID[m.Call]
		if p == nil {
			p = &pair{}
			byID[m.Call] = p
		}
		switch {
		case m.Kind == trace.KindCall && p.call == nil:
			p.call = m
		case m.Kind == trace.KindReturn && p.ret == nil:
			p.ret = m
		default:
			t.Fatalf("unexpected message %+v", *m)
		}
	}
	if len(byID) != calls+1 {
		t.Fatalf("%d call ids, want %d calls", len(byID), calls+1)
	}
	for id, p := range byID {
		if p.call == nil || p.ret == nil || p.call.Stream != p.ret.Stream || p.call.Stream == 0 {
			t.Fatalf("call %v: %+v / %+v", id, p.call, p.ret)
		}
		ev := p.call.Evidence
		if ev == nil || len(ev.IDs) != 1 || ev.IDs[0].Source != "x-request-id" || seen[ev.IDs[0].Value] {
			t.Fatalf("call %v: evidence %+v", id, ev)
		}
		seen[ev.IDs[0].Value] = true
		var n int
		fmt.Sscanf(ev.IDs[0].Value, "call-%d", &n)
		if want := "grpc " + grpctest.Methods[n%len(grpctest.Methods)]; p.call.Label != want {
			t.Errorf("call %d: label %q, want %q", n, p.call.Label, want)
		}
		if p.ret.Status != grpctest.Status(n) || !strings.HasPrefix(p.ret.Label, "grpc ") {
			t.Errorf("call %d: return %q %d", n, p.ret.Label, p.ret.Status)
		}
		if p.call.SendTS() > p.ret.SendTS() || p.call.Incomplete || p.ret.Incomplete || len(p.call.Sightings) == 0 {
			t.Errorf("call %d: times or completeness %+v / %+v", n, *p.call, *p.ret)
		}
	}
}

// checkOrdinals checks that each direction's messages are numbered from
// 1 without holes.
func checkOrdinals(t *testing.T, msgs []*Message) {
	t.Helper()
	seen := map[string]map[uint32]bool{}
	for _, m := range msgs {
		k := fmt.Sprint(m.Conn, m.Src)
		if seen[k] == nil {
			seen[k] = map[uint32]bool{}
		}
		if seen[k][m.Ordinal] || m.Ordinal == 0 {
			t.Fatalf("ordinal %d twice or 0: %+v", m.Ordinal, *m)
		}
		seen[k][m.Ordinal] = true
	}
	for k, s := range seen {
		for i := uint32(1); i <= uint32(len(s)); i++ {
			if !s[i] {
				t.Fatalf("%s: ordinal %d missing of %d", k, i, len(s))
			}
		}
	}
}

// TestGRPCMultiplexed: 32 concurrent gRPC-shaped calls over one h2c
// connection (net/http's client and server on loopback), replayed as
// packets in segments of several sizes: one CALL and one RETURN per call,
// paired exactly, whatever the interleaving.
func TestGRPCMultiplexed(t *testing.T) {
	rec, err := grpctest.Record(32)
	if err != nil {
		t.Fatal(err)
	}
	for _, mss := range []int{1448, 100, 16384} {
		c := replay("10.0.0.1:40000", "10.0.0.2:50051", rec.Events(), mss)
		msgs, _, st := run(t, DefaultConfig(), c.pkts...)
		checkCalls(t, msgs, 32, AppH2)
		checkOrdinals(t, msgs)
		p := st.Protocols["h2"]
		if p == nil || p.Conns != 1 || p.Requests != 33 || p.Responses != 33 || p.ControlUnits == 0 ||
			p.Messages != 66 || p.Calls != 33 || p.Returns != 33 || p.UnframedBytes != 0 {
			t.Errorf("mss %d: h2 accounting %+v", mss, p)
		}
		if st.DecodedMessages != 66 || st.UnpairedReturns != 0 || st.EvidenceIDs != 33 {
			t.Errorf("mss %d: stats %+v", mss, *st)
		}
	}
}

// TestGRPCTwoSniffers: the same connection seen by a sniffer near the
// client (TTL 64) and one near the server (TTL 63, 50 µs later), whose
// copies come as packets of their own: each message is sent at the
// client side's time and received at the server side's.
func TestGRPCTwoSniffers(t *testing.T) {
	rec, err := grpctest.Record(32)
	if err != nil {
		t.Fatal(err)
	}
	c := replay("10.0.0.1:40000", "10.0.0.2:50051", rec.Events(), 1448)
	var pkts []*pcapio.Packet
	for _, p := range c.pkts {
		pkts = append(pkts, p)
		q := *p
		q.Obs = []pcapio.Observation{{Sniffer: 1, TTL: 63, TS: p.Obs[0].TS + ms/20, Corrected: p.Obs[0].Corrected + ms/20}}
		pkts = append(pkts, &q)
	}
	slices.SortStableFunc(pkts, func(a, b *pcapio.Packet) int { return cmp.Compare(a.TS(), b.TS()) })
	msgs, _, st := run(t, DefaultConfig(), pkts...)
	checkCalls(t, msgs, 32, AppH2)
	for _, m := range msgs {
		if len(m.Sightings) != 2 {
			t.Fatalf("sightings %+v of %+v\n%+v", m.Sightings, *m, *st)
		}
		s, r := m.SenderSide(), m.ReceiverSide()
		if s.Point.Sniffer != 0 || r.Point.Sniffer != 1 || r.Last != s.Last+ms/20 || r.First != s.First+ms/20 {
			t.Errorf("sender side %+v, receiver side %+v", s, r)
		}
	}
	if st.LateSightings == 0 {
		t.Errorf("no late sightings: %+v", *st)
	}
}

// TestTLS: HTTP/2 (32 concurrent calls) and HTTP/1.1 over TLS 1.3 between
// net/http's client and server: with the client's key log, decrypted and
// framed as in clear; without it, opaque messages between direction
// changes labelled with the server name, the handshake not made messages.
func TestTLS(t *testing.T) {
	cert, pool, err := grpctest.Cert()
	if err != nil {
		t.Fatal(err)
	}
	srv := grpctest.TLSServer(http.HandlerFunc(grpctest.Handler), cert)
	defer srv.Close()
	var keylog bytes.Buffer
	rec := &grpctest.Recorder{}
	client, tr := grpctest.TLSClient(rec, pool, &keylog, true)
	if err := grpctest.Run(client, srv.URL, 32); err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnections()
	kl, err := ptls.ReadKeyLog(bytes.NewReader(keylog.Bytes()), "keylog")
	if err != nil {
		t.Fatal(err)
	}
	c := replay("10.0.0.1:40000", "10.0.0.2:443", rec.Events(), 1448)
	cfg := DefaultConfig()
	cfg.KeyLog = kl
	msgs, _, st := run(t, cfg, c.pkts...)
	checkCalls(t, msgs, 32, AppH2)
	p := st.Protocols["tls"]
	if p == nil || p.Decrypted != 1 || p.InnerH2 != 1 || p.WithSNI != 1 || p.Requests != 33 {
		t.Errorf("tls accounting %+v", p)
	}

	msgs, _, st = run(t, DefaultConfig(), c.pkts...)
	p = st.Protocols["tls"]
	if p == nil || p.NoKeyLog != 1 || p.WithSNI != 1 || p.DataMessages == 0 || p.Requests != 0 {
		t.Errorf("tls accounting without key log %+v", p)
	}
	for _, m := range msgs {
		if m.App != AppTLS || !strings.HasPrefix(m.Label, "tls sni="+grpctest.ServerName) || m.Kind == trace.KindUnknown {
			t.Errorf("without key log: %+v", *m)
		}
	}
}

// TestTLSHTTP1: HTTP/1.1 over TLS, decrypted: one CALL and RETURN per
// request, labelled by the HTTP/1.x reader.
func TestTLSHTTP1(t *testing.T) {
	cert, pool, err := grpctest.Cert()
	if err != nil {
		t.Fatal(err)
	}
	srv := grpctest.TLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}), cert)
	defer srv.Close()
	var keylog bytes.Buffer
	rec := &grpctest.Recorder{}
	client, tr := grpctest.TLSClient(rec, pool, &keylog, false)
	for i := range 5 {
		resp, err := client.Get(fmt.Sprintf("%s/item/%d", srv.URL, i+100))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	tr.CloseIdleConnections()
	if rec.Conns() != 1 {
		t.Fatalf("%d connections, want 1", rec.Conns())
	}
	kl, err := ptls.ReadKeyLog(bytes.NewReader(keylog.Bytes()), "keylog")
	if err != nil {
		t.Fatal(err)
	}
	c := replay("10.0.0.1:40000", "10.0.0.2:443", rec.Events(), 1448)
	cfg := DefaultConfig()
	cfg.KeyLog = kl
	msgs, _, st := run(t, cfg, c.pkts...)
	var calls, rets int
	for _, m := range msgs {
		switch {
		case m.Kind == trace.KindCall && m.Label == "GET /item/{id}" && m.App == AppHTTP:
			calls++
		case m.Kind == trace.KindReturn && m.Label == "200" && m.Status == 200:
			rets++
		default:
			t.Errorf("message %+v", *m)
		}
	}
	if calls != 5 || rets != 5 || st.Protocols["tls"].InnerHTTP != 1 {
		t.Errorf("%d calls, %d returns; %+v", calls, rets, st.Protocols["tls"])
	}
}

// TestGRPCLoss: the multiplexed connection of TestGRPCMultiplexed with one
// of the server's segments lost by the capture (its bytes a gap once the
// client acknowledges them): only the responses whose frames were in it
// are lost, every other call is paired exactly (by stream id), and the
// accounting says so. Responses that were open when the server's
// direction lost its framing are marked incomplete: the decoder cannot
// tell which of them the gap held frames of.
func TestGRPCLoss(t *testing.T) {
	rec, err := grpctest.Record(32)
	if err != nil {
		t.Fatal(err)
	}
	c := replay("10.0.0.1:40000", "10.0.0.2:50051", rec.Events(), 300)
	var kept []*pcapio.Packet
	dropped := 0
	for i, p := range c.pkts {
		if dropped == 0 && i > len(c.pkts)/2 && p.SrcPort == 50051 && len(p.Payload) == 300 {
			dropped = len(p.Payload)
			continue
		}
		kept = append(kept, p)
	}
	msgs, _, st := run(t, DefaultConfig(), kept...)
	byCall := map[CallID][2]*Message{}
	incomplete := 0
	for _, m := range msgs {
		if m.Incomplete {
			incomplete++
		}
		p := byCall[m.Call]
		if m.Kind == trace.KindCall {
			p[0] = m
		} else {
			p[1] = m
		}
		byCall[m.Call] = p
	}
	paired := 0
	for id, p := range byCall {
		switch {
		case p[0] == nil:
			t.Errorf("call %v: a RETURN without its CALL", id)
		case p[1] != nil && p[0].Stream != p[1].Stream:
			t.Errorf("call %v: streams %d and %d", id, p[0].Stream, p[1].Stream)
		case p[1] != nil:
			paired++
		}
	}
	h2 := st.Protocols["h2"]
	if st.GapBytes != int64(dropped) || h2.GapBytes != int64(dropped) {
		t.Errorf("gap bytes %d (h2 %d), dropped %d", st.GapBytes, h2.GapBytes, dropped)
	}
	if h2.Requests != 33 || int64(paired) != h2.Responses || h2.Responses+h2.Unanswered != 33 {
		t.Errorf("%d calls paired; h2 %+v", paired, h2)
	}
	t.Logf("%d of 33 calls paired exactly after losing %d bytes (%d unanswered); %d messages marked incomplete", paired, dropped, h2.Unanswered, incomplete)
}
