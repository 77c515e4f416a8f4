// Command tbwhatif checks wirepath whatif's predictions against the
// testbed (docs/whatif.md, scripts/whatif-validate.sh): for every request
// kind of the testbed's truth (item-hit, cart-miss, ...), the mean latency
// the client measured in the runs made with a change, against the mean the
// predictions made from the unchanged runs give: each base request's
// latency as its client measured it plus the change whatif predicted for
// it (its root message is matched to the truth to know its kind).
//
//	tbwhatif -base B1,B2 -pred P1,P2 -runs R1,R2 [-scenario NAME] [-name LABEL] [-json]
//	tbwhatif -base R -pred P -runs R -toggle 1s -self -warmup 2s -scenario NAME
//
// Each base directory holds a testbed run (truth.jsonl, logs/client.jsonl)
// and trace.tsv (-trace), the trace the result whatif read was inferred from; each
// prediction file is `wirepath whatif --format json --requests` on that result
// (the i-th for the i-th base run; the scenario named, or the first). The
// runs are the testbed runs made with the change. When the base runs have
// the forwarder's shim.json, it also reports the round trip the forwarder
// actually added (the runs' mean transit minus the base runs', both
// directions). With -before D1,D2 (one per base run: a JSON object of
// pattern rank to latency change in µs, what another version of whatif
// predicted for each pattern) it adds that version's prediction per kind:
// each base request's latency plus its pattern's change. It prints a
// Markdown table, or with -json one object per kind. With -toggle the runs
// made the change only in alternate windows of the wall clock (the
// testbed's SHIM_TOGGLE): the measured change is then, within those runs,
// the mean latency of the requests made with it less that of those made
// without, which the machine's changing load does not move, and the
// predicted mean latency is that of the requests made without it plus the
// predicted change. With -self the base runs are the toggled runs
// themselves (whatif read their captures) and only their requests made
// without the change are predicted from; -warmup leaves out each run's
// first requests.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/wirepath/wirepath/testbed/internal/clientlog"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

// report is the part of whatif's JSON the check reads.
type report struct {
	Scenario   string   `json:"scenario"`
	Changes    []string `json:"changes"`
	Bottleneck string   `json:"bottleneck"`
	Requests   []struct {
		Root        int     `json:"root"`
		Weight      float64 `json:"weight"`
		Pattern     int     `json:"pattern"`
		LatencyUS   float64 `json:"latency_us"`
		PredictedUS float64 `json:"predicted_us"`
		ModelUS     float64 `json:"model_us"`
		Saturated   bool    `json:"saturated"`
	} `json:"requests"`
	SaturationRPS float64 `json:"saturation_rps"`
	SaturationUnc float64 `json:"saturation_unc_rps"`
	ThroughputRPS float64 `json:"throughput_rps"`
}

// acc accumulates one kind's latencies, in ms, weighted; sat counts the
// requests predicted saturated (no latency).
type acc struct{ n, s1, s2, sat float64 }

func (a *acc) add(v float64)     { a.addW(v, 1) }
func (a *acc) addW(v, w float64) { a.n += w; a.s1 += w * v; a.s2 += w * v * v }
func (a *acc) mean() float64     { return a.s1 / max(a.n, 1) }
func (a *acc) se() float64 {
	if a.n < 2 {
		return 0
	}
	m := a.mean()
	return math.Sqrt(max(a.s2/a.n-m*m, 0) * a.n / (a.n - 1) / a.n)
}

// row is one kind's comparison.
type row struct {
	Kind         string  `json:"kind"`
	BaseN        float64 `json:"base_requests"`
	BaseMS       float64 `json:"base_ms"`
	BaseSE       float64 `json:"base_se_ms"`
	PredictedMS  float64 `json:"predicted_ms"`
	PredictedSE  float64 `json:"predicted_se_ms"`
	ModelMS      float64 `json:"model_ms"`
	BeforeMS     float64 `json:"before_ms,omitempty"`
	BeforeError  float64 `json:"before_error_percent,omitempty"`
	MeasuredN    float64 `json:"measured_requests"`
	MeasuredMS   float64 `json:"measured_ms"`
	MeasuredSE   float64 `json:"measured_se_ms"`
	ErrorPercent float64 `json:"error_percent"`
	// Saturated is the base requests whatif predicted saturated (left
	// out of the predicted mean).
	Saturated float64 `json:"saturated,omitempty"`
}

