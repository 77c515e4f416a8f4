package flows

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// The ground truth written by testdata/capture while it made the captures:
// what each program sent and when.
type gtWrite struct {
	Bytes   int64 `json:"bytes"`
	Writes  int32 `json:"writes"`
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
}

type gtExchange struct {
	App          string  `json:"app"`
	Proto        string  `json:"proto"`
	Client       string  `json:"client"`
	Server       string  `json:"server"`
	What         string  `json:"what"`
	Call         gtWrite `json:"call"`
	Return       gtWrite `json:"return"`
	SentByClient bool    `json:"sent_by_client"`
}

func loadTruth(t *testing.T, dir string) []gtExchange {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "loopback.truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gt struct {
		Exchanges []gtExchange `json:"exchanges"`
	}
	if err := json.Unmarshal(b, &gt); err != nil {
		t.Fatal(err)
	}
	return gt.Exchanges
}

// readCaptures runs pcapio and flows over the named captures.
func readCaptures(t *testing.T, cfg Config, paths ...string) ([]*Message, *Stats) {
	t.Helper()
	m, err := pcapio.Open(paths, pcapio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := NewReader(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, r)
	if p := m.Problems(); len(p) > 0 {
		t.Fatalf("pcapio problems: %v", p)
	}
	if err := r.Stats().Check(); err != nil {
		t.Fatal(err)
	}
	return msgs, r.Stats()
}

// byConn groups messages by connection in emission order.
func byConn(msgs []*Message) map[string][]*Message {
	out := map[string][]*Message{}
	for _, m := range msgs {
		k := m.Src.String() + "|" + m.Dst.String()
		if p := m.Src.Port(); p == 8080 || p == 53 || p == 9000 {
			k = m.Dst.String() + "|" + m.Src.String()
		}
		out[k] = append(out[k], m)
	}
	return out
}

// slack allows for the kernel stamping a packet a little after the
// sender's clock read before the write returned.
const slack = int64(2e6)

// TestRealCaptureAgainstGroundTruth checks the messages flows finds in a
// tcpdump capture of curl, a DNS client and a plain TCP client against
// what those programs logged they sent: sizes, writes, kinds, call pairing
// and the times of the first and last bytes.
func TestRealCaptureAgainstGroundTruth(t *testing.T) {
	checkAgainstTruth(t, "testdata")
}

// TestFreshCaptureAgainstGroundTruth makes the captures again on this
// machine (testdata/make-captures.sh: a network namespace, tcpdump,
// dumpcap, curl) and runs the same checks on them.
func TestFreshCaptureAgainstGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("makes captures with real tools (about 10 s)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace and capture")
	}
	for _, tool := range []string{"tcpdump", "dumpcap", "curl", "ip", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make deps installs it)", tool)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("testdata/make-captures.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("make-captures.sh: %v\n%s", err, out)
	}
	checkAgainstTruth(t, dir)
	checkSnapLenAndTwoSniffers(t, dir)
}

