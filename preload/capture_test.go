package preload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// wpcapCFlags are the flags the Makefile builds the library with.
var wpcapCFlags = []string{"-Wall", "-Wextra", "-O2", "-fPIC", "-shared", "-U_FORTIFY_SOURCE"}

// buildLib compiles libwpcap into dir and fails on any compiler warning.
func buildLib(t testing.TB, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (make deps installs it)")
	}
	out := filepath.Join(dir, "libwpcap.so")
	args := append(append([]string{}, wpcapCFlags...), "-o", out, filepath.Join("libwpcap", "wpcap.c"), "-ldl", "-lpthread")
	cmd := exec.Command("gcc", args...)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, msg)
	}
	if len(bytes.TrimSpace(msg)) > 0 {
		t.Fatalf("libwpcap compiles with warnings:\n%s", msg)
	}
	return out
}

// buildProg compiles testdata/progs/<name>.c into dir.
func buildProg(t testing.TB, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	msg, err := exec.Command("gcc", "-Wall", "-Wextra", "-O2", "-o", out, filepath.Join("testdata", "progs", name+".c")).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(msg)) > 0 {
		t.Fatalf("building %s: %v\n%s", name, err, msg)
	}
	return out
}

func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sniffer runs tcpdump on the loopback interface.
type sniffer struct {
	cmd  *exec.Cmd
	path string
}

func startSniffer(t *testing.T, dir, filter string) *sniffer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: running without tcpdump, so without the capture comparison")
		return nil
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Log("tcpdump not installed (make deps installs it): running without the capture comparison")
		return nil
	}
	s := &sniffer{path: filepath.Join(dir, "lo.pcap")}
	s.cmd = exec.Command("tcpdump", "-i", "lo", "-n", "-U", "--immediate-mode", "-B", "65536", "-s", "0", "-Z", "root", "-w", s.path, filter)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all strings.Builder
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "listening on") {
				ready <- ""
			}
		}
		ready <- all.String()
	}()
	select {
	case msg := <-ready:
		if msg != "" {
			t.Fatalf("tcpdump did not start:\n%s", msg)
		}
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		t.Fatal("tcpdump did not start within 10 s")
	}
	t.Cleanup(s.kill)
	return s
}

// stop sends a marker datagram to udpPort (which the filter captures) and
// stops tcpdump once the marker is in the file, so that no packet sent
// before it is lost in tcpdump's buffers.
func (s *sniffer) stop(t *testing.T, udpPort int) {
	if s == nil || s.cmd.ProcessState != nil {
		return
	}
	marker := []byte("wirepath-capture-end-marker")
	c, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", udpPort))
	if err == nil {
		c.Write(marker)
		c.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if data, _ := os.ReadFile(s.path); bytes.Contains(data, marker) {
			break
		}
	}
	s.kill()
}

func (s *sniffer) kill() {
	if s == nil || s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// wire is what the capture says: payload bytes per direction of each TCP
// 4-tuple (each sequence range counted once) and the UDP datagrams.
type wire struct {
	tcp   map[[2]string]int64
	dgram map[[2]string][]dgram
}

type dgram struct {
	n   int
	sum uint32
}

func readPcap(t *testing.T, path string) *wire {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{tcp: map[[2]string]int64{}, dgram: map[[2]string][]dgram{}}
	seen := map[string]bool{}
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		p := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		ip, ok := p.NetworkLayer().(*layers.IPv4)
		if !ok {
			continue
		}
		switch l := p.TransportLayer().(type) {
		case *layers.TCP:
			k := [2]string{fmt.Sprintf("%s:%d", ip.SrcIP, l.SrcPort), fmt.Sprintf("%s:%d", ip.DstIP, l.DstPort)}
			if len(l.Payload) == 0 {
				continue
			}
			id := fmt.Sprint(k, l.Seq, len(l.Payload))
			if seen[id] {
				continue // a retransmission
			}
			seen[id] = true
			w.tcp[k] += int64(len(l.Payload))
		case *layers.UDP:
			k := [2]string{fmt.Sprintf("%s:%d", ip.SrcIP, l.SrcPort), fmt.Sprintf("%s:%d", ip.DstIP, l.DstPort)}
			if string(l.Payload) == "wirepath-capture-end-marker" {
				continue
			}
			w.dgram[k] = append(w.dgram[k], dgram{len(l.Payload), crc32.ChecksumIEEE(l.Payload)})
		}
	}
	return w
}

// proc is a program running under the library.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	sc    *bufio.Scanner
	lines [][]string
	err   bytes.Buffer
}

