package whatif

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// The rpc system (rpcSystem): per request, the client's call and app's
// answer (1 ms each way), app's two calls to db (100 bytes) and db's
// answers (1000 bytes), 0.5 ms each way, db busy 2 ms, app 100 µs before
// each send. Sequential: 1000 + 2×(100+500+2000+500) + 100 + 1000 µs.
const (
	seqLatency = 8300.0
	parLatency = 5200.0
	// The app–db link's bytes on the wire at 1448 bytes per segment: two
	// calls of 100 + 66 and two answers of 1000 + 66.
	dbWire = 2 * (100 + tcpOverhead + 1000 + tcpOverhead)
)

// withLinks gives the result the links the captures would show: app–db
// with a 1 ms round trip measured, client–app with 2 ms.
func withLinks(res *causal.Result) *causal.Result {
	res.Trace.Links = []trace.Link{
		{A: "app", B: "db", Proto: "tcp", Conns: 2, Calls: 10, WindowA: -1, WindowB: -1,
			RTT: trace.LinkRTT{Known: true, MinNS: 1e6, P50NS: 1e6, Samples: 100, Point: "s0", Method: "link"}},
		{A: "10.9.0.1", B: "app", Proto: "tcp", Conns: 5, Calls: 5, WindowA: -1, WindowB: -1,
			RTT: trace.LinkRTT{Known: true, MinNS: 2e6, P50NS: 2e6, Samples: 100, Point: "s0", Method: "link"}},
	}
	return res
}

// models returns the rpc system's model request by request (with the
// trace) and from the pattern's means.
func models(t *testing.T, parallel bool) map[string]*Model {
	t.Helper()
	res, tr := rpcSystem(t, parallel)
	withLinks(res)
	per, err := Build(res, BuildOptions{Trace: tr})
	if err != nil || !per.PerRequest || len(per.Requests) != 5 {
		t.Fatalf("per request: %v, %+v", err, per)
	}
	means, err := Build(res, BuildOptions{})
	if err != nil || means.PerRequest || len(means.Requests) != 1 || means.Requests[0].Weight != 5 {
		t.Fatalf("means: %v, %+v", err, means)
	}
	return map[string]*Model{"requests": per, "means": means}
}

func scenario(t *testing.T, lines ...string) Scenario {
	t.Helper()
	var s Scenario
	for _, l := range lines {
		c, err := ParseChange(l)
		if err != nil {
			t.Fatal(err)
		}
		s.Changes = append(s.Changes, c)
	}
	return s
}

func TestPredictNetwork(t *testing.T) {
	// At 10 Mbit/s instead of the assumed 1 Gbit/s, the link's bytes on
	// the wire take 8·(1/10⁷ − 1/10⁹) s each longer.
	perByte := 8 * (1/10e6 - 1/1e9) * 1e6
	for _, c := range []struct {
		name          string
		parallel      bool
		change        []string
		model, replay float64 // the changes
	}{
		// +2 ms on two sequential round trips: +4 ms both ways.
		{"seq rtt", false, []string{"link app->db rtt=+2ms"}, 4000, 4000},
		// A new value: 1 ms → 3 ms is the same change; either direction
		// names the link.
		{"seq rtt value", false, []string{"link db->app rtt=3ms"}, 4000, 4000},
		// The current round trip given instead of the measured one.
		{"seq rtt given", false, []string{"link app->db rtt=3ms current-rtt=2ms"}, 2000, 2000},
		// Parallel round trips overlap: κ=1, +2 ms once.
		{"par rtt", true, []string{"link app->db rtt=+2ms"}, 2000, 2000},
		// Sequential transfers: every byte on the critical path.
		{"seq bandwidth", false, []string{"link app->db bandwidth=10Mbit/s"}, dbWire * perByte, dbWire * perByte},
		// Parallel transfers: the model adds all of them (one shared
		// link), the replay one branch.
		{"par bandwidth", true, []string{"link app->db bandwidth=10Mbit/s"}, dbWire * perByte, dbWire / 2 * perByte},
		// Two links at once: +2 ms on app–db (κ=2) and +1 ms on the
		// client's (κ=1).
		{"two links", false, []string{"link app->db rtt=+2ms", "link CLIENT->app rtt=+1ms"}, 5000, 5000},
		// A node's every link: app's two.
		{"host", false, []string{"host app rtt=+1ms"}, 3000, 3000},
	} {
		for mode, m := range models(t, c.parallel) {
			rep, err := m.Predict(scenario(t, c.change...))
			if err != nil {
				t.Fatalf("%s (%s): %v", c.name, mode, err)
			}
			p := rep.Patterns[0]
			lat := seqLatency
			if c.parallel {
				lat = parLatency
			}
			tol := 1e-6 * lat
			if math.Abs(p.LatencyUS-lat) > 1e-6 || math.Abs(p.ModelUS-lat-c.model) > tol || math.Abs(p.PredictedUS-lat-c.replay) > tol {
				t.Errorf("%s (%s): %.1f → model %.1f, replay %.1f; want %.1f → %.1f, %.1f", c.name, mode,
					p.LatencyUS, p.ModelUS, p.PredictedUS, lat, lat+c.model, lat+c.replay)
			}
		}
	}
}

