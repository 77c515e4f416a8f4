// Command tbtruth builds the ground truth of a testbed run (testbed/README.md)
// from the services' own logs: the load generator's, nginx's access logs,
// the application's, tier2's and the backends'. It links each request's
// hops exactly, never by timing: the client's request to nginx by the
// client's per-request nonce, nginx's request to the application by
// nginx's per-hop nonce ($request_id, sent as X-Hop-Id), the application's
// and tier2's calls by their connection's endpoints and ordinal (and, over
// HTTP, the nonce they sent), and it checks that both ends of each hop
// agree. It writes the truth in the format of package causal/truth and
// exits with status 1 when a check failed.
//
//	tbtruth -config OUT/testbed.json -logs OUT/logs -sniffers OUT/sniffers.jsonl -o OUT/truth.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/causal/truth"
)

// config is testbed.json, written by testbed.sh.
type config struct {
	Variant       string            `json:"variant"`
	Tracing       string            `json:"tracing"`
	InFlight      int               `json:"inflight"`
	Requests      int               `json:"requests"`
	Seed          int64             `json:"seed"`
	WindowStartNS int64             `json:"window_start_ns"`
	WindowEndNS   int64             `json:"window_end_ns"`
	Tiers         map[string]string `json:"tiers"`
	Hosts         map[string]string `json:"hosts"`
}

// clientRec is a line of the load generator's log.
type clientRec struct {
	ID     int    `json:"id"`
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	Ord    int    `json:"ord"`
	SendNS int64  `json:"send_ns"`
	RecvNS int64  `json:"recv_ns"`
	Status int    `json:"status"`
	Hop    string `json:"hop"`
	Err    string `json:"err"`
}

// nginxRec is a line of nginx's access log (log_format tb in testbed.sh).
type nginxRec struct {
	RID      string `json:"rid"`
	Hop      string `json:"hop"`
	Remote   string `json:"remote"`
	Server   string `json:"server"`
	ConnReq  string `json:"conn_req"`
	URI      string `json:"uri"`
	Status   string `json:"status"`
	Upstream string `json:"upstream"`
	used     bool
}