func start(t *testing.T, lib, logDir, name string, args ...string) *proc {
	t.Helper()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: exec.Command(name, args...)}
	p.cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "WIREPATH_PRELOAD_DIR="+logDir, "WIREPATH_PRELOAD_HOST=testhost")
	p.cmd.Stderr = &p.err
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	p.sc = bufio.NewScanner(out)
	return p
}

// next returns the next line of output, as fields.
func (p *proc) next() []string {
	for p.sc.Scan() {
		if f := strings.Fields(p.sc.Text()); len(f) > 0 {
			p.lines = append(p.lines, f)
			return f
		}
	}
	return nil
}

// wait reads the rest of the output and waits for the program to exit.
func (p *proc) wait() [][]string {
	for p.next() != nil {
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("%s: %v\n%s", p.cmd.Path, err, p.err.Bytes())
	}
	return p.lines
}

// run runs a program under the library with its logs in logDir and
// returns its stdout as lines of fields.
func run(t *testing.T, lib, logDir string, name string, args ...string) [][]string {
	t.Helper()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "WIREPATH_PRELOAD_DIR="+logDir, "WIREPATH_PRELOAD_HOST=testhost")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.Bytes())
	}
	var lines [][]string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines = append(lines, f)
		}
	}
	return lines
}

func field(t *testing.T, lines [][]string, key string, i int) int64 {
	t.Helper()
	for _, l := range lines {
		if l[0] == key && len(l) > i {
			v, err := strconv.ParseInt(l[i], 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			return v
		}
	}
	t.Fatalf("no %q line in %q", key, lines)
	return 0
}

func loadDir(t *testing.T, dir string) *Table {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no traces in %s", dir)
	}
	tab, err := ReadFiles(Options{Strict: true}, paths...)
	if err != nil {
		t.Fatal(err)
	}
	c := tab.Counters
	if sum := c.DataCalls + c.FailedCalls + c.EmptyCalls + c.PeekCalls + c.SocketCalls + c.ProcessCalls + c.UnknownCalls; sum != c.Records {
		t.Errorf("accounting: %d records, %d counted: %+v", c.Records, sum, c)
	}
	if c.UnknownCalls != 0 || c.Unattributed != 0 || c.WriteErrors != 0 || c.LostRecords != 0 {
		t.Errorf("accounting: %+v", c)
	}
	return tab
}

