package reconcile_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// The evidence system (testdata/evidence/make.sh): curl → nginx (web,
// traced) → nginx (app) over a keep-alive upstream pool, one sniffer on
// the web host; every request carries X-Request-ID, traceparent and
// secrets.

const (
	evWebEP = "10.40.0.10:80"
	evAppEP = "10.40.0.20:8080"
)

// evRequest is one request of truth.txt.
type evRequest struct {
	n                     int
	method, path          string
	traceID, xrid, secret string
}

type evTruth struct {
	reqs    []evRequest
	secrets []string
}

func readEvTruth(t *testing.T, dir string) *evTruth {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "truth.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := &evTruth{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		switch {
		case len(w) == 7 && w[0] == "req":
			n, _ := strconv.Atoi(w[1])
			tr.reqs = append(tr.reqs, evRequest{n: n, method: w[2], path: w[3], traceID: w[4], xrid: w[5], secret: w[6]})
		case len(w) == 2 && w[0] == "secret":
			tr.secrets = append(tr.secrets, w[1])
		}
	}
	if len(tr.reqs) == 0 || len(tr.secrets) <= len(tr.reqs) {
		t.Fatalf("truth.txt: incomplete: %+v", tr)
	}
	return tr
}

func TestEvidenceSystem(t *testing.T) {
	checkEvidenceSystem(t, filepath.Join("testdata", "evidence"))
}

// TestEvidenceSystemFresh runs the evidence system again on this machine
// (as root, with the tools) and checks it the same way.
func TestEvidenceSystemFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the evidence system")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot create network namespaces")
	}
	for _, tool := range []string{"ip", "nginx", "curl", "tcpdump", "gcc", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("testdata/evidence/make.sh", dir).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "Operation not permitted") {
			t.Skipf("cannot create network namespaces here:\n%s", out)
		}
		t.Fatalf("make.sh: %v\n%s", err, out)
	}
	checkEvidenceSystem(t, dir)
}

// checkEvidenceSystem reconciles a run of the evidence system and checks
// each request's messages: the nginx worker's thread wrote or read every
// message at the web host, each client connection has a number of its own
// and the upstream pool's connection one more, and no secret a request
// carried is anywhere in the trace, in either format.
func checkEvidenceSystem(t *testing.T, dir string) {
	truth := readEvTruth(t, dir)
	cfg := pipeline.Config{
		Captures: []string{filepath.Join(dir, "http.pcap")},
		Preload:  []string{filepath.Join(dir, "traces")},
	}
	cfg.Reconcile.Naming = reconcile.NameProcess
	res, err := pipeline.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Report.Check(); err != nil {
		t.Fatal(err)
	}
	tr := res.Trace
	worker := evWorker(t, res.Preload)
	var calls, returns, upCalls, upReturns []*trace.Message
	for i := range tr.Messages {
		m := &tr.Messages[i]
		switch src, dst := tr.Str(m.Src), tr.Str(m.Dst); {
		case dst == evWebEP:
			calls = append(calls, m)
		case src == evWebEP:
			returns = append(returns, m)
		case dst == evAppEP:
			upCalls = append(upCalls, m)
		case src == evAppEP:
			upReturns = append(upReturns, m)
		}
	}
	n := len(truth.reqs)
	if len(calls) != n || len(returns) != n || len(upCalls) != n || len(upReturns) != n {
		t.Fatalf("%d calls, %d returns, %d upstream calls, %d upstream returns; want %d of each", len(calls), len(returns), len(upCalls), len(upReturns), n)
	}
	conns := map[uint32]bool{}
	for i := range truth.reqs {
		c, r, uc, ur := calls[i], returns[i], upCalls[i], upReturns[i]
		if c.Receiver != worker || r.Sender != worker || uc.Sender != worker || ur.Receiver != worker {
			t.Errorf("request %d: the worker's threads %v %v %v %v, want %v", i+1, c.Receiver, r.Sender, uc.Sender, ur.Receiver, worker)
		}
		if c.Sender.Known() || r.Receiver.Known() || uc.Receiver.Known() || ur.Sender.Known() {
			t.Errorf("request %d: a task for an untraced end: %v %v %v %v", i+1, c.Sender, r.Receiver, uc.Receiver, ur.Sender)
		}
		if c.Conn != r.Conn || uc.Conn != ur.Conn || uc.Conn != upCalls[0].Conn || conns[c.Conn] && i > 0 || c.Conn == uc.Conn {
			t.Errorf("request %d: connections %d/%d upstream %d/%d", i+1, c.Conn, r.Conn, uc.Conn, ur.Conn)
		}
		conns[c.Conn] = true
	}
	for _, f := range []trace.Format{trace.FormatTSV, trace.FormatJSONL} {
		var buf bytes.Buffer
		if err := trace.Write(&buf, tr, f); err != nil {
			t.Fatal(err)
		}
		for _, s := range truth.secrets {
			if bytes.Contains(buf.Bytes(), []byte(s)) {
				t.Errorf("%v trace holds the secret %q", f, s)
			}
		}
	}
}

// evWorker returns the nginx worker's task: the traced nginx process
// that accepted connections (one thread).
func evWorker(t *testing.T, tab *preload.Table) trace.Task {
	t.Helper()
	for _, c := range tab.Conns {
		if c.Origin == preload.OriginAccept && c.Sock == preload.SockTCP {
			return trace.Task{PID: int32(c.PID), TID: int32(c.PID)}
		}
	}
	t.Fatal("no traced process accepted a TCP connection")
	return trace.Task{}
}
