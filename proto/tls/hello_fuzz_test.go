package tls

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// fakeConn is a net.Conn that reads in and discards what is written.
type fakeConn struct {
	r *bytes.Reader
}

func (c *fakeConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *fakeConn) Close() error                     { return nil }
func (c *fakeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fakeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fakeConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

var errSeen = errors.New("seen")

// goClientHello has crypto/tls's server parse a ClientHello body, and
// returns what it understood, or nil if it rejected it.
func goClientHello(body []byte) *tls.ClientHelloInfo {
	if len(body) > 1<<14-4 {
		return nil
	}
	msg := append([]byte{hsClientHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	rec := append([]byte{ctHandshake, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
	var info *tls.ClientHelloInfo
	s := tls.Server(&fakeConn{bytes.NewReader(rec)}, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		info = h
		return nil, errSeen
	}})
	s.Handshake()
	return info
}

// FuzzClientHello checks parseClientHello against crypto/tls's server:
// whatever Go accepts, the parser accepts too, with the same server
// name, ALPN protocols, cipher suites and supported versions.
func FuzzClientHello(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "proto/tls/testdata/*.conn")
	// Go's own ClientHellos, TLS 1.3 and 1.2, with SNI and ALPN: every extension branch.
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		var hello []byte
		c := tls.Client(&captureConn{out: &hello}, &tls.Config{ServerName: "example.com", NextProtos: []string{"h2", "http/1.1"}, MaxVersion: v})
		c.Handshake()
		body := hello[recHeaderLen+hsHeaderLen:]
		if info := goClientHello(body); info == nil || info.ServerName != "example.com" {
			f.Fatalf("the oracle does not read Go's own ClientHello: %+v", info)
		}
		f.Add(body)
	}
	// No extensions at all: the early return.
	f.Add(append(append([]byte{3, 3}, make([]byte, 32)...), 0, 0, 2, 0x13, 0x01, 1, 0))
	f.Fuzz(func(t *testing.T, body []byte) {
		mine, ok := parseClientHello(body)
		info := goClientHello(body)
		if info == nil {
			return
		}
		if !ok {
			t.Fatalf("crypto/tls read it (%+v), parseClientHello did not", info)
		}
		if mine.sni != strings.TrimSuffix(info.ServerName, ".") && mine.sni != info.ServerName {
			t.Errorf("sni %q, crypto/tls %q", mine.sni, info.ServerName)
		}
		if !slices.Equal(mine.alpn, info.SupportedProtos) {
			t.Errorf("alpn %q, crypto/tls %q", mine.alpn, info.SupportedProtos)
		}
		if !slices.Equal(mine.suites, info.CipherSuites) {
			t.Errorf("suites %x, crypto/tls %x", mine.suites, info.CipherSuites)
		}
		if len(mine.versions) > 0 && !slices.Equal(mine.versions, info.SupportedVersions) {
			t.Errorf("versions %x, crypto/tls %x", mine.versions, info.SupportedVersions)
		}
	})
}

// captureConn is a net.Conn that keeps the first record written and
// fails reads, so that a client stops after its ClientHello.
type captureConn struct {
	fakeConn
	out *[]byte
}

func (c *captureConn) Write(p []byte) (int, error) {
	if *c.out == nil {
		*c.out = append([]byte(nil), p...)
	}
	return len(p), nil
}

func (c *captureConn) Read([]byte) (int, error) { return 0, errSeen }

// FuzzKeyLog checks that reading any key log counts every line, keeps
// only secrets of valid sizes, and that what it kept reads back the same
// from the canonical form of the key log.
func FuzzKeyLog(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "proto/tls/testdata/*.keylog")
	// Valid lines of every label, a comment, a blank line, CRLF.
	f.Add([]byte("# comment\n\nCLIENT_RANDOM " + strings.Repeat("ab", 32) + " " + strings.Repeat("01", 48) + "\r\n" +
		"CLIENT_TRAFFIC_SECRET_0 " + strings.Repeat("cd", 32) + " " + strings.Repeat("02", 32) + "\n"))
	// Malformed: too few fields, bad hex, a short random.
	f.Add([]byte("CLIENT_RANDOM x\nSERVER_TRAFFIC_SECRET_0 zz 00\nCLIENT_RANDOM abab " + strings.Repeat("01", 48)))
	f.Fuzz(func(t *testing.T, in []byte) {
		kl, err := ReadKeyLog(bytes.NewReader(in), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		st := kl.Stats()
		if want := bytes.Count(in, []byte("\n")) + btoi(len(in) > 0 && in[len(in)-1] != '\n'); st.Lines != want {
			t.Fatalf("%d lines, want %d", st.Lines, want)
		}
		if st.Bad > 0 && st.FirstBad == nil || st.Bad == 0 && st.FirstBad != nil {
			t.Fatalf("%+v", st)
		}
		var canon bytes.Buffer
		for r, s := range kl.byRandom {
			for _, e := range []struct {
				label  string
				secret []byte
			}{{"CLIENT_RANDOM", s.Master}, {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", s.ClientHandshake},
				{"SERVER_HANDSHAKE_TRAFFIC_SECRET", s.ServerHandshake}, {"CLIENT_TRAFFIC_SECRET_0", s.ClientTraffic},
				{"SERVER_TRAFFIC_SECRET_0", s.ServerTraffic}} {
				if e.secret == nil {
					continue
				}
				if len(e.secret) < 16 || len(e.secret) > 64 || e.label == "CLIENT_RANDOM" && len(e.secret) != 48 {
					t.Fatalf("%s secret of %d bytes kept", e.label, len(e.secret))
				}
				canon.WriteString(e.label + " " + hexOf(r[:]) + " " + hexOf(e.secret) + "\n")
			}
		}
		again, _ := ReadKeyLog(&canon, "canonical")
		if again.Stats().Bad != 0 || again.Len() != kl.Len() {
			t.Fatalf("canonical form: %+v, %d connections, want %d", again.Stats(), again.Len(), kl.Len())
		}
		for r, s := range kl.byRandom {
			if a := again.Lookup(r); a == nil || !bytes.Equal(a.Master, s.Master) || !bytes.Equal(a.ServerTraffic, s.ServerTraffic) ||
				!bytes.Equal(a.ClientHandshake, s.ClientHandshake) {
				t.Fatalf("secrets of %x differ", r)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
