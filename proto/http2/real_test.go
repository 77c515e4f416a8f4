package http2

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
)

// This file tests the decoder against a real implementation on loopback:
// net/http's HTTP/2 client and server (x/net's own are deprecated in its
// favour). A recorder below the client's HTTP/2 layer keeps both
// directions' bytes in the order the client wrote and read them.

// TestGRPCh2c: 32 concurrent gRPC-shaped calls over one h2c connection
// between net/http's client and server. (proto/tls runs the same over
// TLS, decrypting with the key log.)
func TestGRPCh2c(t *testing.T) {
	rec, err := grpctest.Record(32)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Conns() != 1 {
		t.Fatalf("%d connections, want the calls multiplexed over 1", rec.Conns())
	}
	cfg := DefaultConfig()
	cfg.Evidence = true
	units, st := decode(t, cfg, events(rec), 0)
	if err := grpctest.Check(units, 32); err != nil {
		t.Fatalf("%v\n%s", err, format(appUnits(units)))
	}
	if st.Framed != st.In || st.FramesLost != 0 || st.HPACKPoisoned != 0 || st.Streams != 33 {
		t.Errorf("stats: %+v", st)
	}
}

// TestPlainRequests: plain HTTP requests, one after the other, over one
// h2c connection.
func TestPlainRequests(t *testing.T) {
	srv := grpctest.H2CServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/7") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "item %s\n", r.URL.Path)
	}))
	defer srv.Close()
	rec := &grpctest.Recorder{}
	client, tr := grpctest.H2CClient(rec)
	defer tr.CloseIdleConnections()
	for i := range 10 {
		resp, err := client.Get(fmt.Sprintf("%s/item/%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	tr.CloseIdleConnections()
	units, _ := decode(t, DefaultConfig(), events(rec), 0)
	status := map[uint64]int{}
	reqs := 0
	for _, u := range appUnits(units) {
		switch u.Kind {
		case proto.KindRequest:
			reqs++
			if u.Label != "GET /item/{id}" {
				t.Errorf("request label %q", u.Label)
			}
		case proto.KindResponse:
			status[u.Key] = u.Status
		}
	}
	if reqs != 10 || len(status) != 10 || status[15] != 404 || status[13] != 200 {
		t.Fatalf("%d requests, statuses %v\n%s", reqs, status, format(units))
	}
}

// events converts a recording.
func events(rec *grpctest.Recorder) []event {
	var out []event
	for _, e := range rec.Events() {
		out = append(out, event{e.Dir, e.Data})
	}
	return out
}

// TestGRPCLoss cuts the server's side of a real 33-call connection
// across frame boundaries: every request is still reported exactly,
// every response is reported or counted lost (those whose end was cut),
// and the responses whose headers or trailers come after the cut are
// framed but unlabelled (the table is poisoned).
func TestGRPCLoss(t *testing.T) {
	rec, err := grpctest.Record(32)
	if err != nil {
		t.Fatal(err)
	}
	evs := events(rec)
	var total int64
	for _, e := range evs {
		if e.dir == proto.FromServer {
			total += int64(len(e.data))
		}
	}
	cfg := DefaultConfig()
	cfg.Evidence = true
	units, st := decodeGap(t, cfg, evs, proto.FromServer, total/2, 300)
	var reqs, resps, unlabelled int
	for _, u := range appUnits(units) {
		switch {
		case u.Kind == proto.KindRequest:
			reqs++
		case u.Label == "":
			unlabelled++
			fallthrough
		default:
			resps++
		}
	}
	// The resync almost always finds the next frame header; about one
	// layout in 200 (the concurrency decides where frames fall) leaves
	// none it trusts before the end, and the rest is skipped and counted,
	// which the accounting below checks all the same.
	if reqs != 33 || st.FramingLost != 1 || st.Resyncs > 1 || st.HPACKPoisoned != 1 {
		t.Fatalf("%d requests, stats %+v", reqs, st)
	}
	if st.Resyncs == 0 {
		t.Logf("no resync after the cut: %d bytes skipped", st.Skipped)
	}
	if int64(33-resps) != st.StreamsLost || unlabelled == 0 && st.Resyncs == 1 {
		t.Errorf("%d responses (%d unlabelled), %d stream halves lost\n%s", resps, unlabelled, st.StreamsLost, format(appUnits(units)))
	}
	t.Logf("cut 300 bytes at %d of %d: %d of 33 responses kept, %d of them unlabelled", total/2, total, resps, unlabelled)
}
