package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TextOptions controls WriteText.
type TextOptions struct {
	// Top limits the patterns shown (0 = all).
	Top int
	// Summary prints the accounting as one line per stage with its key
	// figures (SummarizeAccounting) instead of every counter.
	Summary bool
	// agreement, for several results, is written before the trailer.
	agreement *Agreement
}

// WriteText writes the top patterns of res, in rank order, as a tree per
// pattern with count, expected count, latency and per-node and per-hop mean
// delays; nodes that were not traced are shown as WAP5 diamonds (their
// delay combined with the network on both sides). The capture clocks, the
// node clock offsets, the NAT table, the accounting and the warnings
// follow.
func WriteText(w io.Writer, res *causal.Result, opt TextOptions) error {
	return writeText(w, []*causal.Result{res}, opt)
}

// writeText writes each result's patterns in turn, then one trailer: the
// results of one run share their trace, so the clocks, offsets and NAT
// table are those of the first, and the accounting and warnings are the
// trace's followed by each engine's.
func writeText(w io.Writer, rs []*causal.Result, opt TextOptions) error {
	ew := &escaper{w: w}
	bw := bufio.NewWriter(ew)
	for i, res := range rs {
		if i > 0 {
			bw.WriteString("\n")
		}
		fmt.Fprintf(bw, "engine %s: %d messages, %d nodes, %d patterns", res.Engine, res.Trace.Messages, res.Trace.Nodes, len(res.Patterns))
		if res.Trace.EndNS > res.Trace.StartNS {
			fmt.Fprintf(bw, ", trace %s", FormatUS(float64(res.Trace.EndNS-res.Trace.StartNS)/1e3))
		}
		if res.Trace.Source != "" {
			fmt.Fprintf(bw, " from %s", res.Trace.Source)
		}
		bw.WriteString("\n")
		types := requestTypes(res)
		writeTypes(bw, types)
		n := len(res.Patterns)
		if opt.Top > 0 && opt.Top < n {
			n = opt.Top
		}
		if n > 0 {
			fmt.Fprintf(bw, "\n%s\n", trustCaption(res.Engine))
		}
		writeGrouped(bw, res, types, n)
		if n < len(res.Patterns) {
			more, s := len(res.Patterns)-n, "s"
			if more == 1 {
				s = ""
			}
			fmt.Fprintf(bw, "\n(%d more pattern%s; use --top 0 to show all)\n", more, s)
		}
	}
	if opt.agreement != nil {
		writeAgreement(bw, opt.agreement)
	}
	if len(rs) > 0 {
		writeTrailer(bw, rs, opt.Summary)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return ew.flush()
}

// Bounds of a pattern's text: a pattern may have thousands of hops (a
// reused call id chained them), and a tree's rows are indented by their
// depth, so the text would grow with the square of it.
const (
	// MaxTextDepth is the deepest hop shown; deeper ones are counted.
	MaxTextDepth = 32
	// MaxTextHops is the most hops of one pattern shown.
	MaxTextHops = 256
	// maxSignatureRunes is the longest signature shown whole.
	maxSignatureRunes = 400
	// maxUntracedNotes is the most notes on untraced nodes per pattern.
	maxUntracedNotes = 16
)

// writeTypes writes the request types (requests, share, latency
// percentiles) and, per type, where its time goes.
func writeTypes(w *bufio.Writer, types []reqType) {
	if len(types) == 0 || len(types) == 1 && types[0].Label == noLabel {
		return
	}
	total := 0
	lw := utf8.RuneCountInString("request type")
	for _, t := range types {
		total += t.Count
		lw = max(lw, utf8.RuneCountInString(t.Label))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) }
	fmt.Fprintf(w, "\n%d requests of %d types:\n", total, len(types))
	fmt.Fprintf(w, "  %s  %8s  %5s  %10s  %10s  %10s  %10s  patterns\n", pad("request type", lw), "requests", "share", "p50", "p90", "p99", "mean")
	for _, t := range types {
		p50, p90, p99, mean := "-", "-", "-", "-"
		if d := t.Latency; d != nil {
			mean = FormatUS(d.Mean)
			if t.Exact {
				p50, p90, p99 = FormatUS(d.P50), FormatUS(d.P90), FormatUS(d.P99)
			}
		}
		fmt.Fprintf(w, "  %s  %8d  %4.0f%%  %10s  %10s  %10s  %10s  %s\n", pad(t.Label, lw), t.Count, 100*t.Share, p50, p90, p99, mean, rankList(t.Ranks, 8))
	}
	w.WriteString("\nwhere the time goes (mean per request; node: from a message's arrival to the send it caused; a → b: the network):\n")
	for _, t := range types {
		var parts []string
		for i, s := range t.Time {
			if s.Share < minShare {
				break
			}
			if i == 4 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s (%.0f%%)", s.What, FormatUS(s.US), 100*s.Share))
		}
		if len(parts) == 0 {
			parts = []string{"not measured"}
		}
		fmt.Fprintf(w, "  %s  %s\n", pad(t.Label, lw), strings.Join(parts, ", "))
	}
}

