package gen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TruthVersion is the newest version of the truth file format. WriteTruth
// writes version 1 when the truth uses nothing version 2 added (see
// TruthMeta), so that older readers read it; ReadTruth reads both.
const TruthVersion = 2

// TruthMagic is the first line of a truth file (of every version: the
// #truth line says which).
const TruthMagic = "# wirepath-truth v1"

// TruthColumns are the columns WriteTruth writes before the trace columns
// (trace.TSVColumns).
var TruthColumns = []string{"id", "instance", "parent", "observed", "tracelet"}

// Truth is the ground truth of a generated trace: every generated message,
// including those the sniffer lost, with its true timestamps (the reference
// clock, no skew), in order of true send time. The slices are parallel to
// Trace.Messages.
type Truth struct {
	Trace *trace.Trace
	// Instance is the path instance of each message (0, 1, ...).
	Instance []int32
	// Parent is the index of the message whose arrival at the sender caused
	// the message, or -1 for the root of an instance.
	Parent []int32
	// Observed is the message's index in the generated trace, or -1 when
	// it was lost.
	Observed []int32
	// Tracelet indexes Meta.Tracelets: the template the message came from.
	Tracelet []int32
	Meta     TruthMeta
}

// TruthMeta describes how a truth's trace was generated and observed.
type TruthMeta struct {
	Version int    `json:"version"`
	Config  string `json:"config,omitempty"`
	Seed    uint64 `json:"seed"`
	// Timestamps is "both" or "single"; Names is "name" or "addr".
	Timestamps string `json:"timestamps"`
	Names      string `json:"names"`
	// Instances and Observed are the number of path instances and the
	// length of the generated trace.
	Instances int `json:"instances"`
	Observed  int `json:"observed"`
	// Tracelets names the templates, in the order of the configuration.
	Tracelets []string `json:"tracelets"`
	// SkewNS is the clock shift of each skewed node ("CLIENT": all clients;
	// with a clock spread, every node and client host by name).
	SkewNS map[string]int64 `json:"skew_ns,omitempty"`
	// Version 2 adds the fields below, each absent when unused.
	// ClockSpreadNS is the config's clock_spread; ResolutionNS its
	// timestamp resolution; Untraced its untraced nodes; Rate and Compress
	// its open-loop arrivals.
	ClockSpreadNS int64    `json:"clock_spread_ns,omitempty"`
	ResolutionNS  int64    `json:"resolution_ns,omitempty"`
	Untraced      []string `json:"untraced,omitempty"`
	Rate          float64  `json:"rate,omitempty"`
	Compress      float64  `json:"compress,omitempty"`
	// Background names the tracelets whose instances no request caused
	// (their root comes from a node): scorers keep them out of requests.
	Background []string `json:"background,omitempty"`
	Drop       Drop     `json:"drop"`
	// Sniffers are the capture points of wirepath gen --pcap.
	Sniffers   []Sniffer `json:"sniffers,omitempty"`
	DelayScale float64   `json:"delay_scale"`
	Stats      Stats     `json:"stats"`
}

// version returns the oldest format version that holds m.
func (m *TruthMeta) version() int {
	st := m.Stats
	if m.ClockSpreadNS != 0 || m.ResolutionNS != 0 || len(m.Untraced) > 0 || m.Rate != 0 || m.Compress != 0 || len(m.Background) > 0 ||
		st.Background+st.Skipped+st.Failed+st.ThreadWaits+st.PoolWaits != 0 || sniffersV2(m.Sniffers) {
		return 2
	}
	return 1
}

// sniffersV2 reports whether a sniffer uses what version 2 added.
func sniffersV2(sns []Sniffer) bool {
	for _, sn := range sns {
		if sn.Loss != 0 {
			return true
		}
	}
	return false
}

// NumInstances returns the number of path instances.
func (t *Truth) NumInstances() int {
	n := 0
	for _, i := range t.Instance {
		n = max(n, int(i)+1)
	}
	return n
}

