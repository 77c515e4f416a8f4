package frames_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirepath/wirepath/frames"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/trace"
)

func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want string
	}{
		{[]int64{7}, "frame.number in {7}"},
		{[]int64{32, 33}, "frame.number in {32..33}"},
		{[]int64{32, 33, 85, 87, 88, 89}, "frame.number in {32..33, 85, 87..89}"},
		{[]int64{1, 3, 5}, "frame.number in {1, 3, 5}"},
	} {
		got, err := frames.Filter(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Filter(%v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if got := (&frames.Index{}).DisplayFilter(tc.in); got != tc.want {
			t.Errorf("DisplayFilter(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := frames.Filter(nil); err != frames.ErrNoFrames {
		t.Errorf("Filter(nil): err %v, want ErrNoFrames", err)
	}
	if got := (&frames.Index{}).DisplayFilter(nil); got != "" {
		t.Errorf("DisplayFilter(nil) = %q, want none", got)
	}
}

// demo is the reconciled trace of testdata/demo and its merged capture,
// made once.
var demo struct {
	once   sync.Once
	tr     *trace.Trace
	merged string
	err    error
}

var demoCaptures = []string{"outside.pcapng", "inside.pcapng.gz", "lb-any.pcap.gz"}

func demoTrace(t testing.TB) (*trace.Trace, string) {
	t.Helper()
	demo.once.Do(func() {
		dir := filepath.Join("..", "testdata", "demo")
		var paths []string
		for _, c := range demoCaptures {
			paths = append(paths, filepath.Join(dir, c))
		}
		opts := pcapio.Options{Window: 5 * time.Millisecond}
		res, err := pipeline.Run(pipeline.Config{Captures: paths, Capture: opts})
		if err != nil {
			demo.err = err
			return
		}
		demo.tr = res.Trace
		demo.merged, demo.err = writeMerged(paths, opts)
	})
	if demo.err != nil {
		t.Fatal(demo.err)
	}
	return demo.tr, demo.merged
}

// writeMerged writes the merged capture as wirepath merge does.
func writeMerged(paths []string, opts pcapio.Options) (string, error) {
	m, err := pcapio.Open(paths, opts)
	if err != nil {
		return "", err
	}
	defer m.Close()
	f, err := os.CreateTemp("", "frames-demo-*.pcapng")
	if err != nil {
		return "", err
	}
	defer f.Close()
	mw, err := pcapio.NewMergeWriter(f, m.Sniffers(), m.Offsets(), true)
	if err != nil {
		return "", err
	}
	for {
		p, err := m.Next()
		if err != nil {
			break
		}
		if err := mw.Write(p); err != nil {
			return "", err
		}
	}
	return f.Name(), mw.Flush()
}

// TestDemo maps every message of the demo to its frames: all of them are
// found, every frame with a payload belongs to exactly one message, and
// the frames of a message carry its bytes once per wire copy (the NAT
// twins are copies too).
func TestDemo(t *testing.T) {
	tr, merged := demoTrace(t)
	x, err := frames.BuildFile(merged, tr, frames.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := x.Stats
	if s.Frames != s.Matched+s.Unmatched+s.NoPayload+s.Undecoded || s.Skipped != 0 {
		t.Errorf("accounting does not balance: %+v", s)
	}
	if s.Messages != len(tr.Messages) || s.Unmatched != 0 {
		t.Errorf("%d of %d messages got frames, %d payload frames fit none", s.Messages, len(tr.Messages), s.Unmatched)
	}
	seen := map[int64]int{}
	for i := range tr.Messages {
		for _, f := range x.Frames(i) {
			if j, ok := seen[f]; ok {
				t.Errorf("frame %d belongs to messages %d and %d", f, j, i)
			}
			seen[f] = i
		}
	}
	if int64(len(seen)) != s.Matched {
		t.Errorf("%d frames in messages, %d matched", len(seen), s.Matched)
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (make deps installs it): the frames' payloads were not checked")
	}
	payload := tsharkPayloads(t, merged)
	for i := range tr.Messages {
		m := &tr.Messages[i]
		var sum int64
		for _, f := range x.Frames(i) {
			sum += payload[f]
		}
		if m.Bytes == 0 || sum == 0 || sum%m.Bytes != 0 {
			t.Errorf("message %d (%d bytes): its frames %v carry %d bytes", i, m.Bytes, x.Frames(i), sum)
		}
	}
}

// tsharkPayloads returns the TCP or UDP payload length of every frame of
// the capture, as tshark reads it.
func tsharkPayloads(t *testing.T, path string) map[int64]int64 {
	t.Helper()
	out, err := exec.Command("tshark", "-r", path, "-T", "fields", "-e", "frame.number", "-e", "tcp.len", "-e", "udp.length").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	m := map[int64]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		n, _ := strconv.ParseInt(f[0], 10, 64)
		if len(f) > 1 && f[1] != "" {
			m[n], _ = strconv.ParseInt(f[1], 10, 64)
		} else if len(f) > 2 && f[2] != "" {
			u, _ := strconv.ParseInt(f[2], 10, 64)
			m[n] = u - 8 // the UDP header
		}
	}
	return m
}

// TestFilterInTshark checks that the display filter of a request's frames
// selects exactly those frames in Wireshark's own reading of the capture.
func TestFilterInTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (make deps installs it): the display filters were not tried")
	}
	tr, merged := demoTrace(t)
	x, err := frames.BuildFile(merged, tr, frames.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A request of the demo: the first message and the seven after it
	// (client → web1 → app → redis and back), and one message late on.
	for _, msgs := range [][]int{{0, 1, 2, 3, 6, 7}, {len(tr.Messages) - 1}} {
		want := x.FramesOf(msgs)
		flt, err := frames.Filter(want)
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command("tshark", "-r", merged, "-Y", flt, "-T", "fields", "-e", "frame.number")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tshark -Y %q: %v: %s", flt, err, stderr.String())
		}
		var got []int64
		for _, f := range strings.Fields(string(out)) {
			n, _ := strconv.ParseInt(f, 10, 64)
			got = append(got, n)
		}
		if !slices.Equal(got, want) {
			t.Errorf("tshark -Y %q selects %v, want %v", flt, got, want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demo.merged != "" {
		os.Remove(demo.merged)
	}
	os.Exit(code)
}

// TestMatchAllocs checks that matching a record to its message allocates
// nothing: frames reads every packet of a capture.
func TestMatchAllocs(t *testing.T) {
	tr, merged := demoTrace(t)
	r, err := pcapio.OpenFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []pcapio.Record
	var rec pcapio.Record
	for len(recs) < 200 && r.ReadRecord(&rec) == nil {
		c := rec
		c.Data = bytes.Clone(rec.Data)
		recs = append(recs, c)
	}
	mt := frames.NewMatcherForTest(tr)
	for i := range recs {
		mt.Match(&recs[i]) // grow the scratch space
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		mt.Match(&recs[i%len(recs)])
		i++
	}); n != 0 {
		t.Errorf("%v allocations per record, want 0", n)
	}
}

// BenchmarkBuild maps the demo's 1,036 messages to the 7,435 frames of its
// merged capture.
func BenchmarkBuild(b *testing.B) {
	tr, merged := demoTrace(b)
	raw, err := os.ReadFile(merged)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	var x *frames.Index
	for b.Loop() {
		r, err := pcapio.NewReader(bytes.NewReader(raw), merged)
		if err != nil {
			b.Fatal(err)
		}
		if x, err = frames.Build(r, tr, frames.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	if x.Stats.Messages != len(tr.Messages) {
		b.Errorf("%d of %d messages found", x.Stats.Messages, len(tr.Messages))
	}
}