// rankList is "#1 #2 #5", at most n ranks and how many more.
func rankList(ranks []int, n int) string {
	var b strings.Builder
	for i, r := range ranks {
		if i == n {
			fmt.Fprintf(&b, " (+%d)", len(ranks)-n)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "#%d", r)
	}
	return b.String()
}

// writeGrouped writes the first n patterns of res grouped by request
// type (types in their order, patterns in rank order within each).
func writeGrouped(w *bufio.Writer, res *causal.Result, types []reqType, n int) {
	shown := res.Patterns[:n]
	groups := len(types) > 1 || len(types) == 1 && types[0].Label != noLabel
	if !groups {
		for i := range shown {
			writePattern(w, res.Engine, &shown[i])
		}
		return
	}
	done := make([]bool, len(shown))
	for _, t := range types {
		head := false
		for i := range shown {
			if done[i] || patternType(&shown[i]) != t.Label {
				continue
			}
			if !head {
				fmt.Fprintf(w, "\n== %s: %d requests ==\n", t.Label, t.Count)
				head = true
			}
			done[i] = true
			writePattern(w, res.Engine, &shown[i])
		}
	}
	for i := range shown {
		if !done[i] {
			writePattern(w, res.Engine, &shown[i])
		}
	}
}

func writePattern(w *bufio.Writer, engine string, p *causal.Pattern) {
	tr, _, _ := trust(engine, p)
	fmt.Fprintf(w, "\n#%d", p.Rank)
	if p.Label != "" {
		fmt.Fprintf(w, "  %s (%d of %d)", p.Label, p.LabelCount, p.Count)
	}
	fmt.Fprintf(w, "  count %d  expected %s  %s", p.Count, fmtNum(p.Expected), tr)
	if p.Latency != nil {
		fmt.Fprintf(w, "  latency %s (p50 %s, p90 %s)", FormatUS(p.Latency.Mean), FormatUS(p.Latency.P50), FormatUS(p.Latency.P90))
	}
	fmt.Fprintf(w, "\n    %s\n", shortSignature(p.Signature))
	if !p.WellFormed() {
		fmt.Fprintf(w, "    (malformed pattern: hops are not a tree in parent-first order)\n")
		return
	}
	tl := buildTimeline(p, meanTimes(p))
	rows, deeper, more := hopRows(p, tl)
	writeHopTable(w, rows)
	if deeper > 0 {
		fmt.Fprintf(w, "    … %d deeper hops not shown (depth > %d)\n", deeper, MaxTextDepth)
	}
	if more > 0 {
		fmt.Fprintf(w, "    … %d more hops not shown (at most %d per pattern)\n", more, MaxTextHops)
	}
	writeUntraced(w, tl)
}

// textRow is one hop's line in the text hop table.
type textRow struct{ label, node, net, start, delays string }