// ByObserved returns, for each message of the generated trace, the index
// of its truth message.
func (t *Truth) ByObserved() []int32 {
	out := make([]int32, t.Meta.Observed)
	for i := range out {
		out[i] = -1
	}
	for i, o := range t.Observed {
		if o >= 0 && int(o) < len(out) {
			out[o] = int32(i)
		}
	}
	return out
}

// Instances returns the true path instances as causal.Instances over
// t.Trace (Msg is the truth index), each in parent-first order, indexed by
// instance number, with probability 1.
func (t *Truth) Instances() []causal.Instance {
	n := t.NumInstances()
	kids := make([][]int32, len(t.Parent))
	roots := make([]int32, n)
	for i := range roots {
		roots[i] = -1
	}
	size := make([]int32, n)
	for i, p := range t.Parent {
		size[t.Instance[i]]++
		if p < 0 {
			roots[t.Instance[i]] = int32(i)
		} else {
			kids[p] = append(kids[p], int32(i))
		}
	}
	out := make([]causal.Instance, n)
	for k := range out {
		if roots[k] < 0 {
			continue
		}
		nodes := make([]causal.InstanceNode, 0, size[k])
		nodes = append(nodes, causal.InstanceNode{Msg: roots[k], Parent: -1})
		for q := 0; q < len(nodes); q++ {
			for _, c := range kids[nodes[q].Msg] {
				nodes = append(nodes, causal.InstanceNode{Msg: c, Parent: int32(q)})
			}
		}
		out[k] = causal.Instance{Nodes: nodes, Prob: 1}
	}
	return out
}

// Patterns aggregates the true instances into path patterns, ranked by
// count, with the naming options the engines use. Instance records (when
// opt.KeepInstances is set) hold truth indices.
func (t *Truth) Patterns(opt causal.AggregateOptions) ([]causal.Pattern, error) {
	agg := causal.NewAggregator(t.Trace, opt)
	for _, in := range t.Instances() {
		if len(in.Nodes) == 0 {
			continue
		}
		if err := agg.Add(in); err != nil {
			return nil, err
		}
	}
	return agg.Patterns(causal.RankCount), nil
}

