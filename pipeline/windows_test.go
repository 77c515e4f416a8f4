package pipeline

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/trace"
)

// TestRunWindowsOneWindow checks that a window longer than the capture
// gives Run's trace: one window, every message owned, none copied or late.
func TestRunWindowsOneWindow(t *testing.T) {
	whole, err := Run(Config{Captures: natPaths()})
	if err != nil {
		t.Fatal(err)
	}
	var wins []*trace.Trace
	res, st, err := RunWindows(Config{Captures: natPaths()}, Windows{Length: 1000 * time.Hour, Margin: time.Second}, func(w *Window) error {
		if err := w.Report.Check(); err != nil {
			t.Error(err)
		}
		wins = append(wins, w.Trace)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(wins) != 1 || st.Windows != 1 {
		t.Fatalf("%d windows (%d counted), want 1", len(wins), st.Windows)
	}
	if got, want := len(wins[0].Messages), len(whole.Trace.Messages); got != want {
		t.Errorf("the window has %d messages, the whole run %d", got, want)
	}
	if st.Owned != res.Flows.Messages || st.Copies != 0 || st.Late != 0 {
		t.Errorf("window counts %+v, flows gave %d messages", st, res.Flows.Messages)
	}
	if res.Trace != nil || res.Report != nil {
		t.Error("a windowed run's Result has a trace")
	}
}

// TestRunWindowsSplits checks windows shorter than the capture: in time
// order, each of the given length, every message owned by one window or
// counted late, the margins' copies inside the neighbours' margins, and
// reconcile's accounting balancing in each.
func TestRunWindowsSplits(t *testing.T) {
	whole, err := Run(Config{Captures: natPaths()})
	if err != nil {
		t.Fatal(err)
	}
	first, last, _ := trace.TimeRange(whole.Trace)
	length := time.Duration(int64(last)-int64(first)) / 4
	margin := length / 5
	var prev *Window
	n := 0
	res, st, err := RunWindows(Config{Captures: natPaths()}, Windows{Length: length, Margin: margin}, func(w *Window) error {
		if err := w.Report.Check(); err != nil {
			t.Error(err)
		}
		if w.To-w.From != int64(length) || w.Index != n || (prev != nil && w.From < prev.To) {
			t.Errorf("window %d [%d, %d) after [%d, %d)", w.Index, w.From, w.To, prev.From, prev.To)
		}
		for i := range w.Trace.Messages {
			m := &w.Trace.Messages[i]
			ts := m.SendTS
			if !ts.Known() {
				ts = m.RecvTS
			}
			// reconcile's times are corrected by the clock offsets, which
			// are within a second here
			if int64(ts) < w.From-int64(margin)-int64(time.Second) || int64(ts) >= w.To+int64(margin)+int64(time.Second)+int64(5*time.Second) {
				t.Errorf("window %d [%d, %d): message at %d", w.Index, w.From, w.To, ts)
				break
			}
		}
		n++
		cp := *w
		prev = &cp
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 || st.Windows != int64(n) {
		t.Errorf("%d windows (%d counted), want at least 3", n, st.Windows)
	}
	if st.Owned+st.Late != res.Flows.Messages {
		t.Errorf("owned %d + late %d != %d messages from flows", st.Owned, st.Late, res.Flows.Messages)
	}
	if st.Copies == 0 {
		t.Error("no message was copied into a neighbour's margin")
	}
	found := false
	for _, c := range res.Accounting {
		found = found || (c.Stage == "window" && c.Name == "messages_owned" && c.Value == st.Owned)
	}
	if !found {
		t.Errorf("no window accounting in %v", res.Accounting)
	}
}

// TestRunWindowsOwned checks that the windows' owned messages are the
// whole run's, each owned by one window, and named by the same flows
// message as in the whole run (reconcile.Report.Sources).
func TestRunWindowsOwned(t *testing.T) {
	whole, err := Run(Config{Captures: natPaths()})
	if err != nil {
		t.Fatal(err)
	}
	src := whole.Report.Sources
	if len(src) != len(whole.Trace.Messages) {
		t.Fatalf("%d sources for %d messages", len(src), len(whole.Trace.Messages))
	}
	want := map[flows.MessageID]int{}
	for i, id := range src {
		if id.IsZero() {
			t.Fatalf("message %d names no flows message", i)
		}
		want[id]++
	}
	if len(want) != len(src) {
		t.Fatalf("%d distinct sources for %d messages", len(want), len(src))
	}
	first, last, _ := trace.TimeRange(whole.Trace)
	length := time.Duration(int64(last)-int64(first)) / 4
	got := map[flows.MessageID]int{}
	copies := 0
	_, st, err := RunWindows(Config{Captures: natPaths()}, Windows{Length: length, Margin: length / 5}, func(w *Window) error {
		if len(w.Owned) != len(w.Trace.Messages) || len(w.Report.Sources) != len(w.Trace.Messages) {
			t.Errorf("window %d: %d owned flags, %d sources for %d messages", w.Index, len(w.Owned), len(w.Report.Sources), len(w.Trace.Messages))
			return nil
		}
		for i, own := range w.Owned {
			if own {
				got[w.Report.Sources[i]]++
			} else {
				copies++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Late != 0 || copies == 0 {
		t.Fatalf("%d late, %d copies: the test needs none late and some copied", st.Late, copies)
	}
	for id, n := range got {
		if n != 1 || want[id] != 1 {
			t.Errorf("%v owned by %d windows, in the whole run %d times", id, n, want[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d messages owned over the windows, the whole run has %d", len(got), len(want))
	}
}

// TestWindowsValidate checks the windows' options.
func TestWindowsValidate(t *testing.T) {
	for _, c := range []struct {
		w    Windows
		want string
	}{
		{Windows{Length: time.Minute, Margin: time.Second}, ""},
		{Windows{Length: time.Minute}, ""},
		{Windows{}, "positive"},
		{Windows{Length: time.Second, Margin: -1}, "negative"},
		{Windows{Length: time.Second, Margin: time.Second}, "shorter"},
	} {
		err := c.w.Validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.w, err, c.want)
		}
	}
	if _, _, err := RunWindows(Config{Captures: natPaths(), Preload: []string{"x.jsonl"}}, Windows{Length: time.Minute}, func(*Window) error { return nil }); err == nil {
		t.Error("a windowed run read syscall traces")
	}
}

// TestRunWindowsGivenAliases checks that a given translation table's rows
// reach every window's trace as aliases, as they reach Run's, with and
// without learning.
func TestRunWindowsGivenAliases(t *testing.T) {
	g, err := nat.ParseTable([]byte("tcp 192.0.2.100:81 10.1.0.13:8080\n"), "table.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, learn := range []bool{false, true} {
		n := 0
		_, _, err := RunWindows(Config{Captures: natPaths(), NATTable: g, NATLearn: learn}, Windows{Length: time.Hour, Margin: time.Second}, func(w *Window) error {
			n++
			if !slices.ContainsFunc(w.Trace.Meta.Aliases, func(a trace.Alias) bool {
				return a.Outside == "192.0.2.100:81" && a.Inside == "10.1.0.13:8080"
			}) {
				t.Errorf("learn %v: window %d's aliases %v lack the given row", learn, w.Index, w.Trace.Meta.Aliases)
			}
			return nil
		})
		if err != nil || n == 0 {
			t.Fatalf("learn %v: %d windows, %v", learn, n, err)
		}
	}
}