// hopRows returns the rows of p's hop table, the hops as a tree in
// depth-first order with box-drawing prefixes, to depth MaxTextDepth and
// at most MaxTextHops rows; and how many hops were left out for their
// depth (deeper) and past the rows shown (more).
func hopRows(p *causal.Pattern, tl *timeline) (rows []textRow, deeper, more int) {
	kids := p.Children()
	var walk func(id int, prefix string, last, root bool, depth int)
	walk = func(id int, prefix string, last, root bool, depth int) {
		if depth >= MaxTextDepth {
			deeper += subtreeSize(kids, id)
			return
		}
		if len(rows) >= MaxTextHops {
			more += subtreeSize(kids, id)
			return
		}
		branch, next := "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
		if root {
			branch, next = "", ""
		}
		rows = append(rows, textHopRow(&p.Hops[id], tl, id, prefix+branch, root))
		for i, c := range kids[id] {
			walk(c, prefix+next, i == len(kids[id])-1, false, depth+1)
		}
	}
	walk(0, "", true, true, 0)
	return rows, deeper, more
}

// textHopRow is the row of hop h (number id), its label after prefix: the
// node delay at the sender (◇ and the combined delay for an untraced
// sender), the network delay (◇ when an untraced end hides it, ? when it
// is unknown), the start and convolution's delays.
func textHopRow(h *causal.Hop, tl *timeline, id int, prefix string, root bool) textRow {
	r := textRow{label: prefix + h.From + " → " + hopTarget(h)}
	if h.Kind != "-" && h.Kind != "" {
		r.label += " " + h.Kind
	}
	if h.Label != "" {
		r.label += " " + h.Label
	}
	sv := &tl.Visits[tl.Sender[id]]
	switch {
	case sv.Untraced && !root:
		r.node = "◇ " + FormatUS(tl.combined(id))
	case h.NodeDelay != nil:
		r.node = FormatUS(h.NodeDelay.Mean)
	default:
		r.node = "-"
	}
	rv := &tl.Visits[tl.Recv[id]]
	switch {
	case h.NetDelay != nil:
		r.net = FormatUS(h.NetDelay.Mean)
	case rv.Untraced && !rv.Unseen || sv.Untraced:
		r.net = "◇"
	default:
		r.net = "?"
	}
	r.delays = fmtDelays(h.Delays, 4)
	if h.Start != nil {
		r.start = fmtSigned(h.Start.Mean)
	}
	return r
}

// writeHopTable writes the rows under their header, the delays column only
// when a hop has delays.
func writeHopTable(w *bufio.Writer, rows []textRow) {
	lw := utf8.RuneCountInString("hop")
	hasDelays := false
	for _, r := range rows {
		lw = max(lw, utf8.RuneCountInString(r.label))
		hasDelays = hasDelays || r.delays != ""
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) }
	lpad := func(s string, n int) string { return strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) + s }
	head := fmt.Sprintf("    %s  %11s  %10s  %10s", pad("hop", lw), "at sender", "network", "start")
	if hasDelays {
		head += "  delays (count)"
	}
	w.WriteString(head + "\n")
	for _, r := range rows {
		line := fmt.Sprintf("    %s  %s  %s  %s", pad(r.label, lw), lpad(r.node, 11), lpad(r.net, 10), lpad(r.start, 10))
		if r.delays != "" {
			line += "  " + r.delays
		}
		w.WriteString(line + "\n")
	}
}

// writeUntraced explains the ◇ of each untraced visit of the timeline.
func writeUntraced(w *bufio.Writer, tl *timeline) {
	notes := 0
	for _, v := range tl.Visits {
		if !v.Untraced {
			continue
		}
		if notes++; notes > maxUntracedNotes {
			continue
		}
		switch {
		case v.In < 0:
			fmt.Fprintf(w, "    ◇ %s was not traced: the root's send time is its arrival\n", v.Node)
		case v.Unseen:
			fmt.Fprintf(w, "    ◇ %s was not traced: the message to it was not seen arriving\n", v.Node)
		default:
			fmt.Fprintf(w, "    ◇ %s was not traced: %s is its delay plus the network both ways\n", v.Node, FormatUS(v.End-v.Start))
		}
	}
	if notes > maxUntracedNotes {
		fmt.Fprintf(w, "    ◇ … and %d more nodes that were not traced\n", notes-maxUntracedNotes)
	}
}

