package tls

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
)

// serverRecorder records a server's connection: reads are the client's
// bytes, writes the server's.
type serverRecorder struct {
	net.Conn
	mu     sync.Mutex
	events []grpctest.Event
}

func (c *serverRecorder) add(dir proto.Dir, p []byte) {
	if len(p) > 0 {
		c.mu.Lock()
		c.events = append(c.events, grpctest.Event{Dir: dir, Data: append([]byte(nil), p...)})
		c.mu.Unlock()
	}
}

// clientRecords returns how many reads of the client's bytes there were.
func (c *serverRecorder) clientRecords() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.events {
		if e.Dir == proto.FromClient {
			n++
		}
	}
	return n
}

func (c *serverRecorder) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.add(proto.FromClient, p[:n])
	return n, err
}

func (c *serverRecorder) Write(p []byte) (int, error) {
	c.add(proto.FromServer, p)
	return c.Conn.Write(p)
}

// TestDecryptOpenSSL decrypts TLS 1.3 connections of OpenSSL's s_client
// to Go's server with the suites Go's client does not choose, and key
// updates ('k': the client's keys; 'K': both sides'), with the key log
// OpenSSL wrote.
func TestDecryptOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed (make deps installs it)")
	}
	cert, _ := testCert(t)
	tests := []struct {
		suite string
		id    uint16
		lines []string // what the client types: a line of k or K is a key update
	}{
		{"TLS_AES_256_GCM_SHA384", 0x1302, []string{"hello", "K", "after an update of both", "k", "after the client's"}},
		{"TLS_CHACHA20_POLY1305_SHA256", 0x1303, []string{"hello", "K", "world"}},
		{"TLS_AES_128_GCM_SHA256", 0x1301, []string{"one", "two"}},
	}
	for _, tt := range tests {
		t.Run(tt.suite, func(t *testing.T) {
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"x-echo"}})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln.Close()
			defer raw.Close()
			got := make(chan string, 16)
			recs := make(chan *serverRecorder, 1)
			var wrote [2]bytes.Buffer
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := raw.Accept()
				if err != nil {
					return
				}
				rec := &serverRecorder{Conn: c}
				recs <- rec
				tc := tls.Server(rec, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"x-echo"}})
				defer tc.Close()
				r := bufio.NewReader(tc)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					reply := strings.ToUpper(line)
					wrote[proto.FromServer].WriteString(reply)
					tc.Write([]byte(reply))
					got <- strings.TrimSpace(line)
				}
			}()
			dir := t.TempDir()
			keylog := filepath.Join(dir, "keys.log")
			cmd := exec.Command(openssl, "s_client", "-connect", raw.Addr().String(), "-servername", serverName,
				"-alpn", "x-echo", "-tls1_3", "-ciphersuites", tt.suite, "-keylogfile", keylog)
			stdin, err := cmd.StdinPipe()
			must(t, err)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			must(t, cmd.Start())
			defer cmd.Process.Kill()
			var rec *serverRecorder
			select {
			case rec = <-recs:
			case <-time.After(10 * time.Second):
				t.Fatal("s_client did not connect")
			}
			for _, l := range tt.lines {
				before := rec.clientRecords()
				io.WriteString(stdin, l+"\n")
				if l == "k" || l == "K" {
					// s_client drops what else it read with a command:
					// wait for the KeyUpdate before typing on.
					for deadline := time.Now().Add(10 * time.Second); rec.clientRecords() == before; time.Sleep(time.Millisecond) {
						if time.Now().After(deadline) {
							t.Fatal("no key update")
						}
					}
					continue
				}
				wrote[proto.FromClient].WriteString(l + "\n")
				select {
				case s := <-got:
					if s != l {
						t.Fatalf("server read %q, want %q", s, l)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("server never read %q", l)
				}
			}
			stdin.Close()
			cmd.Wait()
			<-done
			kb, err := os.ReadFile(keylog)
			must(t, err)
			rec.mu.Lock()
			events := rec.events
			rec.mu.Unlock()
			r := decode(t, readKeyLog(t, kb), events, 0)
			if r.info.Decrypt != Decrypting || r.info.CipherSuite != tt.id || r.info.SNI != serverName || r.info.ALPN != "x-echo" {
				t.Fatalf("%+v %+v", r.info, r.stats)
			}
			for d := range wrote {
				if !bytes.Equal(r.sink.buf[d].Bytes(), wrote[d].Bytes()) {
					t.Errorf("%s plaintext %q, application wrote %q", proto.Dir(d), r.sink.buf[d].Bytes(), wrote[d].Bytes())
				}
			}
			updates := int64(strings.Count(strings.Join(tt.lines, " "), "k") + 2*strings.Count(strings.Join(tt.lines, " "), "K"))
			if r.stats.KeyUpdates != updates || r.stats.Fallbacks != 0 {
				t.Errorf("%d key updates, want %d: %+v", r.stats.KeyUpdates, updates, r.stats)
			}
		})
	}
}
