package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/trace"
)

// mixCaptures writes the scale benchmark's mix (scripts/scale/mix.yaml:
// HTTP over keep-alive pools, Redis, DNS, three sniffers with their own
// clocks) for a few seconds at a low rate into dir and returns the
// captures.
func mixCaptures(t *testing.T, dir string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "scripts", "scale", "mix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("duration: 20s"), []byte("duration: 3s"), 1)
	src = bytes.Replace(src, []byte("rate: 2000"), []byte("rate: 300"), 1)
	cfg, err := gen.ParseConfig(bytes.NewReader(src), "mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.WritePcaps(dir, out, cfg); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range []string{"core", "front", "data"} {
		paths = append(paths, filepath.Join(dir, s+".pcapng"))
	}
	return paths
}

// messagesOutput is everything a Messages run gives, as text: each
// message as `wirepath messages` prints it, each connection report, and
// the accounting.
func messagesOutput(t *testing.T, cfg Config) []byte {
	t.Helper()
	var b []byte
	cfg.Flows = flows.DefaultConfig()
	cfg.Flows.OnConn = func(cs *flows.ConnStats) { b = fmt.Appendf(b, "conn %+v\n", *cs) }
	res, err := Messages(cfg, func(m *flows.Message) error {
		b = flows.AppendMessageTSV(b, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Accounting {
		b = fmt.Appendf(b, "count %s %s %d\n", c.Stage, c.Name, c.Value)
	}
	if res.NAT != nil {
		for _, a := range res.NAT.Aliases() {
			b = fmt.Appendf(b, "alias %+v\n", a)
		}
	}
	return b
}

// runOutput is the trace a Run gives, as `wirepath reconcile` writes it.
func runOutput(t *testing.T, cfg Config) []byte {
	t.Helper()
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := trace.WriteTSV(&buf, res.Trace); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// windowsOutput is every window's trace of a RunWindows, with its bounds.
func windowsOutput(t *testing.T, cfg Config, w Windows) []byte {
	t.Helper()
	var buf bytes.Buffer
	res, _, err := RunWindows(cfg, w, func(w *Window) error {
		fmt.Fprintf(&buf, "window %d [%d, %d)\n", w.Index, w.From, w.To)
		return trace.WriteTSV(&buf, w.Trace)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Accounting {
		fmt.Fprintf(&buf, "count %s %s %d\n", c.Stage, c.Name, c.Value)
	}
	return buf.Bytes()
}

// TestPipeIdentical checks that the run on two goroutines (the merge and
// NAT handing their packets to flows in batches) gives, byte for byte,
// what the serial run gives: the messages, the connection reports and
// the accounting (Messages), the reconciled trace (Run) and every
// window's trace (RunWindows); with NAT learned while streaming, with a
// given table, and without NAT; on the NAT test network and on the scale
// benchmark's mix.
func TestPipeIdentical(t *testing.T) {
	// The test network's translations as a user would give them
	// (docs/nat.md's text form: OUTSIDE INSIDE): one server's.
	given, err := nat.ParseTable([]byte("tcp 192.0.2.100:81 10.1.0.13:8080\n"), "table.txt")
	if err != nil {
		t.Fatal(err)
	}
	mix := mixCaptures(t, t.TempDir())
	tests := []struct {
		name string
		cfg  Config
		win  time.Duration
	}{
		{"nat learned", Config{Captures: natPaths()}, 2 * time.Second},
		{"nat short delay", Config{Captures: natPaths(), NATDelay: 10 * time.Millisecond}, 2 * time.Second},
		{"nat given", Config{Captures: natPaths(), NATTable: given}, 2 * time.Second},
		{"nat given and learned", Config{Captures: natPaths(), NATTable: given, NATLearn: true}, 2 * time.Second},
		{"no nat", Config{Captures: natPaths(), NoNAT: true}, 2 * time.Second},
		{"mix", Config{Captures: mix}, time.Second},
		{"mix no nat", Config{Captures: mix, NoNAT: true}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serial, piped := tt.cfg, tt.cfg
			serial.Serial = true
			w := Windows{Length: tt.win, Margin: tt.win / 4}
			for _, out := range []struct {
				what string
				run  func(Config) []byte
			}{
				{"messages", func(c Config) []byte { return messagesOutput(t, c) }},
				{"trace", func(c Config) []byte { return runOutput(t, c) }},
				{"windows", func(c Config) []byte { return windowsOutput(t, c, w) }},
			} {
				want, got := out.run(serial), out.run(piped)
				if len(want) < 1000 {
					t.Fatalf("%s: the serial run gave %d bytes only", out.what, len(want))
				}
				if !bytes.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Errorf("%s: the piped run differs from the serial run at byte %d of %d: %q, want %q",
						out.what, i, len(want), excerpt(got, i), excerpt(want, i))
				}
			}
		})
	}
}

// excerpt is b around offset i.
func excerpt(b []byte, i int) []byte {
	return b[max(0, i-60):min(len(b), i+60)]
}

// TestPipeStops checks that a run on two goroutines ends cleanly when it
// is stopped early: by the message callback's error, or by its context
// cancelled; the reading goroutine ends with it (the merge is
// closed after it) and the error is the run's.
func TestPipeStops(t *testing.T) {
	errStop := errors.New("stop")
	before := runtime.NumGoroutine()
	n := 0
	_, err := Messages(Config{Captures: natPaths()}, func(*flows.Message) error {
		if n++; n == 3 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Errorf("stopped by the callback: %v, want %v", err, errStop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Messages(Config{Captures: natPaths(), Context: ctx}, func(*flows.Message) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want %v", err, context.Canceled)
	}
	// The readers and the pipe's goroutine are gone (allowing the
	// runtime a moment to retire them).
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the runs, %d before", g, before)
	}
}