func main() {
	bases := flag.String("base", "", "base run directories, comma-separated")
	preds := flag.String("pred", "", "whatif --format json --requests files, one per base run")
	runs := flag.String("runs", "", "runs made with the change, comma-separated")
	scenario := flag.String("scenario", "", "the scenario to read from the prediction files (default the first)")
	name := flag.String("name", "", "a label for the table")
	asJSON := flag.Bool("json", false, "print JSON")
	tput := flag.Bool("throughput", false, "compare the runs' throughput with the predicted saturation instead")
	toggle := flag.Duration("toggle", 0, "the runs toggled the change in alternate windows of this length (SHIM_TOGGLE): compare their requests with and without it")
	before := flag.String("before", "", "per base run, a JSON file of pattern rank to predicted change (µs) by another version, comma-separated")
	self := flag.Bool("self", false, "with -toggle: the base runs are the toggled runs; predict from their requests made without the change")
	warmup := flag.Duration("warmup", 0, "with -toggle: leave out the requests sent within this time of a run's first")
	traceName := flag.String("trace", "trace.tsv", "the trace whatif's result was inferred from, relative to each base directory")
	flag.Parse()
	bs, ps, rs, bf := split(*bases), split(*preds), split(*runs), split(*before)
	if len(bs) == 0 || len(bs) != len(ps) || len(rs) == 0 || (len(bf) > 0 && len(bf) != len(bs)) {
		log.Fatal("tbwhatif: -base and -pred (as many) and -runs are required; -before, if given, as many as -base")
	}
	if *self && *toggle <= 0 {
		log.Fatal("tbwhatif: -self needs -toggle")
	}
	win := windows{toggle: int64(*toggle), warmup: int64(*warmup)}
	base, pred, model, prev, unmapped, sat := map[string]*acc{}, map[string]*acc{}, map[string]*acc{}, map[string]*acc{}, 0, []report{}
	for i := range bs {
		rep := readReport(ps[i], *scenario)
		sat = append(sat, rep)
		var pd map[int]float64
		if len(bf) > 0 {
			pd = readDeltas(bf[i])
		}
		if !*tput {
			keep := func(clientlog.Request) bool { return true }
			if *self {
				first, _ := clientlog.Span(clientTimes(bs[i]))
				keep = func(c clientlog.Request) bool { return win.phase(c, first) == off }
			}
			unmapped += predicted(bs[i], *traceName, rep, pd, keep, base, pred, model, prev)
		}
	}
	if *tput {
		throughput(*name, sat, rs)
		return
	}
	if *toggle > 0 {
		toggled(*name, base, pred, prev, rs, win, *self, unmapped)
		return
	}
	meas := map[string]*acc{}
	for _, r := range rs {
		clientLatencies(r, meas)
	}
	rows := table(base, pred, model, prev, meas)
	if *asJSON {
		if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"name": *name, "rows": rows, "unmapped": unmapped, "shim_rtt_change_us": shimChange(bs, rs)}); err != nil {
			log.Fatal(err)
		}
		return
	}
	writeTable(*name, rows, unmapped, shimChange(bs, rs), sat)
}

