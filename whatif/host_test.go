package whatif

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestErlangC: Erlang's C formula against values worked by hand from
// (aᶜ/c!)·c/(c−a) / (Σ_{k<c} aᵏ/k! + (aᶜ/c!)·c/(c−a)).
func TestErlangC(t *testing.T) {
	for _, c := range []struct {
		c    int
		a    float64
		want float64
	}{
		{1, 0.5, 0.5},                    // M/M/1: ρ
		{1, 0.9, 0.9},                    //
		{2, 1, 1.0 / 3},                  // (1/2·2) / (1 + 1 + 1)
		{2, 0.5, 0.1},                    // 2ρ²/(1+ρ) at ρ = 0.25: 0.125/1.25
		{3, 2, 4.0 / 9},                  // (8/6·3) / (1 + 2 + 2 + 4)
		{4, 2, 4.0 / 23},                 // (16/24·2) / (1 + 2 + 2 + 4/3 + 4/3)
		{2, 0, 0},                        // idle
		{2, 2, 1},                        // saturated
		{2, 3, 1},                        // beyond
		{8, 6, 0.35698108587868027},      // exact rational arithmetic
		{64, 32, 4.2637161518574544e-07}, // large c stays finite (exact: 4.26·10⁻⁷)
	} {
		got := erlangC(c.c, c.a)
		if math.Abs(got-c.want) > 1e-9 && math.Abs(got-c.want) > 0.01*c.want {
			t.Errorf("C(%d, %g) = %.9g, want %.9g", c.c, c.a, got, c.want)
		}
	}
}

// TestStretch: the c-server processor-sharing station's response per unit
// of service, in closed form for one and two servers (M/M/1: 1/(1−u);
// M/M/2: 1/(1−u²)), its mean number of jobs, and solveUtil inverting it.
func TestStretch(t *testing.T) {
	for _, u := range []float64{0, 0.1, 0.35, 0.5, 0.9, 0.99} {
		if s := stretch(1, u); !near(s, 1/(1-u)) {
			t.Errorf("stretch(1, %g) = %g, want %g", u, s, 1/(1-u))
		}
		if s := stretch(2, u); !near(s, 1/(1-u*u)) {
			t.Errorf("stretch(2, %g) = %g, want %g", u, s, 1/(1-u*u))
		}
		if n := inSystem(2, u); !near(n, 2*u/(1-u*u)) {
			t.Errorf("inSystem(2, %g) = %g, want %g", u, n, 2*u/(1-u*u))
		}
		for _, c := range []int{1, 2, 8} {
			if got := solveUtil(c, inSystem(c, u)); math.Abs(got-u) > 1e-9 {
				t.Errorf("solveUtil(%d, inSystem(%g)) = %g", c, u, got)
			}
		}
	}
	if !math.IsInf(stretch(2, 1), 1) || solveUtil(2, 0) != 0 {
		t.Error("stretch at saturation, or solveUtil of no jobs")
	}
}

