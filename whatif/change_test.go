package whatif

import (
	"math"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

func TestParseChange(t *testing.T) {
	nan := math.NaN()
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for _, c := range []struct {
		in   string
		want Change
	}{
		{"link web->db rtt=+5ms", Change{Kind: ChangeLink, A: "web", B: "db", RTTUS: 5000, RTTDelta: true, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}},
		{"link web->db rtt=-1ms", Change{Kind: ChangeLink, A: "web", B: "db", RTTUS: -1000, RTTDelta: true, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}},
		{"link web->db rtt=250us bandwidth=10Mbit/s current-rtt=100us current-bandwidth=1Gbps",
			Change{Kind: ChangeLink, A: "web", B: "db", RTTUS: 250, BandwidthBPS: 10e6, CurrentRTTUS: 100, CurrentBWBPS: 1e9, Factor: nan}},
		// Quoted names, as the signature grammar writes them.
		{`link "nginx[812]@web 1"->db:5432 rtt=1ms`, Change{Kind: ChangeLink, A: "nginx[812]@web 1", B: "db:5432", RTTUS: 1000, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}},
		{"host app rtt=+20ms", Change{Kind: ChangeHost, A: "app", RTTUS: 20000, RTTDelta: true, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}},
		{"colocate app db", Change{Kind: ChangeColocate, A: "app", B: "db", RTTUS: nan, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}},
		{"separate app db rtt=1ms", Change{Kind: ChangeSeparate, A: "app", B: "db", RTTUS: 1000, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}},
		{"load 2", Change{Kind: ChangeLoad, RTTUS: nan, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: 2}},
		{"load 1.5x", Change{Kind: ChangeLoad, RTTUS: nan, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: 1.5}},
		{"faster app 3", Change{Kind: ChangeFaster, A: "app", RTTUS: nan, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: 3}},
	} {
		got, err := ParseChange(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		w := c.want
		if got.Kind != w.Kind || got.A != w.A || got.B != w.B || !same(got.RTTUS, w.RTTUS) || got.RTTDelta != w.RTTDelta ||
			!same(got.BandwidthBPS, w.BandwidthBPS) || !same(got.CurrentRTTUS, w.CurrentRTTUS) || !same(got.CurrentBWBPS, w.CurrentBWBPS) || !same(got.Factor, w.Factor) {
			t.Errorf("%q: %+v, want %+v", c.in, got, w)
		}
		if got.String() != strings.TrimSpace(c.in) {
			t.Errorf("%q: String %q", c.in, got.String())
		}
	}
	for _, bad := range []string{
		"", "teleport app", "link web", "link web->db", "link web->db rtt=fast", "link web->db rtt=-", "link web->db colour=red",
		"link web->db current-rtt=+1ms", "host app", "host", "colocate app", "separate app db rtt=+1ms", "load", "load 0", "load -2",
		"load two", "faster app", "faster app 0", "link a->b->c rtt=1ms", `link "a b->c rtt=1ms`, "load 1e999",
	} {
		if c, err := ParseChange(bad); err == nil {
			t.Errorf("%q: accepted as %+v", bad, c)
		}
	}
}

func TestReadScenarios(t *testing.T) {
	in := `# two scenarios
link app->db rtt=+5ms   # the database moves away
[wan]
host app rtt=+20ms
link app->db bandwidth=10Mbit/s

[busy]
load 2
faster db 2
`
	ss, err := ReadScenarios(strings.NewReader(in), "s.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 || ss[0].Name != "s.txt" || len(ss[0].Changes) != 1 || ss[1].Name != "wan" || len(ss[1].Changes) != 2 ||
		ss[2].Name != "busy" || ss[2].Changes[1].Kind != ChangeFaster {
		t.Errorf("scenarios %+v", ss)
	}
	for _, c := range []struct{ in, err string }{
		{"link app->db rtt=fast\n", "s.txt:1:"},
		{"load 2\n[empty]\n", `scenario "empty" has no changes`},
		{"# nothing\n", "no changes"},
		{"load 2\n\nfaster\n", "s.txt:3:"},
	} {
		if _, err := ReadScenarios(strings.NewReader(c.in), "s.txt"); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v, want %q", c.in, err, c.err)
		}
	}
}

// FuzzParseChange checks that any line parses or fails without panicking,
// and that what parses writes back to a line that parses the same.
func FuzzParseChange(f *testing.F) {
	for _, s := range []string{
		"link web->db rtt=+5ms bandwidth=10Mbit/s", // every key of a link
		`link "a b"->c current-rtt=1ms`,            // a quoted name with a space
		"host app rtt=20ms",                        // a node's links
		"colocate a b",                             // two nodes
		"load 2x",                                  // a factor with its x
		"link a->b rtt=",                           // an empty value
		`link "a->b rtt=1ms`,                       // an unterminated quote
		"faster \"app\" 2",                         // a quoted node
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseChange(s)
		if err != nil {
			return
		}
		if c.Kind == "" || (c.Kind == ChangeLoad || c.Kind == ChangeFaster) && !(c.Factor > 0) {
			t.Errorf("%q: parsed into %+v", s, c)
		}
		if _, err := ReadScenarios(strings.NewReader(s), "f"); err != nil && !strings.Contains(s, "#") && !strings.ContainsAny(s, "\n\r") {
			t.Errorf("%q parses as a change but not as a scenario file: %v", s, err)
		}
	})
}

func TestTransfer(t *testing.T) {
	for _, c := range []struct {
		payload float64
		mss     int
		udp     bool
		wire    float64
	}{
		{0, 1448, false, 66},                // a segment of headers
		{100, 1448, false, 166},             // one segment
		{1448, 1448, false, 1448 + 66},      // exactly one
		{1449, 1448, false, 1449 + 2*66},    // two
		{10000, 1000, false, 10000 + 10*66}, // ten
		{40, 1448, true, 40 + 42},           // a datagram
		{100, 0, false, 166},                // no MSS known: the default
	} {
		if got := wireBytes(c.payload, c.mss, c.udp); got != c.wire {
			t.Errorf("wireBytes(%v, %d, %v) = %v, want %v", c.payload, c.mss, c.udp, got, c.wire)
		}
	}
	for _, c := range []struct {
		payload float64
		window  int64
		rounds  int
	}{
		{1000, 0, 0},        // fits the first window
		{14480, 0, 0},       // exactly the first window
		{14481, 0, 1},       // one more round
		{3 * 14480, 0, 1},   // 10 + 20 segments
		{3*14480 + 1, 0, 2}, // the third round
		{30000, 10000, 2},   // a 10 kB window: three windows' worth
		{1e9, 0, 16},        // 10·(2^16−1) segments are 949 MB, 10·(2^17−1) 1.9 GB
	} {
		if got := slowStartRounds(c.payload, 1448, c.window); got != c.rounds {
			t.Errorf("slowStartRounds(%v, 1448, %d) = %d, want %d", c.payload, c.window, got, c.rounds)
		}
	}
}

// FuzzReadScenarios checks that any scenario file reads or fails with an
// error naming the file, without panicking, and that what reads has
// changes in every scenario, each of which parses again from its text.
func FuzzReadScenarios(f *testing.F) {
	fuzzseed.Strings(f, "cmd/wirepath/testdata/whatif/*.txt")
	for _, s := range []string{
		"[app-20ms]\nlink web1->app rtt=+20ms\nlink app->dns rtt=+20ms # DNS too\n[load-x2]\nload 2\n",
		"link a->b rtt=1ms\n",     // no section: one scenario named after the file
		"[empty]\n[full]\nload 2", // a scenario without changes
		"[x]\nlink a->b colour=red\n",
		"\n\n# only comments\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ss, err := ReadScenarios(strings.NewReader(s), "sc.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sc.txt") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		for _, sc := range ss {
			if len(sc.Changes) == 0 {
				t.Errorf("scenario %q read without changes", sc.Name)
			}
			for _, c := range sc.Changes {
				if _, err := ParseChange(c.Text); err != nil {
					t.Errorf("change %q read but does not parse again: %v", c.Text, err)
				}
			}
		}
	})
}