// throughput prints the runs' throughput (requests over the time from the
// first send to the last answer) against the predicted saturation.
func throughput(name string, reps []report, runs []string) {
	var p, pu acc
	for _, r := range reps {
		p.add(r.SaturationRPS)
		pu.add(r.SaturationUnc)
	}
	var m acc
	for _, d := range runs {
		l, err := clientlog.Read(d)
		if err != nil {
			log.Fatal(err)
		}
		if first, last := clientlog.Span(l.Requests); last > first {
			m.add(float64(len(l.Requests)) / (float64(last-first) / 1e9))
		}
	}
	fmt.Printf("**%s** (throughput at saturation)\n\n", name)
	fmt.Println("| predicted saturation (bottleneck) | measured throughput | runs | error |")
	fmt.Println("|---:|---:|---:|---:|")
	bn := ""
	if len(reps) > 0 {
		bn = reps[0].Bottleneck
	}
	fmt.Printf("| %.0f ±%.0f requests/s (%s) | %.0f ±%.0f requests/s | %.0f | %+.1f %% |\n", p.mean(), pu.mean(), bn, m.mean(), m.se(), m.n,
		(p.mean()-m.mean())/m.mean()*100)
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// readReport reads the scenario's report from a whatif JSON file.
func readReport(path, scenario string) report {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	var reps []report
	if err := json.Unmarshal(b, &reps); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	for _, r := range reps {
		if scenario == "" || r.Scenario == scenario {
			return r
		}
	}
	log.Fatalf("%s: no scenario %q", path, scenario)
	return report{}
}

// readDeltas reads a JSON object of pattern rank to a latency change, µs.
func readDeltas(path string) map[int]float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	var m map[int]float64
	if err := json.Unmarshal(b, &m); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	return m
}