// subtreeSize counts the hops of the subtree rooted at id.
func subtreeSize(kids [][]int, id int) int {
	n, stack := 0, []int{id}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		stack = append(stack, kids[x]...)
	}
	return n
}

// shortSignature is sig, cut to maxSignatureRunes with how much was left out.
func shortSignature(sig string) string {
	n := utf8.RuneCountInString(sig)
	if n <= maxSignatureRunes {
		return sig
	}
	cut := 0
	for i := range sig {
		if cut == maxSignatureRunes {
			return fmt.Sprintf("%s… (%d more characters)", sig[:i], n-maxSignatureRunes)
		}
		cut++
	}
	return sig
}

// escaper writes text with control characters escaped (\x1b, \u009b),
// so that a node name cannot send a terminal escape sequence; newlines
// and tabs pass. It keeps a rune cut by the end of a write for the next.
type escaper struct {
	w     io.Writer
	carry []byte
	buf   []byte
}

func (e *escaper) Write(p []byte) (int, error) {
	n := len(p)
	if len(e.carry) > 0 {
		p = append(e.carry, p...)
		e.carry = nil
	}
	e.buf = e.buf[:0]
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size == 1 && !utf8.FullRune(p) {
			e.carry = append(e.carry[:0], p...)
			break
		}
		switch {
		case r == '\n' || r == '\t':
			e.buf = append(e.buf, byte(r))
		case r < 0x20 || r == 0x7f:
			e.buf = fmt.Appendf(e.buf, "\\x%02x", r)
		case r >= 0x80 && r < 0xa0:
			e.buf = fmt.Appendf(e.buf, "\\u%04x", r)
		default:
			e.buf = append(e.buf, p[:size]...)
		}
		p = p[size:]
	}
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return n, nil
}

// flush writes a rune cut at the very end as it is (escaped bytes).
func (e *escaper) flush() error {
	if len(e.carry) == 0 {
		return nil
	}
	var b []byte
	for _, c := range e.carry {
		b = fmt.Appendf(b, "\\x%02x", c)
	}
	e.carry = nil
	_, err := e.w.Write(b)
	return err
}

// fmtDelays lists convolution delays by declining frequency as
// "300 µs ×40, 8.00 ms ×10", at most max of them.
func fmtDelays(ds []causal.DelayPeak, max int) string {
	ds = byFrequency(ds)
	var parts []string
	for i, d := range ds {
		if i == max {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", FormatUS(d.DelayUS), d.Count))
	}
	return strings.Join(parts, ", ")
}

// byFrequency returns a copy of ds ordered by declining count, then delay.
func byFrequency(ds []causal.DelayPeak) []causal.DelayPeak {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b causal.DelayPeak) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return cmpF(a.DelayUS, b.DelayUS)
	})
	return out
}

// hopTarget names a hop's receiver with its port when the endpoint adds one.
func hopTarget(h *causal.Hop) string {
	ep := h.ToEndpoint
	switch {
	case ep == "" || ep == h.To || h.To == causal.ClientName:
		return h.To
	case strings.HasPrefix(ep, h.To+":"):
		return ep
	}
	return h.To + " (" + ep + ")"
}

// writeTrailer writes what the results of one run share, once: the
// clocks, the node offsets, the NAT table, the accounting of every stage
// and engine, and the warnings.
func writeTrailer(w *bufio.Writer, rs []*causal.Result, summary bool) {
	ts := &rs[0].Trace
	writeClocks(w, ts)
	writeAliases(w, ts.Aliases)
	counts := append([]trace.Count(nil), ts.Accounting...)
	for _, r := range rs {
		counts = append(counts, r.Accounting...)
	}
	writeAccounting(w, counts, summary)
	writeWarnings(w, rs)
}