// callRec is one call a service logged.
type callRec struct {
	Svc    string `json:"svc"`
	Op     string `json:"op"`
	Key    string `json:"key"`
	Proto  string `json:"proto"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	Ord    int    `json:"ord"`
	SendNS int64  `json:"send_ns"`
	RecvNS int64  `json:"recv_ns"`
	Hop    string `json:"hop"`
	Hit    *bool  `json:"hit"`
	// ROrd and Stream: a call multiplexed over HTTP/2 (tbtier -rpc grpc).
	ROrd   *int   `json:"rord"`
	Stream uint64 `json:"stream"`
}

// serverRec is a request a service served (t=req) or a background job (t=bg).
type serverRec struct {
	T      string    `json:"t"`
	Job    string    `json:"job"`
	Local  string    `json:"local"`
	Peer   string    `json:"peer"`
	Ord    int       `json:"ord"`
	RecvNS int64     `json:"recv_ns"`
	SendNS int64     `json:"send_ns"`
	Hop    string    `json:"hop"`
	Path   string    `json:"path"`
	Status int       `json:"status"`
	Calls  []callRec `json:"calls"`
	used   bool
}

func readLines[T any](path string) ([]*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		v := new(T)
		if err := json.Unmarshal(sc.Bytes(), v); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func main() {
	cfgPath := flag.String("config", "", "testbed.json of the run")
	logs := flag.String("logs", "", "directory of the services' logs")
	sniffers := flag.String("sniffers", "", "tbpcap's JSON lines about each capture (optional)")
	outPath := flag.String("o", "", "truth file to write")
	flag.Parse()
	if *cfgPath == "" || *logs == "" || *outPath == "" {
		log.Fatal("usage: tbtruth -config FILE -logs DIR [-sniffers FILE] -o FILE")
	}
	var cfg config
	b, err := os.ReadFile(*cfgPath)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		log.Fatalf("tbtruth: %s: %v", *cfgPath, err)
	}
	in, err := load(*logs)
	if err != nil {
		log.Fatalf("tbtruth: %v", err)
	}
	bd := newBuilder(&cfg)
	if *sniffers != "" {
		if err := bd.readSniffers(*sniffers); err != nil {
			log.Fatalf("tbtruth: %v", err)
		}
	}
	f := bd.build(in)
	if err := f.Check(); err != nil {
		log.Fatalf("tbtruth: the truth built is inconsistent: %v", err)
	}
	out, err := os.Create(*outPath)
	if err != nil {
		log.Fatal(err)
	}
	if err := truth.Write(out, f); err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}
	failed := 0
	for _, c := range f.Meta.Checks {
		if c.Failed > 0 {
			fmt.Fprintf(os.Stderr, "tbtruth: check %s failed %d times (held %d)\n", c.Name, c.Failed, c.Held)
			failed++
		}
	}
	fmt.Fprintf(os.Stderr, "tbtruth: %d requests (%d background), %d messages, %d connections, %d checks failed\n",
		countReq(f, false), countReq(f, true), len(f.Messages), len(f.Conns), failed)
	if failed > 0 {
		os.Exit(1)
	}
}

func countReq(f *truth.File, bg bool) int {
	n := 0
	for _, r := range f.Requests {
		if r.Background == bg {
			n++
		}
	}
	return n
}

// logsIn is every log of a run.
type logsIn struct {
	client   []*clientRec
	nginx    map[string]*nginxRec  // by the client's nonce
	app      map[string]*serverRec // requests, by nginx's nonce
	tier2    map[string]*serverRec // requests, by the application's nonce
	backends map[string]*serverRec // by tier2's nonce
	bg       []*serverRec          // the application's and tier2's background jobs
	dupHops  int
}

func load(dir string) (*logsIn, error) {
	in := &logsIn{nginx: map[string]*nginxRec{}, app: map[string]*serverRec{},
		tier2: map[string]*serverRec{}, backends: map[string]*serverRec{}}
	var err error
	if in.client, err = readLines[clientRec](filepath.Join(dir, "client.jsonl")); err != nil {
		return nil, err
	}
	for _, w := range []string{"web1", "web2"} {
		recs, err := readLines[nginxRec](filepath.Join(dir, w+".jsonl"))
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if _, dup := in.nginx[r.Hop]; dup || r.Hop == "" {
				in.dupHops++
			}
			in.nginx[r.Hop] = r
		}
	}
	servers := []struct {
		file string
		into map[string]*serverRec
	}{{"app", in.app}, {"tier2", in.tier2}, {"b1", in.backends}, {"b2", in.backends}, {"b3", in.backends}}
	for _, s := range servers {
		recs, err := readLines[serverRec](filepath.Join(dir, s.file+".jsonl"))
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			switch r.T {
			case "req":
				if _, dup := s.into[r.Hop]; dup || r.Hop == "" {
					in.dupHops++
				}
				s.into[r.Hop] = r
			case "bg":
				in.bg = append(in.bg, r)
			}
		}
	}
	return in, nil
}

func (b *builder) readSniffers(path string) error {
	recs, err := readLines[struct {
		Out       string  `json:"out"`
		OffsetNS  int64   `json:"offset_ns"`
		DriftPPM  float64 `json:"drift_ppm"`
		AnchorNS  int64   `json:"anchor_ns"`
		Loss      float64 `json:"loss"`
		PacketsIn int     `json:"packets_in"`
		Dropped   int     `json:"dropped"`
	}](path)
	if err != nil {
		return err
	}
	for _, r := range recs {
		s := truth.Sniffer{File: filepath.Base(r.Out), OffsetNS: r.OffsetNS, DriftPPM: r.DriftPPM,
			Loss: r.Loss, PacketsIn: r.PacketsIn, Dropped: r.Dropped}
		if r.DriftPPM != 0 {
			s.AnchorNS = r.AnchorNS
		}
		b.f.Meta.Sniffers = append(b.f.Meta.Sniffers, s)
	}
	return nil
}

// tier returns the tier of an endpoint: by address and port, else address.
func (b *builder) tier(ep string) string {
	if t, ok := b.cfg.Tiers[ep]; ok {
		return t
	}
	host, _, _ := net.SplitHostPort(ep)
	if t, ok := b.cfg.Tiers[host]; ok {
		return t
	}
	return "unknown"
}

func (b *builder) host(ep string) string {
	host, _, _ := net.SplitHostPort(ep)
	if h, ok := b.cfg.Hosts[host]; ok {
		return h
	}
	return host
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func sortedClient(in []*clientRec) []*clientRec {
	out := append([]*clientRec(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func label(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p != "" && strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
			parts[i] = "{n}"
		}
	}
	return method + " " + strings.Join(parts, "/")
}
