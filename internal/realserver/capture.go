package realserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Capture records the packets of interface iface that match the BPF
// filter into path with tcpdump (full snap length, written as they come),
// from when it returns until stop is called. It skips t unless running as
// root with tcpdump installed.
func Capture(t testing.TB, iface, filter, path string) (stop func()) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("capturing needs root")
	}
	bin := LookPath(t, []string{"tcpdump"})
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-i", iface, "-w", path, "-U", "--immediate-mode", "-s", "0", "-n", "-B", "8192", "-Z", "root", filter)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("tcpdump: %v", err)
	}
	// tcpdump says "listening on ..." once it captures.
	ready := make(chan error, 1)
	var msgs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			msgs.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "listening on") {
				ready <- nil
			}
		}
		ready <- fmt.Errorf("tcpdump exited: %s", msgs.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			cancel()
			t.Fatal(err)
		}
	case <-time.After(startTimeout):
		cancel()
		t.Fatal("tcpdump did not start")
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		// Let the last packets reach the capture buffer.
		time.Sleep(200 * time.Millisecond)
		cancel()
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// WriteCert writes cert's chain and key as PEM files in dir and returns
// their paths.
func WriteCert(t testing.TB, dir string, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, chain, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Nginx starts nginx on a free loopback port with TLS (TLS 1.2 and 1.3,
// ALPN h2 and http/1.1) using the certificate and key files, serving
// locations, the body of an nginx server block's location directives
// (e.g. `location / { return 200 "ok\n"; }`). It runs as root, in its
// own directory, in the foreground.
func Nginx(t testing.TB, certFile, keyFile, locations string) *Server {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("nginx as the test's child needs root")
	}
	bin := LookPath(t, []string{"nginx"}, "/usr/sbin")
	dir := t.TempDir()
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conf := fmt.Sprintf(`user root;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
	access_log %[1]s/access.log;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server {
		listen %[2]s ssl http2;
		ssl_certificate %[3]s;
		ssl_certificate_key %[4]s;
		ssl_protocols TLSv1.2 TLSv1.3;
		keepalive_requests 10000;
		%[5]s
	}
}
`, dir, addr, certFile, keyFile, locations)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return start(t, addr, dir, "", bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
}