// writeClocks writes the capture clocks and the node offsets.
func writeClocks(w *bufio.Writer, ts *causal.TraceSummary) {
	if len(ts.Clocks) > 0 {
		fmt.Fprintf(w, "\ncapture clocks (reference time = local time - offset):\n")
		nw := 0
		for _, c := range ts.Clocks {
			nw = max(nw, utf8.RuneCountInString(c.Name))
		}
		for _, c := range ts.Clocks {
			fmt.Fprintf(w, "  %-7s  %-*s  %s\n", c.Kind, nw, c.Name, clockText(c))
		}
	}
	if len(ts.Offsets) > 0 {
		fmt.Fprintf(w, "\nclock offsets (reference time = local time - offset):\n")
		nw := 0
		for _, o := range ts.Offsets {
			nw = max(nw, utf8.RuneCountInString(o.Node))
		}
		for _, o := range ts.Offsets {
			if !o.Known {
				fmt.Fprintf(w, "  %-*s  unknown (shares nothing with %s)\n", nw, o.Node, o.Reference)
				continue
			}
			fmt.Fprintf(w, "  %-*s  %s ± %s against %s (%d samples%s)\n", nw, o.Node, fmtSigned(float64(o.OffsetNS+o.AppliedNS)/1e3), FormatUS(float64(o.UncertaintyNS)/1e3), o.Reference, o.Samples, appliedNote(o))
		}
	}
}

// writeAliases writes the NAT table.
func writeAliases(w *bufio.Writer, aliases []trace.Alias) {
	if len(aliases) == 0 {
		return
	}
	fmt.Fprintf(w, "\nNAT (outside → inside):\n")
	for _, a := range aliases {
		fmt.Fprintf(w, "  %s → %s", a.Outside, a.Inside)
		var parts []string
		if a.Kind != "" {
			parts = append(parts, a.Kind)
		}
		if a.Direction != "" {
			parts = append(parts, a.Direction)
		}
		if a.Matches > 0 {
			parts = append(parts, fmt.Sprintf("%d matches", a.Matches))
		}
		if a.Score > 0 {
			parts = append(parts, fmt.Sprintf("score %.2f", a.Score))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "  (%s)", strings.Join(parts, ", "))
		}
		w.WriteString("\n")
	}
}

// writeAccounting writes the counters, one line per stage (summary) or
// one per counter.
func writeAccounting(w *bufio.Writer, counts []trace.Count, summary bool) {
	if summary && len(counts) > 0 {
		fmt.Fprintf(w, "\naccounting:\n")
		lines := SummarizeAccounting(counts)
		sw := 0
		for _, l := range lines {
			sw = max(sw, len(l.Stage))
		}
		for _, l := range lines {
			fmt.Fprintf(w, "  %-*s  %s\n", sw, l.Stage, l.Text)
		}
		return
	}
	acc := rowsOf(counts)
	if len(acc) == 0 {
		return
	}
	fmt.Fprintf(w, "\naccounting:\n")
	sw, nw, vw := 0, 0, 0
	for _, c := range acc {
		sw = max(sw, len(c.stage))
		nw = max(nw, len(c.name))
		vw = max(vw, len(c.value))
	}
	for _, c := range acc {
		fmt.Fprintf(w, "  %-*s  %-*s  %*s\n", sw, c.stage, nw, c.name, vw, c.value)
	}
}