// placed is the rpc system's model request by request with app and db on
// one host of the cores given ("" busy: not given).
func placed(t *testing.T, spec string) *Model {
	t.Helper()
	m := models(t, false)["requests"]
	h, err := ParseHostSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Place([]HostSpec{h}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHostMVA: the open mean-value analysis of the rpc system with app
// and db on one host. Per request db works 2 × 2 ms and app 3 × 100 µs;
// five requests in span s give N̄ = 5·4300 µs / s visits in progress. One
// core: U/(1−U) = N̄, so U = N̄/(1+N̄), each node's core time per visit
// is its work × (1−U), and at twice the load every visit takes
// (1−U)/(1−2U) times as long; saturation at rate/U. Two cores:
// 2U/(1−U²) = N̄.
func TestHostMVA(t *testing.T) {
	m := placed(t, "app,db=1 name=h")
	h := m.Hosts[0]
	nbar := 5 * 4300 / 1e6 / m.SpanS
	u := nbar / (1 + nbar)
	if !near(h.InProgress, nbar) || !near(h.Utilisation, u) || h.UtilSource != Estimated || h.CoreShare != 1 || !near(h.Stretch, 1/(1-u)) {
		t.Fatalf("host %+v, want N̄ %g, U %g", *h, nbar, u)
	}
	if db := m.Node("db"); !near(db.DemandUS, 4000*(1-u)) || db.DelayUS != 0 || db.Host != "h" {
		t.Errorf("db %+v, want core time %g per visit", *db, 4000*(1-u))
	}
	if !near(h.DemandUS, 4300*(1-u)) {
		t.Errorf("core time per request %g, want %g", h.DemandUS, 4300*(1-u))
	}
	rep, err := m.Predict(scenario(t, "load 2"))
	if err != nil {
		t.Fatal(err)
	}
	want := 4300 * ((1-u)/(1-2*u) - 1)
	if p := rep.Patterns[0]; !near(p.PredictedUS, seqLatency+want) || !near(p.ModelUS, seqLatency+want) || p.UncertaintyUS <= 0 {
		t.Errorf("load ×2: %+v, want %g", p, seqLatency+want)
	}
	if rep.Bottleneck != "host h" || !near(rep.SaturationRPS, m.RateRPS/u) || len(rep.Hosts) != 1 || !near(rep.Hosts[0].NewUtilisation, 2*u) {
		t.Errorf("saturation %g at %s, hosts %+v; want %g", rep.SaturationRPS, rep.Bottleneck, rep.Hosts, m.RateRPS/u)
	}
	two := placed(t, "app,db=2").Hosts[0]
	if u2 := (math.Sqrt(1+nbar*nbar) - 1) / nbar; !near(two.Utilisation, u2) || two.Name != "app+db" {
		t.Errorf("two cores: %+v, want U %g", *two, u2)
	}
}

// TestHostBusy: with the host's utilisation given, the share f of the
// visits' time that is core time is c·U·stretch / N̄; the rest stays under
// load, the core time is stretched by stretch(2U)/stretch(U).
func TestHostBusy(t *testing.T) {
	m := placed(t, "app,db=2 busy=0.2%±0.01%")
	h := m.Hosts[0]
	nbar := 5 * 4300 / 1e6 / m.SpanS
	s := 1 / (1 - 0.002*0.002)
	f := 2 * 0.002 * s / nbar
	if h.UtilSource != Given || !near(h.Utilisation, 0.002) || !near(h.UtilUnc, 0.0001) || !near(h.CoreShare, f) {
		t.Fatalf("host %+v, want f %g", *h, f)
	}
	rep, err := m.Predict(scenario(t, "load 2"))
	if err != nil {
		t.Fatal(err)
	}
	want := 4300 * f * ((1/(1-0.004*0.004))/s - 1)
	if p := rep.Patterns[0]; !near(p.PredictedUS, seqLatency+want) {
		t.Errorf("load ×2: %.9f, want %.9f", p.PredictedUS, seqLatency+want)
	}
	// db twice as fast: its core time halves, and the host's
	// utilisation falls from 4300 to 2300 units of core time per request.
	rep, _ = m.Predict(scenario(t, "faster db 2"))
	s2 := stretch(2, 0.002*2300/4300)
	want = 4000*f*(s2/(2*s)-1) + 300*f*(s2/s-1)
	if p := rep.Patterns[0]; math.Abs(p.PredictedUS-seqLatency-want) > 1e-3 {
		t.Errorf("faster db: %.6f, want %.6f", p.PredictedUS, seqLatency+want)
	}
	// More core time than the work holds: all of it is core time, and
	// the rest of the utilisation other work, which the load leaves.
	m = placed(t, "app,db=2 busy=0.9")
	if h := m.Hosts[0]; h.CoreShare != 1 || !strings.Contains(h.Note, "more core time") {
		t.Errorf("busy beyond the work: %+v", *h)
	}
	rep, _ = m.Predict(scenario(t, "load 2"))
	nodesU := 5 / m.SpanS * 4300 / stretch(2, 0.9) / 1e6 / 2
	if hi := rep.Hosts[0]; !near(hi.NewUtilisation, 0.9+nodesU) || !near(rep.SaturationRPS, m.RateRPS*(1-(0.9-nodesU))/nodesU) {
		t.Errorf("other work: %+v, saturation %g", hi, rep.SaturationRPS)
	}
}

// TestHostNetworkUnchanged: a network change predicts the same with and
// without a placement (it touches no node).
func TestHostNetworkUnchanged(t *testing.T) {
	m := models(t, false)["requests"]
	before, err := m.Predict(scenario(t, "link app->db rtt=+2ms"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := placed(t, "app,db=1").Predict(scenario(t, "link app->db rtt=+2ms"))
	if err != nil {
		t.Fatal(err)
	}
	b, a := before.Patterns[0], after.Patterns[0]
	if b.PredictedUS != a.PredictedUS || b.ModelUS != a.ModelUS || b.UncertaintyUS != a.UncertaintyUS || len(a.Nodes) != 0 {
		t.Errorf("network change: %+v without a placement, %+v with", b, a)
	}
	// Without a placement, a load change says every node is its own server.
	rep, _ := m.Predict(scenario(t, "load 2"))
	if !hasNote(rep.Notes, "dedicated") {
		t.Errorf("notes %q", rep.Notes)
	}
}

func TestHostErrors(t *testing.T) {
	m := models(t, false)["requests"]
	h, _ := ParseHostSpec("app,nosuch=2")
	h.Where = "p.txt:3"
	if err := m.Place([]HostSpec{h}); err != nil || len(m.Hosts[0].Unseen) != 1 || !hasNote(m.Notes, "p.txt:3: node nosuch") {
		t.Errorf("unknown node: %v, %+v, %q", err, m.Hosts, m.Notes)
	}
	h2, _ := ParseHostSpec("db,app=1")
	if err := m.Place([]HostSpec{h, h2}); err == nil || !strings.Contains(err.Error(), "already on a host (p.txt:3)") {
		t.Errorf("a node on two hosts: %v", err)
	}
	m = placed(t, "app,db=2")
	if _, err := m.Predict(scenario(t, "colocate app db")); !errors.Is(err, ErrPlaced) {
		t.Errorf("colocate on a host: %v", err)
	}
}

func TestParseHostSpec(t *testing.T) {
	for _, c := range []struct {
		in, want string // want: name|nodes|cores|busy, or "error: ..."
	}{
		{"web1,app,db=2", "web1+app+db|web1 app db|2|NaN"},
		{" app = 2 ", "error: bad host"},
		{"app=4 busy=0.35 name=box", "box|app|4|0.35"},
		{"app,db=2 busy=35%", "app+db|app db|2|0.35"},
		{"app,db=2 busy=35%±2%", "app+db|app db|2|0.35"},
		{"app=2 busy=0.3±x", "error: the uncertainty after ±"},
		{`"a b",c=1`, "a b+c|a b c|1|NaN"},
		{`"x,y=z",c=1`, "x,y=z+c|x,y=z c|1|NaN"},
		{"app,db", "error: bad host"},
		{"app,db=0", "error: bad cores"},
		{"app,db=1.5", "error: bad cores"},
		{"=2", "error: an empty node name"},
		{"app,,db=2", "error: an empty node name"},
		{"app,app=2", "error: listed twice"},
		{"app=2 busy=1.2", "error: bad busy"},
		{"app=2 busy=0", "error: bad busy"},
		{"app=2 speed=3", "error: unknown key"},
		{"", "error: empty host"},
		{`"app=2`, "error: bad quoted name"},
		{"app,db=2 cpu=a.cpu,b.cpu name=box", "box|app db|2|NaN"},
		{"app=2 cpu=a.cpu,,b.cpu", "error: bad cpu"},
		{"app=2 cpu=", "error: bad cpu"},
		{"app=2 cpu=a.cpu busy=0.2", "error: busy= and cpu= both given"},
		{"app=2 cpu=a.cpu cpu-model=wake name=box", "box|app|2|NaN"},
		{"app=2 cpu=a.cpu cpu-model=line", "app|app|2|NaN"},
		{"app=2 cpu=a.cpu cpu-model=curve", "error: bad cpu-model"},
		{"app=2 busy=0.2 cpu-model=wake", "error: cpu-model= without cpu="},
	} {
		h, err := ParseHostSpec(c.in)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = strings.Join([]string{h.Name, strings.Join(h.Nodes, " "), itoa(h.Cores), ftoa(h.Busy)}, "|")
		}
		if !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) || strings.HasPrefix(c.want, "error: ") != (err != nil) {
			t.Errorf("ParseHostSpec(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestReadPlacement(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"# the testbed\nweb1,app=2 # one box\n\ndb=1 busy=0.5\n", "web1+app:2 db:1"},
		{"web1,app=2\napp,db=2\n", "error: p.txt:2: node app is already on a host (p.txt:1)"},
		{"web1,app=2\nweb2=x\n", "error: p.txt:2: bad cores"},
		{"# nothing\n", "error: p.txt: no hosts"},
		{"a=1 busy=2\n", "error: p.txt:1: bad busy"},
	} {
		hs, err := ReadPlacement(strings.NewReader(c.in), "p.txt")
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			var parts []string
			for _, h := range hs {
				parts = append(parts, h.Name+":"+itoa(h.Cores))
			}
			got = strings.Join(parts, " ")
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("ReadPlacement(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzParseHostSpec(f *testing.F) {
	for _, s := range []string{"web1,app,db=2", "app=4 busy=0.35 name=box", `"a b",c=1`, "app,,db=2", `"app=2`, "a=1 busy=35%", "=", ",", `app=2 cpu=a.cpu,"b c.cpu"`, "app=2 cpu=a.cpu cpu-model=wake", "app=2 cpu-model=line"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHostSpec(s)
		if err != nil {
			return
		}
		if h.Cores < 1 || len(h.Nodes) == 0 || h.Name == "" || !(math.IsNaN(h.Busy) || h.Busy > 0 && h.Busy < 1) || len(h.CPUFiles) > 0 && !math.IsNaN(h.Busy) || slices.Contains(h.CPUFiles, "") || h.CPUModel != "" && len(h.CPUFiles) == 0 {
			t.Fatalf("%q: %+v", s, h)
		}
	})
}

func FuzzReadPlacement(f *testing.F) {
	for _, s := range []string{"web1,app=2\ndb=1 busy=0.5\n", "a=1\na=1\n", "# x\n", "a=1 busy=2\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ReadPlacement(strings.NewReader(s), "f")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if err := CheckPlacement(hs); err != nil {
			t.Fatal(err)
		}
	})
}