func checkAgainstTruth(t *testing.T, dir string) {
	gt := loadTruth(t, dir)
	for _, pause := range []bool{true, false} {
		cfg := DefaultConfig()
		if !pause {
			cfg.SplitPause = 0
		}
		msgs, st := readCaptures(t, cfg, filepath.Join(dir, "loopback.pcap"))
		conns := byConn(msgs)
		used := 0
		next := map[string]int{}
		for _, e := range gt {
			key := e.Client + "|" + e.Server
			cm := conns[key]
			i := next[key]
			if i+1 >= len(cm) {
				t.Fatalf("%s %s: messages missing (%d)", key, e.What, len(cm))
			}
			call, ret := cm[i], cm[i+1]
			if pause && e.App == "none" && e.Call.Writes == 2 {
				// The client paused 800 ms between its two writes: the
				// default split pause (500 ms) cuts the call in two, each
				// a CALL; the return answers the latest.
				if call.Bytes+ret.Bytes != e.Call.Bytes || call.Kind != trace.KindCall || call.End != EndPause {
					t.Errorf("%s: paused call cut as %d+%d bytes (%v)", e.What, call.Bytes, ret.Bytes, call.End)
				}
				i++
				used++
				call, ret = cm[i], cm[i+1]
				e.Call.Bytes -= cm[i-1].Bytes
				e.Call.Writes = 1
				e.Call.StartNS = 0 // the truth has no time for the second write alone
			}
			next[key] = i + 2
			used += 2
			wantApp := map[string]App{"http": AppHTTP, "dns": AppDNS, "none": AppNone}[e.App]
			if call.Kind != trace.KindCall || ret.Kind != trace.KindReturn || ret.Call != call.Call || call.App != wantApp || ret.App != wantApp {
				t.Errorf("%s: call %v/%v/%v, return %v/%v/%v", e.What, call.Kind, call.Call, call.App, ret.Kind, ret.Call, ret.App)
			}
			if call.Bytes != e.Call.Bytes || ret.Bytes != e.Return.Bytes || call.Incomplete || ret.Incomplete {
				t.Errorf("%s: %d/%d bytes, truth %d/%d", e.What, call.Bytes, ret.Bytes, e.Call.Bytes, e.Return.Bytes)
			}
			// PSH marks the end of a write, but the kernel also sets it
			// whenever it empties its send queue: a large write shows
			// several. So Writes is at least the writes made.
			if ret.Writes < e.Return.Writes || (ret.Segments == 1 && ret.Writes != 1) {
				t.Errorf("%s: return in %d writes (%d segments), truth %d", e.What, ret.Writes, ret.Segments, e.Return.Writes)
			}
			// Times: the return's first byte left while the server was
			// writing; the call's last byte arrived before the server had
			// read it all; for our own clients, the call left while they
			// were writing.
			rs, rr := int64(ret.SendTS()), int64(ret.RecvTS())
			if e.Return.StartNS != 0 && (rs < e.Return.StartNS-slack || rs > e.Return.EndNS+slack) {
				t.Errorf("%s: return sent at %d, outside the write [%d, %d]", e.What, rs, e.Return.StartNS, e.Return.EndNS)
			}
			if rr < rs || (e.SentByClient && rr > e.Return.EndNS) {
				// (Our clients log when their read returned; the HTTP
				// server logs when its write returned, which can be
				// before the last segment left.)
				t.Errorf("%s: return received at %d, sent at %d, read at %d", e.What, rr, rs, e.Return.EndNS)
			}
			cs, cr := int64(call.SendTS()), int64(call.RecvTS())
			if cr > e.Call.EndNS+slack && !e.SentByClient {
				t.Errorf("%s: call received at %d, after the server read it at %d", e.What, cr, e.Call.EndNS)
			}
			if e.SentByClient && e.Call.StartNS != 0 && (cs < e.Call.StartNS-slack || cs > e.Call.EndNS+slack) {
				t.Errorf("%s: call sent at %d, outside the write [%d, %d]", e.What, cs, e.Call.StartNS, e.Call.EndNS)
			}
		}
		if used != len(msgs) {
			t.Errorf("pause %v: %d messages, the ground truth accounts for %d", pause, len(msgs), used)
		}
		if st.RetransSegments != 0 || st.GapBytes != 0 || st.ConnsFIN != 8 {
			t.Errorf("stats %+v", *st)
		}
	}
}

// TestRealCaptureSnapLenAndTwoSniffers reads the same traffic captured by
// dumpcap with a 160-byte snap length, alone and merged with the full
// tcpdump capture: the messages are the same (sizes come from the
// headers), the cut bytes are counted, and merged, every message has a
// sighting from each sniffer.
func TestRealCaptureSnapLenAndTwoSniffers(t *testing.T) {
	checkSnapLenAndTwoSniffers(t, "testdata")
}

func checkSnapLenAndTwoSniffers(t *testing.T, dir string) {
	fullPath, snapPath := filepath.Join(dir, "loopback.pcap"), filepath.Join(dir, "loopback-snap160.pcapng")
	full, _ := readCaptures(t, DefaultConfig(), fullPath)
	snap, st := readCaptures(t, DefaultConfig(), snapPath)
	both, st2 := readCaptures(t, DefaultConfig(), fullPath, snapPath)
	if len(snap) != len(full) || len(both) != len(full) {
		t.Fatalf("%d messages truncated, %d merged, %d full", len(snap), len(both), len(full))
	}
	truncated := 0
	for i, f := range full {
		s, b := snap[i], both[i]
		if s.Src != f.Src || s.Dst != f.Dst || s.Bytes != f.Bytes || s.Kind != f.Kind || s.Call != f.Call {
			t.Errorf("message %d: truncated capture %v %v %d %v %v, full %v %v %d %v %v", i,
				s.Src, s.Dst, s.Bytes, s.Kind, s.Call, f.Src, f.Dst, f.Bytes, f.Kind, f.Call)
		}
		if s.TruncBytes > 0 {
			truncated++
		}
		if s.Incomplete != (s.TruncBytes > 0) {
			t.Errorf("message %d: incomplete %v with %d bytes cut", i, s.Incomplete, s.TruncBytes)
		}
		if b.Bytes != f.Bytes || b.Kind != f.Kind || len(b.Sightings) != 2 || b.Sightings[0].Bytes != f.Bytes || b.Sightings[1].Bytes != f.Bytes {
			t.Errorf("merged message %d: %d bytes, %+v", i, b.Bytes, b.Sightings)
		}
	}
	if truncated == 0 || st.TruncatedBytes == 0 {
		t.Error("the 160-byte snap length cut nothing")
	}
	if st2.RetransSegments != 0 || st2.CopySegments != 0 {
		t.Errorf("merged: %d retransmissions, %d copies: pcapio's dedupe should have made one packet of each pair", st2.RetransSegments, st2.CopySegments)
	}
}
