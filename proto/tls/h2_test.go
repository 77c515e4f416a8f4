package tls

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
	"github.com/wirepath/wirepath/proto/http2"
)

// TestGRPCOverTLS: 32 concurrent gRPC-shaped calls over one TLS
// connection with ALPN h2 between net/http's client and server,
// recorded below TLS, decrypted with the client's key log and decoded by
// proto/http2: one request and one response per call, in record offsets.
func TestGRPCOverTLS(t *testing.T) {
	events, keylog := grpcOverTLS(t, 32)
	for _, chunk := range []int{0, 1000} {
		var alpn string
		var inner *http2.Decoder
		d := New(Config{KeyLog: readKeyLog(t, keylog), NewInner: func(p string) Inner {
			alpn = p
			cfg := http2.DefaultConfig()
			cfg.Evidence = true
			inner = http2.New(cfg)
			return inner
		}})
		var off [2]int64
		var units []proto.Unit
		var u proto.Unit
		for _, e := range events {
			for b := e.Data; len(b) > 0; {
				n := len(b)
				if chunk > 0 {
					n = min(n, chunk)
				}
				d.Feed(e.Dir, off[e.Dir], b[:n])
				off[e.Dir] += int64(n)
				b = b[n:]
			}
			for d.Next(&u) {
				units = append(units, keep(u))
			}
		}
		d.Close()
		for d.Next(&u) {
			units = append(units, keep(u))
		}
		if alpn != "h2" || d.Info().SNI != serverName || d.Info().Version != tls.VersionTLS13 {
			t.Fatalf("alpn %q, info %+v", alpn, d.Info())
		}
		var app []proto.Unit
		for _, u := range units {
			if u.Kind == proto.KindRequest || u.Kind == proto.KindResponse {
				app = append(app, keep(u))
				if u.Start < 0 || u.End > off[u.Dir] || u.Start >= u.End {
					t.Fatalf("Unit outside the stream (%d bytes): %s", off[u.Dir], format([]proto.Unit{u}))
				}
			}
		}
		if err := grpctest.Check(app, 32); err != nil {
			t.Fatalf("chunk %d: %v\n%s", chunk, err, format(units))
		}
		st, ist := d.Stats(), inner.Stats()
		if err := st.Check(); err != nil {
			t.Fatal(err)
		}
		if st.Framed != st.In || st.Fallbacks != 0 || ist.Framed != ist.In || ist.In != st.PlainBytes || st.MapClamped != 0 {
			t.Errorf("tls %+v\nhttp2 %+v", st, ist)
		}
	}
}

// grpcOverTLS makes calls+1 gRPC-shaped calls (calls of them concurrent)
// over one TLS 1.3 connection with ALPN h2 between net/http's client and
// server, and returns the connection as the client saw it and its key
// log.
func grpcOverTLS(t testing.TB, calls int) ([]grpctest.Event, []byte) {
	cert, pool := testCert(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(grpctest.Handler))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	rec := &grpctest.Recorder{}
	var keylog bytes.Buffer
	tr := &http.Transport{ForceAttemptHTTP2: true, MaxConnsPerHost: 1, // see grpctest.H2CClient
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, KeyLogWriter: &keylog},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return rec.Wrap(c), nil
		}}
	defer tr.CloseIdleConnections()
	if err := grpctest.Run(&http.Client{Transport: tr}, srv.URL, calls); err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnections()
	if rec.Conns() != 1 {
		t.Fatalf("%d connections, want the calls multiplexed over 1", rec.Conns())
	}
	return rec.Events(), keylog.Bytes()
}