// WriteTruth writes t in the truth format: the magic line, a "#truth" line
// with Meta as JSON, a "#meta" line with the trace's Meta (if any), the
// header and one line per message: the truth columns, then the columns of
// the trace format. A truth file is therefore also a readable trace (of the
// true timestamps; the trace reader ignores the truth columns).
func WriteTruth(w io.Writer, t *Truth) error {
	if err := t.check(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(TruthMagic + "\n")
	meta := t.Meta
	meta.Version = meta.version()
	js, err := json.Marshal(&meta)
	if err != nil {
		return err
	}
	bw.WriteString("#truth ")
	bw.Write(js)
	bw.WriteByte('\n')
	if m := t.Trace.Meta; m.Source != "" || len(m.Offsets)+len(m.Aliases)+len(m.Accounting)+len(m.Warnings) > 0 {
		js, err := json.Marshal(&m)
		if err != nil {
			return err
		}
		bw.WriteString("#meta ")
		bw.Write(js)
		bw.WriteByte('\n')
	}
	bw.WriteString(strings.Join(TruthColumns, "\t"))
	bw.WriteByte('\t')
	bw.WriteString(strings.Join(trace.TSVColumns, "\t"))
	bw.WriteByte('\n')
	var buf []byte
	num := func(v int32) {
		if v < 0 {
			buf = append(buf, '-')
		} else {
			buf = strconv.AppendInt(buf, int64(v), 10)
		}
		buf = append(buf, '\t')
	}
	for i := range t.Trace.Messages {
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		buf = append(buf, '\t')
		num(t.Instance[i])
		num(t.Parent[i])
		num(t.Observed[i])
		buf = appendTSVField(buf, t.Meta.Tracelets[t.Tracelet[i]])
		buf = append(buf, '\t')
		buf = trace.AppendTSV(buf, t.Trace, &t.Trace.Messages[i])
		bw.Write(buf)
	}
	return bw.Flush()
}

// appendTSVField writes s as the trace format writes names: bare, or
// Go-quoted when it is empty, "-", starts with a quote or holds a tab or a
// line break.
func appendTSVField(buf []byte, s string) []byte {
	if s == "" || s == "-" || s[0] == '"' || strings.ContainsAny(s, "\t\r\n") {
		return strconv.AppendQuote(buf, s)
	}
	return append(buf, s...)
}

// WriteTruthFile writes t to the named file.
func WriteTruthFile(path string, t *Truth) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteTruth(f, t); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ErrTruth is wrapped by every error about the content of a truth file.
var ErrTruth = errors.New("bad truth")

// MaxTruthBytes bounds the size of a truth file ReadTruth accepts.
const MaxTruthBytes = 4 << 30

// ReadTruthFile reads the truth file at path.
func ReadTruthFile(path string) (*Truth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTruth(f, path)
}

// ReadTruth reads a truth file written by WriteTruth; file names r in
// errors, which are *trace.ParseError values with the line (and column)
// for bad lines. It checks that the truth is consistent: ids are the line
// order, every parent is a message of the same instance, every instance is
// a tree with one root, and observed indices are distinct.
func ReadTruth(r io.Reader, file string) (*Truth, error) {
	data, err := readTruthData(r, file)
	if err != nil {
		return nil, err
	}
	tr, err := trace.ReadTSV(bytes.NewReader(data), file, trace.ReadOptions{Strict: true})
	if err != nil {
		return nil, err
	}
	// ReadTSV appends its own counters; the truth keeps the writer's.
	tr.Meta.Accounting = dropTraceCounts(tr.Meta.Accounting)
	if tr.Meta.Source == file {
		tr.Meta.Source = ""
	}
	tp := newTruthParser(tr, file)
	if err := tp.parse(data); err != nil {
		return nil, err
	}
	if err := tp.t.check(); err != nil {
		return nil, &trace.ParseError{File: file, Err: err}
	}
	return tp.t, nil
}

// readTruthData reads the whole truth file, bounded by MaxTruthBytes, and
// checks its magic line.
func readTruthData(r io.Reader, file string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTruthBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxTruthBytes {
		return nil, &trace.ParseError{File: file, Err: fmt.Errorf("%w: larger than %d bytes", ErrTruth, int64(MaxTruthBytes))}
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if string(bytes.TrimRight(first, "\r")) != TruthMagic {
		return nil, &trace.ParseError{File: file, Line: 1, Err: fmt.Errorf("%w: first line is not %q", ErrTruth, TruthMagic)}
	}
	return data, nil
}

// truthParser reads the truth columns of a truth file whose trace columns
// were already read.
type truthParser struct {
	t       *Truth
	file    string
	n       int // messages of the trace
	line    int
	cols    []int // truth column -> field index; nil before the header
	sawMeta bool
	tlIdx   map[string]int32
	instIdx map[int64]int32
}

func newTruthParser(tr *trace.Trace, file string) *truthParser {
	n := len(tr.Messages)
	return &truthParser{
		t: &Truth{
			Trace:    tr,
			Instance: make([]int32, 0, n),
			Parent:   make([]int32, 0, n),
			Observed: make([]int32, 0, n),
			Tracelet: make([]int32, 0, n),
		},
		file:    file,
		n:       n,
		instIdx: make(map[int64]int32),
	}
}

// errf returns a positioned error on the current line.
func (tp *truthParser) errf(col string, format string, args ...any) error {
	err := fmt.Errorf("%w: %s", ErrTruth, fmt.Sprintf(format, args...))
	if col != "" {
		err = &trace.ColumnError{Column: col, Err: err}
	}
	return &trace.ParseError{File: tp.file, Line: tp.line, Err: err}
}

// parse reads every line: the #truth line, the header, then one row per
// message.
func (tp *truthParser) parse(data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		tp.line++
		b := bytes.TrimRight(sc.Bytes(), "\r")
		var err error
		switch {
		case len(b) == 0:
		case b[0] == '#':
			if rest, ok := bytes.CutPrefix(b, []byte("#truth ")); ok {
				err = tp.meta(rest)
			}
		case tp.cols == nil:
			err = tp.header(strings.Split(string(b), "\t"))
		default:
			err = tp.row(strings.Split(string(b), "\t"))
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &trace.ParseError{File: tp.file, Line: tp.line + 1, Err: err}
	}
	if !tp.sawMeta {
		return &trace.ParseError{File: tp.file, Err: fmt.Errorf("%w: no #truth line", ErrTruth)}
	}
	if len(tp.t.Parent) != tp.n {
		return &trace.ParseError{File: tp.file, Line: tp.line, Err: fmt.Errorf("%w: %d truth rows for %d messages", ErrTruth, len(tp.t.Parent), tp.n)}
	}
	return nil
}

// meta reads the JSON of the #truth line.
func (tp *truthParser) meta(js []byte) error {
	if tp.sawMeta {
		return tp.errf("", "two #truth lines")
	}
	tp.sawMeta = true
	if err := json.Unmarshal(js, &tp.t.Meta); err != nil {
		return tp.errf("", "bad #truth line: %v", err)
	}
	if v := tp.t.Meta.Version; v < 1 || v > TruthVersion {
		return tp.errf("", "truth version %d, this build reads 1 to %d", v, TruthVersion)
	}
	tp.tlIdx = make(map[string]int32, len(tp.t.Meta.Tracelets))
	for i, name := range tp.t.Meta.Tracelets {
		tp.tlIdx[name] = int32(i)
	}
	return nil
}

// header finds the truth columns in the header line.
func (tp *truthParser) header(fields []string) error {
	if !tp.sawMeta {
		return tp.errf("", "no #truth line before the header")
	}
	tp.cols = make([]int, len(TruthColumns))
	for i := range tp.cols {
		tp.cols[i] = -1
	}
	for fi, f := range fields {
		for ci, c := range TruthColumns {
			if strings.EqualFold(strings.TrimSpace(f), c) {
				tp.cols[ci] = fi
			}
		}
	}
	for ci, c := range tp.cols {
		if c < 0 {
			return tp.errf("", "the header does not name the %s column", TruthColumns[ci])
		}
	}
	return nil
}

// index reads truth column ci as an index; with dash, "-" reads as -1.
func (tp *truthParser) index(fields []string, ci int, dash bool) (int64, error) {
	f := fields[tp.cols[ci]]
	if dash && f == "-" {
		return -1, nil
	}
	v, err := strconv.ParseInt(f, 10, 32)
	if err != nil || v < 0 {
		return 0, tp.errf(TruthColumns[ci], "%q is not a valid index", f)
	}
	return v, nil
}

// row reads one message's truth columns.
func (tp *truthParser) row(fields []string) error {
	t := tp.t
	row := len(t.Parent)
	if row >= tp.n {
		return tp.errf("", "more truth rows than trace messages")
	}
	id, err := tp.index(fields, 0, false)
	if err != nil {
		return err
	}
	if id != int64(row) {
		return tp.errf("id", "id %d on row %d; ids must count the rows from 0", id, row)
	}
	var v [3]int64 // instance, parent, observed
	for k := range v {
		if v[k], err = tp.index(fields, k+1, k >= 1); err != nil {
			return err
		}
	}
	inst, par, obs := v[0], v[1], v[2]
	name := fields[tp.cols[4]]
	if strings.HasPrefix(name, `"`) {
		if name, err = strconv.Unquote(name); err != nil {
			return tp.errf("tracelet", "bad quoted name")
		}
	}
	tl, ok := tp.tlIdx[name]
	if !ok {
		return tp.errf("tracelet", "tracelet %q is not in the #truth line's list", name)
	}
	ii, ok := tp.instIdx[inst]
	if !ok {
		ii = int32(len(tp.instIdx))
		tp.instIdx[inst] = ii
	}
	t.Instance = append(t.Instance, ii)
	t.Parent = append(t.Parent, int32(par))
	t.Observed = append(t.Observed, int32(obs))
	t.Tracelet = append(t.Tracelet, tl)
	return nil
}

func dropTraceCounts(cs []trace.Count) []trace.Count {
	out := cs[:0]
	for _, c := range cs {
		if c.Stage == "trace" && (c.Name == "messages_read" || c.Name == "skipped_lines") {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// check verifies the invariants ReadTruth promises.
func (t *Truth) check() error {
	n := len(t.Trace.Messages)
	if len(t.Instance) != n || len(t.Parent) != n || len(t.Observed) != n || len(t.Tracelet) != n {
		return fmt.Errorf("%w: columns of different lengths", ErrTruth)
	}
	if t.Meta.Observed < 0 || t.Meta.Observed > n {
		return fmt.Errorf("%w: %d observed messages of %d generated", ErrTruth, t.Meta.Observed, n)
	}
	for _, check := range []func() error{t.checkRows, t.checkRoots, t.checkAcyclic} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkRows checks each message's tracelet, observed index and parent.
func (t *Truth) checkRows() error {
	n := len(t.Parent)
	seen := make(map[int32]bool)
	for i := range n {
		if int(t.Tracelet[i]) >= len(t.Meta.Tracelets) || t.Tracelet[i] < 0 {
			return fmt.Errorf("%w: message %d: tracelet out of range", ErrTruth, i)
		}
		if o := t.Observed[i]; o >= 0 {
			if seen[o] {
				return fmt.Errorf("%w: message %d: observed index %d used twice", ErrTruth, i, o)
			}
			seen[o] = true
			if int(o) >= t.Meta.Observed {
				return fmt.Errorf("%w: message %d: observed index %d beyond the trace's %d messages", ErrTruth, i, o, t.Meta.Observed)
			}
		}
		p := t.Parent[i]
		if p < 0 {
			continue
		}
		if int(p) >= n || int(p) == i {
			return fmt.Errorf("%w: message %d: parent %d out of range", ErrTruth, i, p)
		}
		if t.Instance[p] != t.Instance[i] {
			return fmt.Errorf("%w: message %d: parent %d is in another instance", ErrTruth, i, p)
		}
	}
	return nil
}

// checkRoots checks that every instance has one root.
func (t *Truth) checkRoots() error {
	roots := make(map[int32]int)
	for i, p := range t.Parent {
		if p < 0 {
			roots[t.Instance[i]]++
		}
	}
	for i := range t.Parent {
		if roots[t.Instance[i]] != 1 {
			return fmt.Errorf("%w: instance of message %d has %d roots, want 1", ErrTruth, i, roots[t.Instance[i]])
		}
	}
	return nil
}

// checkAcyclic checks that every message reaches its root.
func (t *Truth) checkAcyclic() error {
	state := make([]uint8, len(t.Parent)) // 0 unvisited, 1 on the current walk, 2 reaches a root
	var stack []int32
	for i := range t.Parent {
		for j := int32(i); j >= 0 && state[j] != 2; j = t.Parent[j] {
			if state[j] == 1 {
				return fmt.Errorf("%w: message %d: parents form a cycle", ErrTruth, j)
			}
			state[j] = 1
			stack = append(stack, j)
		}
		for _, j := range stack {
			state[j] = 2
		}
		stack = stack[:0]
	}
	return nil
}