func TestPredictInputs(t *testing.T) {
	m := models(t, false)["requests"]
	rep, err := m.Predict(scenario(t, "link app->db rtt=+2ms bandwidth=10Mbit/s"))
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Patterns[0]
	if len(p.Links) != 1 {
		t.Fatalf("inputs %+v", p.Links)
	}
	l := p.Links[0]
	if l.Kappa != 2 || l.KappaSD != 0 || l.Bytes != 2200 || l.WireBytes != dbWire || l.RTTUS != 1000 || l.RTTSource != Measured ||
		l.NewRTTUS != 3000 || l.BandwidthBPS != DefaultBandwidth || l.BWSource != Assumed || l.NewBWBPS != 10e6 {
		t.Errorf("link inputs %+v", l)
	}
	// The current bandwidth was assumed: the uncertainty spans it to
	// unlimited (the 1 Gbit/s transfer time), and a note says so.
	if p.UncertaintyUS < dbWire*8/1e9*1e6/2*0.99 || !hasNote(p.Notes, "assumed") {
		t.Errorf("uncertainty %.2f µs, notes %q", p.UncertaintyUS, p.Notes)
	}
	// A change that does not depend on the current round trip has no
	// uncertainty from it; the five requests are alike.
	rep, _ = m.Predict(scenario(t, "link app->db rtt=+2ms"))
	if u := rep.Patterns[0].UncertaintyUS; u > 1e-6 {
		t.Errorf("uncertainty of a change of round trip: %.3f µs, want 0", u)
	}
	// A new value does: γ ±10 % (100 samples) moves the change by κ·100 µs.
	rep, _ = m.Predict(scenario(t, "link app->db rtt=3ms"))
	if u := rep.Patterns[0].UncertaintyUS; math.Abs(u-200) > 1e-6 {
		t.Errorf("uncertainty of a new round trip: %.3f µs, want 200", u)
	}
}