// predicted adds a base run's requests that keep accepts to the base and
// predicted means by kind: the client's latency, and that plus whatif's
// change (and, with before, plus the change before gives its pattern). It
// returns how many of whatif's requests matched no true client request.
func predicted(dir, traceName string, rep report, before map[int]float64, keep func(clientlog.Request) bool, base, pred, model, prev map[string]*acc) int {
	tr, err := trace.ReadFile(filepath.Join(dir, traceName), trace.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	f, err := truth.ReadFile(filepath.Join(dir, "truth.jsonl"))
	if err != nil {
		log.Fatal(err)
	}
	mp := score.MapTrace(tr, f, score.DefaultMapOptions())
	roots := map[int]truth.Request{} // client requests by their root message
	for _, r := range f.Requests {
		if !r.Background {
			roots[r.Root] = r
		}
	}
	client := map[int]clientlog.Request{}
	for _, c := range clientTimes(dir) {
		client[c.ID] = c
	}
	missed := map[int]bool{} // roots (trace indices) counted as unmapped
	for _, r := range rep.Requests {
		if r.Root < 0 || r.Root >= len(mp.TraceToTruth) || mp.TraceToTruth[r.Root] < 0 {
			missed[r.Root] = true
			continue
		}
		msg := &f.Messages[mp.TraceToTruth[r.Root]]
		req, ok := roots[msg.ID]
		c, seen := client[req.ID]
		lat := float64(c.Latency()) / 1e6
		switch {
		case !ok && f.Requests[reqIndex(f, msg.Request)].Background:
			continue // a background call's tree
		case !ok || !seen:
			// A message inside a client request: a tree the engine
			// split, whose root is not the request's.
			missed[r.Root] = true
			continue
		case !keep(c):
			continue // made with the change, or in the warm-up
		}
		w := r.Weight
		if w <= 0 {
			w = 1
		}
		if r.Saturated {
			get(pred, req.Kind).sat += w
			continue
		}
		get(base, req.Kind).addW(lat, w)
		get(pred, req.Kind).addW(lat+(r.PredictedUS-r.LatencyUS)/1e3, w)
		get(model, req.Kind).addW(lat+(r.ModelUS-r.LatencyUS)/1e3, w)
		if before != nil {
			get(prev, req.Kind).addW(lat+before[r.Pattern]/1e3, w)
		}
	}
	return len(missed)
}

func get(m map[string]*acc, k string) *acc {
	if m[k] == nil {
		m[k] = &acc{}
	}
	return m[k]
}

// kindsOf maps the truth's client requests to their kinds.
func kindsOf(f *truth.File) map[int]string {
	out := map[int]string{}
	for _, r := range f.Requests {
		if !r.Background {
			out[r.ID] = r.Kind
		}
	}
	return out
}

func reqIndex(f *truth.File, id int) int {
	for i := range f.Requests {
		if f.Requests[i].ID == id {
			return i
		}
	}
	return 0
}

// phase is which setting of a toggled run a request met.
type phase int

const (
	skipped phase = iota // it spans a switch, or was made in the warm-up
	off                  // made without the change
	on                   // made with it
)

// windows tells a toggled run's requests apart: the change was on in the
// odd windows of toggle ns of the wall clock (tbdelay's and tbload's
// rule), and the requests sent within warmup ns of the run's first are
// left out (the run's first requests find cold caches and connections).
type windows struct{ toggle, warmup int64 }

// phase is the setting request c met, the run's first request sent at
// first (Unix ns).
func (w windows) phase(c clientlog.Request, first int64) phase {
	switch {
	case c.SendNS-first < w.warmup, c.RecvNS/w.toggle != c.SendNS/w.toggle:
		return skipped
	case (c.SendNS/w.toggle)%2 == 1:
		return on
	}
	return off
}

// toggled compares, per kind, the mean latency the runs measured for
// their requests made with the change (sent and answered within windows
// where it applied) with the prediction: the mean of those made without
// it (within the other windows, under the same load of the machine) plus
// the change predicted for the kind. With self the change was predicted
// from those same requests (whatif on the toggled run itself); else from
// the base runs. before's prediction of the change is listed beside it.
func toggled(name string, base, pred, prev map[string]*acc, runs []string, win windows, self bool, unmapped int) {
	ons, offs := map[string]*acc{}, map[string]*acc{}
	skippedN := 0
	for _, d := range runs {
		f, err := truth.ReadFile(filepath.Join(d, "truth.jsonl"))
		if err != nil {
			log.Fatal(err)
		}
		kinds := kindsOf(f)
		cs := clientTimes(d)
		first, _ := clientlog.Span(cs)
		for _, c := range cs {
			k, ok := kinds[c.ID]
			if !ok {
				continue
			}
			switch win.phase(c, first) {
			case skipped:
				skippedN++
			case on:
				get(ons, k).add(float64(c.Latency()) / 1e6)
			case off:
				get(offs, k).add(float64(c.Latency()) / 1e6)
			}
		}
	}
	from := "the base runs"
	if self {
		from = "its own requests made without it"
	}
	fmt.Printf("**%s** (the change toggled every %.1f s within each run, predicted from %s; %d requests spanning a switch or in the first %.1f s left out)\n\n",
		name, float64(win.toggle)/1e9, from, skippedN, float64(win.warmup)/1e9)
	withBefore := len(prev) > 0
	fmt.Print("| kind | without: n | without: ms | with: n | with: ms | measured change ms (±σ) | predicted change ms | predicted ms | error | change error |")
	if withBefore {
		fmt.Print(" before: change ms | before: change error |")
	}
	fmt.Println()
	fmt.Print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	if withBefore {
		fmt.Print("---:|---:|")
	}
	fmt.Println()
	var kinds, sat []string
	for k := range base {
		kinds = append(kinds, k)
	}
	for k, p := range pred {
		if p.sat > 0 && base[k] == nil {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		p, n, f := get(pred, k), get(ons, k), get(offs, k)
		if n.n == 0 || f.n == 0 {
			continue
		}
		if p.sat > 0 {
			sat = append(sat, fmt.Sprintf("%s: %.0f of %.0f", k, p.sat, p.sat+p.n))
		}
		var pv *acc
		if withBefore {
			pv = get(prev, k)
		}
		fmt.Println(toggleRow(k, get(base, k), p, n, f, pv))
	}
	if len(sat) > 0 {
		fmt.Printf("\n(base requests predicted saturated, left out of the predicted mean: %s)\n", strings.Join(sat, ", "))
	}
	if unmapped > 0 {
		fmt.Printf("\n(%d of whatif's requests (root messages) are no client request's root: trees the engine split or messages the truth lacks; left out)\n", unmapped)
	}
}

// toggleRow is a kind's row of a toggled run's table: the requests
// without the change (off) and with it (on), the base runs' mean b and the
// prediction p made from them, and the earlier model's pv (nil: none).
// A kind whose every base request was predicted saturated has no
// predicted latency: its row says so and keeps the measured one.
func toggleRow(k string, b, p, on, off, pv *acc) string {
	meas, sd := on.mean()-off.mean(), math.Hypot(on.se(), off.se())
	row := fmt.Sprintf("| %s | %.0f | %.2f ±%.2f | %.0f | %.2f ±%.2f | %+.2f ±%.2f |", k, off.n, off.mean(), off.se(), on.n, on.mean(), on.se(), meas, sd)
	if p.n == 0 && p.sat > 0 {
		row += " saturated | saturated | - | - |"
		if pv != nil {
			row += " - | - |"
		}
		return row
	}
	pc := p.mean() - b.mean()
	row += fmt.Sprintf(" %+.2f | %.2f | %s | %s |", pc, off.mean()+pc, meanError(off.mean()+pc, on.mean(), sd), changeError(pc, meas, sd))
	if pv != nil {
		row += fmt.Sprintf(" %+.2f | %s |", pv.mean()-b.mean(), changeError(pv.mean()-b.mean(), meas, sd))
	}
	return row
}

// meanError is the predicted mean latency's error relative to the
// measured one, and how many standard deviations sd it is off.
func meanError(pred, meas, sd float64) string {
	if meas == 0 {
		return "-"
	}
	z := "-"
	if sd > 0 {
		z = fmt.Sprintf("%.1fσ", math.Abs(pred-meas)/sd)
	}
	return fmt.Sprintf("%+.1f %% (%s)", (pred-meas)/meas*100, z)
}

// clientTimes reads run dir's answered client requests.
func clientTimes(dir string) []clientlog.Request {
	l, err := clientlog.Read(dir)
	if err != nil {
		log.Fatal(err)
	}
	return l.Answered()
}

// clientLatencies adds a changed run's client latencies by kind.
func clientLatencies(dir string, meas map[string]*acc) {
	f, err := truth.ReadFile(filepath.Join(dir, "truth.jsonl"))
	if err != nil {
		log.Fatal(err)
	}
	kinds := kindsOf(f)
	for _, c := range clientTimes(dir) {
		if k, ok := kinds[c.ID]; ok {
			get(meas, k).add(float64(c.Latency()) / 1e6)
		}
	}
}

// table makes the rows, kinds in order.
func table(base, pred, model, prev, meas map[string]*acc) []row {
	var kinds []string
	for k := range base {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var out []row
	for _, k := range kinds {
		b, p, md, m := base[k], pred[k], model[k], get(meas, k)
		r := row{Kind: k, BaseN: b.n, BaseMS: b.mean(), BaseSE: b.se(), PredictedMS: p.mean(), PredictedSE: p.se(), ModelMS: md.mean(),
			MeasuredN: m.n, MeasuredMS: m.mean(), MeasuredSE: m.se(), Saturated: p.sat}
		if m.n > 0 {
			r.ErrorPercent = (r.PredictedMS - r.MeasuredMS) / r.MeasuredMS * 100
		}
		if pv := prev[k]; pv != nil {
			r.BeforeMS = pv.mean()
			if m.n > 0 {
				r.BeforeError = (r.BeforeMS - r.MeasuredMS) / r.MeasuredMS * 100
			}
		}
		out = append(out, r)
	}
	return out
}

// shimChange is the round trip the forwarder added in the runs beyond the
// base runs: the change of its mean transit, both directions added, µs
// (0 when the runs have no shim.json).
func shimChange(bases, runs []string) float64 {
	mean := func(dirs []string) (float64, bool) {
		s, n := 0.0, 0
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "shim.json"))
			if err != nil {
				return 0, false
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(b, &m) != nil {
				return 0, false
			}
			for _, v := range m {
				var st struct {
					Transit float64 `json:"mean_transit_ns"`
				}
				if json.Unmarshal(v, &st) == nil && st.Transit > 0 {
					s += st.Transit
				}
			}
			n++
		}
		return s / float64(max(n, 1)), n > 0
	}
	b, ok1 := mean(bases)
	r, ok2 := mean(runs)
	if !ok1 || !ok2 {
		return 0
	}
	return (r - b) / 1e3
}

func writeTable(name string, rows []row, unmapped int, shim float64, reps []report) {
	if name != "" {
		fmt.Printf("**%s**", name)
		if len(reps) > 0 && len(reps[0].Changes) > 0 {
			fmt.Printf(" (`%s`)", strings.Join(reps[0].Changes, "; "))
		}
		if shim != 0 {
			fmt.Printf("; the forwarder added %.3f ms of round trip", shim/1e3)
		}
		fmt.Println()
		fmt.Println()
	}
	withBefore := slices.ContainsFunc(rows, func(r row) bool { return r.BeforeMS != 0 })
	fmt.Print("| kind | base n | base ms | measured n | measured ms | measured change ms (±σ) | predicted change ms | predicted ms | model ms | error | change error |")
	if withBefore {
		fmt.Print(" before: change ms | before: error | before: change error |")
	}
	fmt.Println()
	fmt.Print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	if withBefore {
		fmt.Print("---:|---:|---:|")
	}
	fmt.Println()
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.Kind, b.Kind) })
	for _, r := range rows {
		sd := math.Hypot(r.BaseSE, r.MeasuredSE) // of the measured change
		fmt.Printf("| %s | %.0f | %.2f ±%.2f | %.0f | %.2f ±%.2f | %+.2f ±%.2f | %+.2f | %.2f ±%.2f | %.2f | %+.1f %% | %s |", r.Kind, r.BaseN, r.BaseMS, r.BaseSE,
			r.MeasuredN, r.MeasuredMS, r.MeasuredSE, r.MeasuredMS-r.BaseMS, sd, r.PredictedMS-r.BaseMS, r.PredictedMS, r.PredictedSE, r.ModelMS, r.ErrorPercent,
			changeError(r.PredictedMS-r.BaseMS, r.MeasuredMS-r.BaseMS, sd))
		if withBefore {
			fmt.Printf(" %+.2f | %+.1f %% | %s |", r.BeforeMS-r.BaseMS, r.BeforeError, changeError(r.BeforeMS-r.BaseMS, r.MeasuredMS-r.BaseMS, sd))
		}
		fmt.Println()
	}
	for _, r := range rows {
		if r.Saturated > 0 {
			fmt.Printf("\n(%s: %.0f requests predicted saturated, left out of the predicted mean)\n", r.Kind, r.Saturated)
		}
	}
	if unmapped > 0 {
		fmt.Printf("\n(%d of whatif's requests (root messages) are no client request's root: trees the engine split or messages the truth lacks; left out)\n", unmapped)
	}
}

// changeError is the predicted change's error relative to the measured
// change, and how many standard deviations sd of the measured change it
// is off; only the latter when the measured change is within two of zero
// (no change to be relative to).
func changeError(pred, meas, sd float64) string {
	z := "-"
	if sd > 0 {
		z = fmt.Sprintf("%.1fσ", math.Abs(pred-meas)/sd)
	}
	if math.Abs(meas) <= 2*sd || meas == 0 {
		return "(" + z + ")"
	}
	return fmt.Sprintf("%+.0f %% (%s)", (pred-meas)/math.Abs(meas)*100, z)
}
