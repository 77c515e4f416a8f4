package grpctest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"time"
)

// ServerName is the name the test certificates are for.
const ServerName = "wirepath.test"

// H2CServer starts net/http's server speaking unencrypted HTTP/2 (and
// HTTP/1.1) with handler h.
func H2CServer(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Start()
	return srv
}

// H2CClient returns a net/http client speaking unencrypted HTTP/2 by
// prior knowledge, its connections recorded by rec when rec is not nil.
// It dials one connection at a time: net/http hands a new HTTP/2
// connection to the request that dialled it before sharing it, so
// requests made meanwhile would each dial one more (closed unused, or
// after a TLS handshake) and the calls would not all share one.
func H2CClient(rec *Recorder) (*http.Client, *http.Transport) {
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: dialer(rec), MaxConnsPerHost: 1}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}, tr
}

// dialer returns a DialContext that records through rec (if not nil).
func dialer(rec *Recorder) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil || rec == nil {
			return c, err
		}
		return rec.Wrap(c), nil
	}
}

// Cert makes a self-signed ECDSA certificate for ServerName and
// 127.0.0.1, and a pool that trusts it.
func Cert() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: ServerName},
		DNSNames: []string{ServerName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool, nil
}

// TLSServer starts net/http's server over TLS with cert, offering h2 and
// http/1.1 by ALPN.
func TLSServer(h http.Handler, cert tls.Certificate) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	return srv
}

// TLSClient returns a net/http client over TLS trusting pool, writing
// its key log to keylog, speaking HTTP/2 when h2 (else HTTP/1.1), its
// connections recorded by rec when rec is not nil.
func TLSClient(rec *Recorder, pool *x509.CertPool, keylog io.Writer, h2 bool) (*http.Client, *http.Transport) {
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: dialer(rec),
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: ServerName, KeyLogWriter: keylog}}
	if h2 {
		tr.Protocols.SetHTTP2(true)
		tr.MaxConnsPerHost = 1
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	return &http.Client{Transport: tr}, tr
}

// Record makes call 0 and then calls 1 to calls concurrently over one h2c
// connection to a fresh server running Handler, and returns what the
// client's connection wrote and read, the connection closed.
func Record(calls int) (*Recorder, error) {
	srv := H2CServer(http.HandlerFunc(Handler))
	defer srv.Close()
	rec := &Recorder{}
	client, tr := H2CClient(rec)
	defer tr.CloseIdleConnections()
	if err := Run(client, srv.URL, calls); err != nil {
		return nil, err
	}
	tr.CloseIdleConnections()
	return rec, nil
}