// conns returns the connections of the process with pid (any pid when
// pid is 0 and name matches) that satisfy keep.
func conns(tab *Table, keep func(*Conn) bool) []*Conn {
	var out []*Conn
	for _, c := range tab.Conns {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func one(t *testing.T, what string, cs []*Conn) *Conn {
	t.Helper()
	if len(cs) != 1 {
		for _, c := range cs {
			t.Logf("  %+v", *c)
		}
		t.Fatalf("%s: %d connections, want 1", what, len(cs))
	}
	return cs[0]
}

// TestCaptureLibrary runs real programs under libwpcap while tcpdump
// captures the loopback interface, and checks the traces against what the
// programs say they sent and against the capture.
func TestCaptureLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs programs")
	}
	dir := t.TempDir()
	lib := buildLib(t, dir)
	progs := map[string]string{}
	binDir := filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	for _, p := range []string{"httpsrv", "udpx", "unixsock", "nonblock", "threads"} {
		progs[p] = buildProg(t, binDir, p)
	}
	httpPort, nbPort, udpPort, pyPort := freePort(t, "tcp"), freePort(t, "tcp"), freePort(t, "udp"), freePort(t, "tcp")
	sn := startSniffer(t, dir, fmt.Sprintf("tcp port %d or tcp port %d or udp port %d or tcp port %d", httpPort, nbPort, udpPort, pyPort))

	// HTTP: curl against the forking server, both traced.
	var curlOut []string
	var srvLines [][]string
	httpDir := filepath.Join(dir, "http")
	if _, err := exec.LookPath("curl"); err != nil {
		t.Log("curl not installed (make deps installs it): skipping the HTTP case")
	} else {
		srv := start(t, lib, httpDir, progs["httpsrv"], strconv.Itoa(httpPort), "1", "20000")
		if l := srv.next(); len(l) != 2 || l[0] != "listening" {
			t.Fatalf("httpsrv said %q", l)
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/index.html", httpPort)
		// Through sh's exec, so that the trace shows an exec.
		lines := run(t, lib, httpDir, "sh", "-c", "exec curl -s -o /dev/null -w '%{size_request} %{size_header} %{size_download} %{local_port}' "+url)
		curlOut = lines[0]
		srvLines = srv.wait()
	}

	// Python's threaded http.server, a real server program, if there is one.
	pyDir := filepath.Join(dir, "python")
	var pyCurl []string
	if py, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 not installed: skipping the http.server case")
	} else if _, err := exec.LookPath("curl"); err == nil {
		www := filepath.Join(dir, "www")
		os.Mkdir(www, 0o755)
		os.WriteFile(filepath.Join(www, "page.txt"), bytes.Repeat([]byte("wirepath\n"), 3000), 0o644)
		srv := start(t, lib, pyDir, py, "-m", "http.server", strconv.Itoa(pyPort), "--bind", "127.0.0.1", "--directory", www)
		url := fmt.Sprintf("http://127.0.0.1:%d/page.txt", pyPort)
		for i := 0; i < 100 && pyCurl == nil; i++ { // until it listens; refused tries are not traced as connections
			cmd := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{size_request} %{size_header} %{size_download} %{local_port}", url)
			if out, err := cmd.Output(); err == nil {
				pyCurl = strings.Fields(string(out))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		srv.cmd.Process.Signal(os.Interrupt) // KeyboardInterrupt: Python exits normally and the library flushes
		srv.cmd.Wait()
		if pyCurl == nil {
			t.Fatalf("python3 http.server never answered: %s", srv.err.Bytes())
		}
	}

	udpDir := filepath.Join(dir, "udp")
	udpLines := run(t, lib, udpDir, progs["udpx"], strconv.Itoa(udpPort), "12")
	unixDir := filepath.Join(dir, "unix")
	unixLines := run(t, lib, unixDir, progs["unixsock"], filepath.Join(dir, "u.sock"))
	nbDir := filepath.Join(dir, "nonblock")
	nbLines := run(t, lib, nbDir, progs["nonblock"], strconv.Itoa(nbPort), "1000000")
	thDir := filepath.Join(dir, "threads")
	thLines := run(t, lib, thDir, progs["threads"], "8", "3000")
	sn.stop(t, udpPort)
	var w *wire
	if sn != nil {
		w = readPcap(t, sn.path)
	}

	if curlOut != nil {
		t.Run("http", func(t *testing.T) {
			tab := loadDir(t, httpDir)
			req, _ := strconv.ParseInt(curlOut[0], 10, 64)
			hdr, _ := strconv.ParseInt(curlOut[1], 10, 64)
			body, _ := strconv.ParseInt(curlOut[2], 10, 64)
			srv := fmt.Sprintf("127.0.0.1:%d", httpPort)
			cli := "127.0.0.1:" + curlOut[3]
			child := field(t, srvLines, "conn", 7)
			if field(t, srvLines, "conn", 3) != req || field(t, srvLines, "conn", 5) != hdr+body {
				t.Fatalf("server and curl disagree: %q vs %q", srvLines, curlOut)
			}
			c := one(t, "curl's connection", conns(tab, func(c *Conn) bool { return c.Process == "curl" && c.Sock == SockTCP }))
			if c.Origin != OriginConnect || c.Local != cli || c.Remote != srv || c.SentBytes != req || c.RecvBytes != hdr+body {
				t.Errorf("curl: %+v; want %s -> %s sent %d received %d", *c, cli, srv, req, hdr+body)
			}
			s := one(t, "server child's connection", conns(tab, func(c *Conn) bool { return c.PID == int(child) && c.Sock == SockTCP }))
			if s.Origin != OriginInherited || s.Local != srv || s.Remote != cli || s.RecvBytes != req || s.SentBytes != hdr+body || !s.ShutWrite {
				t.Errorf("server child: %+v", *s)
			}
			// The header went out in one writev; the body in sends of at most 4000 bytes.
			// The request came with readv; the header went out in one
			// writev, the body's first half in sends of at most 4000 bytes
			// and the rest with sendfile.
			if len(s.Msgs) < 3 || s.Msgs[0].Call != CallReadv || s.Msgs[1].Call != CallWritev || s.Msgs[1].Bytes != hdr || s.Msgs[1].Offset != 0 || s.Msgs[2].Offset != hdr {
				t.Errorf("server child messages: %+v", s.Msgs)
			}
			var sf int64
			for _, m := range s.Msgs {
				if m.Call == CallSendfile {
					sf += m.Bytes
				}
			}
			if sf != body-body/2 {
				t.Errorf("sendfile moved %d bytes, want %d", sf, body-body/2)
			}
			if p := tab.Process(ProcKey{"testhost", c.PID}); p == nil || len(p.Execs) != 1 || !strings.HasSuffix(p.Execs[0], "curl") || p.Name != "curl" {
				t.Errorf("curl's process (started by sh's exec): %+v", p)
			}
			acc := conns(tab, func(c *Conn) bool { return c.Origin == OriginAccept })
			if a := one(t, "accepted", acc); a.Local != srv || a.Remote != cli || a.PID == int(child) {
				t.Errorf("accept: %+v", *a)
			}
			parent := tab.Process(ProcKey{"testhost", acc[0].PID})
			if parent == nil || len(parent.Children) != 1 || parent.Children[0] != int(child) {
				t.Errorf("server parent's forks: %+v", parent)
			}
			if w != nil {
				if got := w.tcp[[2]string{cli, srv}]; got != req {
					t.Errorf("capture: %d bytes %s -> %s, trace %d", got, cli, srv, req)
				}
				if got := w.tcp[[2]string{srv, cli}]; got != hdr+body {
					t.Errorf("capture: %d bytes %s -> %s, trace %d", got, srv, cli, hdr+body)
				}
			}
		})
	}

	if pyCurl != nil {
		t.Run("python-http.server", func(t *testing.T) {
			tab := loadDir(t, pyDir)
			req, _ := strconv.ParseInt(pyCurl[0], 10, 64)
			resp := field(t, [][]string{{"x", pyCurl[1]}}, "x", 1)
			body, _ := strconv.ParseInt(pyCurl[2], 10, 64)
			srv := fmt.Sprintf("127.0.0.1:%d", pyPort)
			cli := "127.0.0.1:" + pyCurl[3]
			c := one(t, "accepted by python", conns(tab, func(c *Conn) bool { return c.Origin == OriginAccept && c.Remote == cli }))
			if c.Process != "python3" || c.Local != srv || c.RecvBytes != req || c.SentBytes != resp+body || body != 27000 {
				t.Errorf("python: %+v; want %d bytes in, %d out", *c, req, resp+body)
			}
			if w != nil {
				if got := w.tcp[[2]string{srv, cli}]; got != c.SentBytes {
					t.Errorf("capture: %d bytes %s -> %s, trace %d", got, srv, cli, c.SentBytes)
				}
				if got := w.tcp[[2]string{cli, srv}]; got != c.RecvBytes {
					t.Errorf("capture: %d bytes %s -> %s, trace %d", got, cli, srv, c.RecvBytes)
				}
			}
		})
	}

	t.Run("udp", func(t *testing.T) {
		tab := loadDir(t, udpDir)
		srv := fmt.Sprintf("127.0.0.1:%d", udpPort)
		cli := fmt.Sprintf("127.0.0.1:%d", field(t, udpLines, "client", 1))
		var want []dgram
		for _, l := range udpLines {
			if l[0] == "dgram" {
				n, _ := strconv.Atoi(l[2])
				s, _ := strconv.ParseUint(l[3], 16, 32)
				want = append(want, dgram{n, uint32(s)})
			}
		}
		check := func(who string, c *Conn, dir Dir, peer string) {
			var got []dgram
			for _, m := range c.Msgs {
				if m.Dir != dir {
					continue
				}
				if m.Peer != peer || !m.HasSum {
					t.Errorf("%s: message %+v, want peer %s and a checksum", who, m, peer)
				}
				got = append(got, dgram{int(m.Bytes), m.Sum})
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s %v datagrams:\n got %v\nwant %v", who, dir, got, want)
			}
		}
		cl := one(t, "client socket", conns(tab, func(c *Conn) bool { return c.Sock == SockUDP && c.Local != srv }))
		sv := one(t, "server socket", conns(tab, func(c *Conn) bool { return c.Sock == SockUDP && c.Local == srv }))
		check("client", cl, DirSend, srv)
		check("client", cl, DirRecv, srv)
		check("server", sv, DirRecv, cli)
		check("server", sv, DirSend, cli)
		if w != nil {
			if got := w.dgram[[2]string{cli, srv}]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("capture %s -> %s: %v, want %v", cli, srv, got, want)
			}
			if got := w.dgram[[2]string{srv, cli}]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("capture %s -> %s: %v, want %v", srv, cli, got, want)
			}
		}
	})

	t.Run("unix", func(t *testing.T) {
		tab := loadDir(t, unixDir)
		parent := int(field(t, unixLines, "pair-parent", 1))
		child := int(field(t, unixLines, "pair-child", 1))
		client := int(field(t, unixLines, "path-client", 1))
		path := "unix:" + filepath.Join(dir, "u.sock")
		pc := conns(tab, func(c *Conn) bool { return c.PID == parent && c.Origin == OriginSocketpair })
		if len(pc) != 2 || pc[0].SentBytes != 60 || pc[0].RecvBytes != 15 || pc[0].SentMsgs != 5 {
			t.Errorf("socketpair in the parent: %+v", pc)
		}
		cc := one(t, "socketpair in the child", conns(tab, func(c *Conn) bool { return c.PID == child && c.Sock == SockUnixStream }))
		if cc.Origin != OriginInherited || cc.SentBytes != 15 || cc.RecvBytes != 60 || cc.PeerPID != parent {
			t.Errorf("socketpair in the child: %+v", *cc)
		}
		sc := one(t, "accepted unix", conns(tab, func(c *Conn) bool { return c.PID == parent && c.Origin == OriginAccept }))
		if sc.Local != path || sc.PeerPID != client || sc.RecvBytes != 100 || sc.SentBytes != 50 {
			t.Errorf("server side: %+v (want local %s, peer pid %d)", *sc, path, client)
		}
		cl := one(t, "connecting unix", conns(tab, func(c *Conn) bool { return c.PID == client && c.Sock == SockUnixStream }))
		if cl.Origin != OriginConnect || cl.Remote != path || cl.PeerPID != parent || cl.SentBytes != 100 || cl.RecvBytes != 50 {
			t.Errorf("client side: %+v", *cl)
		}
		lst := one(t, "listening unix", conns(tab, func(c *Conn) bool { return c.Listening && c.Sock == SockUnixStream }))
		if lst.Local != path {
			t.Errorf("listener: %+v", *lst)
		}
	})

	t.Run("nonblocking", func(t *testing.T) {
		tab := loadDir(t, nbDir)
		sent := field(t, nbLines, "sent", 1)
		calls, eagain := field(t, nbLines, "sent", 3), field(t, nbLines, "sent", 5)
		srv := fmt.Sprintf("127.0.0.1:%d", nbPort)
		c := one(t, "client", conns(tab, func(c *Conn) bool { return c.Origin == OriginConnect }))
		if c.SentBytes != sent || int64(c.SentMsgs) != calls-eagain || c.Remote != srv {
			t.Errorf("client: sent %d in %d messages to %s; want %d in %d (%d calls, %d EAGAIN)", c.SentBytes, c.SentMsgs, c.Remote, sent, calls-eagain, calls, eagain)
		}
		if tab.Counters.EAGAINSkipped < eagain {
			t.Errorf("EAGAIN skipped %d, the program saw %d", tab.Counters.EAGAINSkipped, eagain)
		}
		s := one(t, "server", conns(tab, func(c *Conn) bool { return c.Origin == OriginAccept }))
		if s.RecvBytes != field(t, nbLines, "received", 1) || s.RecvBytes != sent {
			t.Errorf("server received %d, want %d", s.RecvBytes, sent)
		}
		if w != nil {
			if got := w.tcp[[2]string{c.Local, srv}]; got != sent {
				t.Errorf("capture: %d bytes, trace %d", got, sent)
			}
			if len(w.tcp) != 0 && tuples(w, nbPort) != 1 {
				t.Errorf("capture: %d connections on port %d", tuples(w, nbPort), nbPort)
			}
		}
	})

	t.Run("threads", func(t *testing.T) {
		tab := loadDir(t, thDir) // strict: a torn or interleaved line fails here
		want := field(t, thLines, "bytes", 1)
		var main, child *Process
		for _, p := range tab.Processes() {
			if p.PPID != 0 && len(p.Children) == 0 && p.Records < 100 {
				child = p
			} else {
				main = p
			}
		}
		if main == nil || child == nil || len(main.Children) != 1 || main.Children[0] != child.PID {
			t.Fatalf("processes: %+v", tab.Processes())
		}
		var sent, recv int64
		tids := map[int]bool{}
		for _, c := range main.Conns {
			sent += c.SentBytes
			recv += c.RecvBytes
			for _, m := range c.Msgs {
				tids[m.TID] = true
			}
		}
		if sent != want || recv != want || len(tids) != 8 {
			t.Errorf("threads: sent %d received %d by %d threads; want %d by 8", sent, recv, len(tids), want)
		}
		if len(child.Conns) != 2 || child.Conns[0].SentBytes != 5 || child.Conns[1].RecvBytes != 5 {
			t.Errorf("forked child: %+v", child.Conns)
		}
	})
}

func tuples(w *wire, port int) int {
	n := 0
	p := ":" + strconv.Itoa(port)
	for k := range w.tcp {
		if strings.HasSuffix(k[1], p) {
			n++
		}
	}
	return n
}