// writeWarnings writes the trace's warnings and each engine's, named by
// the engine when there are several.
func writeWarnings(w *bufio.Writer, rs []*causal.Result) {
	warns := append([]string(nil), rs[0].Trace.Warnings...)
	for _, r := range rs {
		for _, s := range r.Warnings {
			if len(rs) > 1 {
				s = r.Engine + ": " + s
			}
			warns = append(warns, s)
		}
	}
	if len(warns) > 0 {
		fmt.Fprintf(w, "\nwarnings:\n")
		for _, s := range warns {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
}

// clockText describes a capture clock's offset.
func clockText(c trace.Clock) string {
	switch {
	case c.Method == "reference":
		return "the reference"
	case !c.Known:
		return "unknown: shares nothing with " + c.Reference + " (its times are not comparable with the others')"
	}
	s := fmt.Sprintf("%s ± %s", fmtSigned(float64(c.OffsetNS)/1e3), FormatUS(float64(c.UncertaintyNS)/1e3))
	if d := c.DriftText(); d != "" {
		s += ", " + d
	}
	var how []string
	if c.Samples > 0 {
		how = append(how, fmt.Sprintf("%d samples", c.Samples))
	}
	if c.Method != "" {
		how = append(how, c.Method)
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	return s
}

type countRow struct{ stage, name, value string }

func rowsOf(cs []trace.Count) []countRow {
	out := make([]countRow, len(cs))
	for i, c := range cs {
		out[i] = countRow{c.Stage, c.Name, fmt.Sprint(c.Value)}
	}
	return out
}

// FormatUS formats a duration in microseconds with a readable unit.
func FormatUS(us float64) string {
	a := math.Abs(us)
	switch {
	case math.IsNaN(us) || math.IsInf(us, 0):
		return "?"
	case a >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	case a >= 0.9995 || a == 0:
		return fmt.Sprintf("%.0f µs", us)
	default: // below a microsecond: "0 µs" would hide a measured value
		return fmt.Sprintf("%.0f ns", us*1e3)
	}
}

// fmtSigned formats a time offset with its sign: "+2 ms", "-14 µs".
func fmtSigned(us float64) string {
	if us >= 0 {
		return "+" + FormatUS(us)
	}
	return FormatUS(us)
}

// fmtNum formats a count-like float: one decimal, no trailing ".0" noise
// for large values.
func fmtNum(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// fmtTime formats ns since the epoch as UTC RFC 3339 with microseconds.
func fmtTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000")
}

// appliedNote says that an offset was removed from the node's timestamps
// (trace.Offset.AppliedNS): the trace is on the reference clock.
func appliedNote(o trace.Offset) string {
	if o.AppliedNS != 0 && o.OffsetNS == 0 {
		return "; applied to the timestamps"
	}
	return ""
}

// writeAgreement writes how the engines agree on the requests' trees.
func writeAgreement(w *bufio.Writer, a *Agreement) {
	w.WriteString("\nagreement: of the requests two engines both built, how many they put in the same tree\n")
	cw := 8
	for _, e := range a.Engines {
		cw = max(cw, utf8.RuneCountInString(e))
	}
	cell := func(s string) string { return fmt.Sprintf("  %-*s", max(cw, 18), s) }
	w.WriteString(fmt.Sprintf("  %-*s", cw, ""))
	for _, e := range a.Engines {
		w.WriteString(cell(e))
	}
	w.WriteString("\n")
	for i, e := range a.Engines {
		fmt.Fprintf(w, "  %-*s", cw, e)
		for j := range a.Engines {
			w.WriteString(cell(agreeText(a.Same[i][j], a.Both[i][j])))
		}
		w.WriteString("\n")
	}
	fmt.Fprintf(w, "  all %d engines: %s of the requests they all built\n", len(a.Engines), agreeText(a.AllSame, a.All))
	if len(a.Missing) > 0 {
		fmt.Fprintf(w, "  not compared (no instances): %s\n", strings.Join(a.Missing, ", "))
	}
}

// agreeText is "121 of 150 (81%)".
func agreeText(same, both int) string {
	if both == 0 {
		return "-"
	}
	return fmt.Sprintf("%d of %d (%.0f%%)", same, both, 100*float64(same)/float64(both))
}