// TestPredictMissingInputs checks that no precise number comes from an
// unmeasured zero: a link the captures did not show gets an estimated
// round trip and a wide uncertainty, and the prediction says so.
func TestPredictMissingInputs(t *testing.T) {
	res, tr := rpcSystem(t, false)
	withLinks(res)
	res.Trace.Links = res.Trace.Links[1:] // app–db not captured
	// One capture point saw both ends of app–db's messages: their network
	// delays are zero, no measurement.
	for i := range tr.Messages {
		if m := &tr.Messages[i]; tr.Str(m.SrcNode) == "db" || tr.Str(m.DstNode) == "db" {
			m.RecvTS = m.SendTS
		}
	}
	m, err := Build(res, BuildOptions{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	if l := m.Link("app", "db"); l.RTTSource != Estimated || l.RTTUS != 2000 || !strings.Contains(l.RTTNote, "not measured") {
		t.Errorf("app–db: %+v", l)
	}
	rep, err := m.Predict(scenario(t, "link app->db rtt=3ms"))
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Patterns[0]
	// γ estimated 2 ms ± 2 ms: the change κ·(3 − γ) is 2 ms ± 4 ms.
	if math.Abs(p.PredictedUS-seqLatency-2000) > 1e-6 || p.UncertaintyUS < 3999 || !hasNote(p.Notes, "estimated") {
		t.Errorf("prediction %.1f ±%.1f, notes %q", p.PredictedUS, p.UncertaintyUS, p.Notes)
	}
	// With no link measured at all the round trip is missing (the
	// client's link is estimated from its network delays): taken as 0 and
	// the uncertainty spans 0 to the new value.
	res.Trace.Links = nil
	m, _ = Build(res, BuildOptions{Trace: tr})
	rep, _ = m.Predict(scenario(t, "link app->db rtt=3ms"))
	p = rep.Patterns[0]
	if p.UncertaintyUS < 2999 || !hasNote(p.Notes, "missing") {
		t.Errorf("missing γ: prediction %.1f ±%.1f, notes %q", p.PredictedUS, p.UncertaintyUS, p.Notes)
	}
}

func hasNote(notes []string, word string) bool {
	for _, n := range notes {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// TestPredictQueues checks the M/G/1 part against the definitions: the
// five requests a second apart give each node a busy time (the union of
// its node delays) over the span, and the utilisation law the service.
func TestPredictQueues(t *testing.T) {
	m := models(t, false)["requests"]
	span := m.SpanS
	// Four seconds between the first and last request, plus the last.
	if math.Abs(span-(4+seqLatency/1e6)) > 1e-9 || math.Abs(m.RateRPS-5/span) > 1e-9 {
		t.Fatalf("span %.6f s, rate %.4f", span, m.RateRPS)
	}
	db, app := m.Node("db"), m.Node("app")
	// db works 2 × 2 ms per request, app 3 × 100 µs.
	for _, c := range []struct {
		n    *Node
		work float64
	}{{db, 4000}, {app, 300}} {
		rho := 5 * c.work / 1e6 / span
		if c.n.Source != Measured || math.Abs(c.n.Utilisation-rho) > 1e-9 || math.Abs(c.n.ServiceUS-c.work) > 1e-6 || c.n.C2 > 1e-9 {
			t.Errorf("%s: %+v, want ρ %.6f, E[S] %.0f µs, C² 0", c.n.Name, *c.n, rho, c.work)
		}
	}
	rep, err := m.Predict(scenario(t, "load 2"))
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, n := range []*Node{db, app} {
		want += mg1Wait(2*n.Utilisation, n.ServiceUS, 0) - mg1Wait(n.Utilisation, n.ServiceUS, 0)
	}
	p := rep.Patterns[0]
	if math.Abs(p.PredictedUS-seqLatency-want) > 1e-6 || math.Abs(p.ModelUS-seqLatency-want) > 1e-6 {
		t.Errorf("load ×2: %.4f / %.4f, want %.4f", p.PredictedUS, p.ModelUS, seqLatency+want)
	}
	// Saturation: the busiest node, db, at rate/ρ.
	if rep.Bottleneck != "db" || math.Abs(rep.SaturationRPS-m.RateRPS/db.Utilisation) > 1e-6 {
		t.Errorf("saturation %.1f at %s", rep.SaturationRPS, rep.Bottleneck)
	}
	// db twice as fast: its service, the 4 ms of work it measured per
	// request less the wait the model puts in them, halves; its wait
	// shrinks with its utilisation and service.
	rep, _ = m.Predict(scenario(t, "faster db 2"))
	w0 := mg1Wait(db.Utilisation, db.ServiceUS, 0)
	want = -(4000-w0)/2 + mg1Wait(db.Utilisation/2, db.ServiceUS/2, 0) - w0
	if p := rep.Patterns[0]; math.Abs(p.PredictedUS-seqLatency-want) > 1e-6 {
		t.Errorf("faster db: %.4f, want %.4f", p.PredictedUS, seqLatency+want)
	}
	// Beyond saturation the prediction says so.
	rep, _ = m.Predict(scenario(t, "load 1000"))
	if p := rep.Patterns[0]; !p.Saturated || p.PredictedUS != 0 || len(p.Nodes) != 2 || p.Nodes[0].Saturated || !p.Nodes[1].Saturated {
		t.Errorf("load ×1000: %+v", p)
	}
	for _, r := range rep.Requests {
		if !r.Saturated || r.PredictedUS != 0 || r.ModelUS != 0 {
			t.Errorf("load ×1000: request %+v is not marked saturated (an infinity cannot be written as JSON)", r)
		}
	}
}

// TestPredictColocate: app–db's round trips (2 × 1 ms) and transfer times
// go, and the two nodes share one M/G/1 server: its wait is
// Pollaczek-Khinchine's for the mixture, λ·E[S²] / 2(1−ρ), which every
// visit to either node now pays.
func TestPredictColocate(t *testing.T) {
	for mode, m := range models(t, false) {
		rep, err := m.Predict(scenario(t, "colocate app db"))
		if err != nil {
			t.Fatal(err)
		}
		db, app := m.Node("db"), m.Node("app")
		lam := db.Utilisation/db.ServiceUS + app.Utilisation/app.ServiceUS
		es2 := db.Utilisation*db.ServiceUS + app.Utilisation*app.ServiceUS // λ_i·S_i² = ρ_i·S_i (C² = 0)
		merged := es2 / (2 * (1 - db.Utilisation - app.Utilisation))
		want := -2000 - dbWire*8/1e9*1e6 + merged - mg1Wait(db.Utilisation, db.ServiceUS, 0) + merged - mg1Wait(app.Utilisation, app.ServiceUS, 0)
		if p := rep.Patterns[0]; math.Abs(p.PredictedUS-seqLatency-want) > 1e-6 || lam <= 0 {
			t.Errorf("colocate (%s): %.3f, want %.3f", mode, p.PredictedUS, seqLatency+want)
		}
		if rep.Bottleneck != "app+db" {
			t.Errorf("colocate (%s): bottleneck %q", mode, rep.Bottleneck)
		}
	}
}

// TestPredictPS: with processor sharing a visit's measured work is its
// service stretched by 1/(1−ρ); at twice the load, by 1/(1−2ρ).
func TestPredictPS(t *testing.T) {
	m := models(t, false)["requests"]
	m.Discipline = PS
	rep, err := m.Predict(scenario(t, "load 2"))
	if err != nil {
		t.Fatal(err)
	}
	db, app := m.Node("db"), m.Node("app")
	want := 4000*((1-db.Utilisation)/(1-2*db.Utilisation)-1) + 300*((1-app.Utilisation)/(1-2*app.Utilisation)-1)
	if p := rep.Patterns[0]; math.Abs(p.PredictedUS-seqLatency-want) > 1e-6 {
		t.Errorf("PS, load ×2: %.4f, want %.4f", p.PredictedUS, seqLatency+want)
	}
	if n := rep.Patterns[0].Nodes[1]; math.Abs(n.NewWaitUS-4000*2*db.Utilisation/(1-2*db.Utilisation)) > 1e-6 {
		t.Errorf("PS wait %+v", n)
	}
}

func TestMG1Wait(t *testing.T) {
	for _, c := range []struct{ rho, s, c2, want float64 }{
		{0, 10, 1, 0},
		{0.5, 10, 1, 10}, // M/M/1: ρ/(1−ρ)·S
		{0.5, 10, 0, 5},  // M/D/1: half of it
		{0.8, 10, 1, 40}, // 0.8·10·2 / (2·0.2)
		{1, 10, 1, math.Inf(1)},
	} {
		if got := mg1Wait(c.rho, c.s, c.c2); got != c.want && !(math.Abs(got-c.want) < 1e-9) {
			t.Errorf("mg1Wait(%v, %v, %v) = %v, want %v", c.rho, c.s, c.c2, got, c.want)
		}
	}
}

func TestPredictErrors(t *testing.T) {
	m := models(t, false)["requests"]
	for _, line := range []string{"link app->cache rtt=+1ms", "host cache rtt=+1ms", "faster cache 2", "colocate app cache", "separate app cache"} {
		if _, err := m.Predict(scenario(t, line)); !errors.Is(err, ErrUnknownNode) {
			t.Errorf("%s: %v, want ErrUnknownNode", line, err)
		}
	}
	// Separating two nodes with no round trip given takes the median of
	// the measured links', and says so.
	rep, err := m.Predict(scenario(t, "separate app db"))
	if err != nil || !hasNote(rep.Notes, "estimated") {
		t.Errorf("separate: %v, notes %q", err, rep.Notes)
	}
}

// TestShopUntracedDNS reads the report package's shop result: its lookup
// pattern asks a DNS server whose end of the link was not seen, and the
// result has no links (written before they existed): the round trip is
// missing, a change of it still predicts, a new value says what it lacks.
func TestShopUntracedDNS(t *testing.T) {
	res := shopResult(t)
	m, err := Build(res, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := m.Link("10.0.0.1", "10.0.0.53"); l == nil || l.RTTSource != Missing {
		t.Fatalf("dns link %+v", l)
	}
	if n := m.Node("10.0.0.53"); n == nil || n.Source != Missing {
		t.Errorf("dns node %+v", n)
	}
	rep, err := m.Predict(scenario(t, "link 10.0.0.1->10.0.0.53 rtt=+1ms"))
	if err != nil {
		t.Fatal(err)
	}
	var lookup *Prediction
	for i := range rep.Patterns {
		if rep.Patterns[i].Pattern == 2 {
			lookup = &rep.Patterns[i]
		}
	}
	if lookup == nil || math.Abs(lookup.PredictedUS-lookup.LatencyUS-1000) > 1e-6 {
		t.Fatalf("lookup: %+v", lookup)
	}
	rep, _ = m.Predict(scenario(t, "link 10.0.0.1->10.0.0.53 rtt=1ms"))
	for _, p := range rep.Patterns {
		if p.Pattern == 2 && !hasNote(p.Notes, "missing") {
			t.Errorf("a new round trip on an unmeasured link: notes %q", p.Notes)
		}
	}
}
