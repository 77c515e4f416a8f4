package tls

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
)

// echo runs a TLS connection between Go's client and server on loopback:
// the client sends messages of the sizes given (by default of growing
// size, the largest spanning several records), the server answers each
// with twice its size. It returns the connection as the client saw it,
// the key log, and what each side's application wrote.
func echo(t testing.TB, server, client *tls.Config, sizes ...int) ([]grpctest.Event, []byte, [2][]byte) {
	if len(sizes) == 0 {
		sizes = []int{10, 100, 1000, 20000, 50}
	}
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wrote [2]bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		for {
			var n uint32
			if _, err := io.ReadFull(c, buf[:4]); err != nil {
				return
			}
			n = uint32(buf[0])<<24 | uint32(buf[1])<<16 | uint32(buf[2])<<8 | uint32(buf[3])
			if _, err := io.ReadFull(c, buf[:n]); err != nil {
				t.Error(err)
				return
			}
			reply := bytes.Repeat(buf[:n], 2)
			wrote[proto.FromServer].Write(reply)
			if _, err := c.Write(reply); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	rec := &grpctest.Recorder{}
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var keylog bytes.Buffer
	cfg := client.Clone()
	cfg.KeyLogWriter = &keylog
	c := tls.Client(rec.Wrap(raw), cfg)
	for i, size := range sizes {
		msg := append([]byte{0, 0, byte(size >> 8), byte(size)}, bytes.Repeat([]byte{byte('a' + i)}, size)...)
		wrote[proto.FromClient].Write(msg)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 2*size)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	wg.Wait()
	return rec.Events(), keylog.Bytes(), [2][]byte{wrote[0].Bytes(), wrote[1].Bytes()}
}

// TestDecryptGo decrypts connections between Go's TLS client and server,
// TLS 1.3 and the TLS 1.2 AEAD suites, and checks the plaintext is what
// each side's application wrote; without a key log, or with a wrong one,
// the same connections fall back to records.
func TestDecryptGo(t *testing.T) {
	cert, pool := testCert(t)
	tests := []struct {
		name    string
		version uint16
		suite   uint16
	}{
		{"tls13", tls.VersionTLS13, 0},
		{"tls12 aes128-gcm", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		{"tls12 aes256-gcm", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
		{"tls12 chacha20", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tt.version, NextProtos: []string{"x-echo"}}
			client := &tls.Config{RootCAs: pool, ServerName: serverName, MaxVersion: tt.version, NextProtos: []string{"x-echo"}}
			if tt.suite != 0 {
				server.CipherSuites = []uint16{tt.suite}
			}
			events, keylog, wrote := echo(t, server, client)
			kl := readKeyLog(t, keylog)
			for _, chunk := range []int{0, 1, 700} {
				r := decode(t, kl, events, chunk)
				if r.info.Decrypt != Decrypting || r.info.SNI != serverName || r.info.ALPN != "x-echo" || r.info.Version != tt.version {
					t.Fatalf("chunk %d: info %+v", chunk, r.info)
				}
				for dir := range wrote {
					if !bytes.Equal(r.sink.buf[dir].Bytes(), wrote[dir]) {
						t.Fatalf("chunk %d: %s plaintext %d bytes, application wrote %d", chunk, proto.Dir(dir), r.sink.buf[dir].Len(), len(wrote[dir]))
					}
				}
				if r.stats.Framed != r.stats.In || r.stats.Fallbacks != 0 {
					t.Errorf("chunk %d: %+v", chunk, r.stats)
				}
			}
			// Without a key log every application-data record is a
			// KindData Unit, one for each record decryption gave the
			// inner decoder; the handshake is not data.
			keyed := decode(t, kl, events, 0)
			plain := decode(t, nil, events, 0)
			for dir := range 2 {
				d := proto.Dir(dir)
				if n := count(plain.units, d, proto.KindData); n != keyed.sink.feeds[dir] {
					t.Errorf("no key log: %d %s data Units, want %d\n%s", n, d, keyed.sink.feeds[dir], format(plain.units))
				}
			}
			if plain.info.Decrypt != NoKeyLog || plain.stats.NoKeyLog != 1 {
				t.Errorf("no key log: %+v", plain.info)
			}
			wantLabel := "tls sni=" + serverName + " alpn=x-echo"
			for _, u := range plain.units {
				if u.Kind == proto.KindData && u.Label != wantLabel {
					t.Fatalf("label %q, want %q", u.Label, wantLabel)
				}
			}
			// A key log of another session has no secrets for it; a
			// corrupted one has wrong secrets.
			_, otherLog, _ := echo(t, server, client)
			for name, log := range map[string][]byte{"other session": otherLog, "wrong secrets": corrupt(keylog)} {
				r := decode(t, readKeyLog(t, log), events, 0)
				want := NoSecrets
				if name == "wrong secrets" {
					want = BadSecrets
				}
				if r.info.Decrypt != want || r.stats.Undecrypted[want] != 1 {
					t.Errorf("%s: %s, want %s", name, r.info.Decrypt, want)
				}
				for dir := range 2 {
					d := proto.Dir(dir)
					if a, b := count(r.units, d, proto.KindData), count(plain.units, d, proto.KindData); a != b {
						t.Errorf("%s: %d %s data Units, without a key log %d", name, a, d, b)
					}
				}
			}
		})
	}
}

// corrupt changes the last hex digit of every secret in a key log.
func corrupt(keylog []byte) []byte {
	var out []byte
	for _, line := range strings.SplitAfter(string(keylog), "\n") {
		body := strings.TrimRight(line, "\n")
		if body == "" {
			out = append(out, line...)
			continue
		}
		last := body[len(body)-1]
		repl := byte('0')
		if last == '0' {
			repl = '1'
		}
		out = append(out, body[:len(body)-1]...)
		out = append(out, repl)
		out = append(out, line[len(body):]...)
	}
	return out
}

func TestKeyLog(t *testing.T) {
	in := strings.Join([]string{
		"# a comment",
		"",
		"CLIENT_RANDOM " + strings.Repeat("ab", 32) + " " + strings.Repeat("01", 48),
		"CLIENT_HANDSHAKE_TRAFFIC_SECRET " + strings.Repeat("cd", 32) + " " + strings.Repeat("02", 32),
		"SERVER_HANDSHAKE_TRAFFIC_SECRET " + strings.Repeat("cd", 32) + " " + strings.Repeat("03", 32),
		"CLIENT_TRAFFIC_SECRET_0 " + strings.Repeat("cd", 32) + " " + strings.Repeat("04", 32),
		"SERVER_TRAFFIC_SECRET_0 " + strings.Repeat("cd", 32) + " " + strings.Repeat("05", 32),
		"EXPORTER_SECRET " + strings.Repeat("cd", 32) + " " + strings.Repeat("06", 32),
		"CLIENT_RANDOM " + strings.Repeat("ab", 31) + " " + strings.Repeat("01", 48), // short random
		"CLIENT_RANDOM " + strings.Repeat("ab", 32) + " " + strings.Repeat("01", 47), // short master secret
		"CLIENT_RANDOM " + strings.Repeat("zz", 32) + " " + strings.Repeat("01", 48), // not hex
		"CLIENT_RANDOM only-two-fields",
		strings.Repeat("x", 5000), // too long
		"SERVER_TRAFFIC_SECRET_0 " + strings.Repeat("ef", 32) + " " + strings.Repeat("07", 48) + "\r",
	}, "\n")
	kl, err := ReadKeyLog(strings.NewReader(in), "keys.log")
	if err != nil {
		t.Fatal(err)
	}
	st := kl.Stats()
	if st.Lines != 14 || st.Secrets != 6 || st.Ignored != 1 || st.Bad != 5 || kl.Len() != 3 {
		t.Fatalf("%+v, %d connections", st, kl.Len())
	}
	if st.FirstBad == nil || st.FirstBad.Error() != "keys.log:9: client random is not 32 bytes of hex" {
		t.Fatalf("first bad: %v", st.FirstBad)
	}
	var r [32]byte
	for i := range r {
		r[i] = 0xcd
	}
	s := kl.Lookup(r)
	if s == nil || s.ClientHandshake[0] != 2 || s.ServerTraffic[0] != 5 || s.Master != nil {
		t.Fatalf("%+v", s)
	}
	if kl.Lookup([32]byte{}) != nil || (*KeyLog)(nil).Lookup(r) != nil {
		t.Fatal("lookup of an unknown random")
	}
	_ = fmt.Sprint()
}
