package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// AnalysisVersion is the version of the Analysis envelope. It changes only
// with a note in docs/formats.md.
const AnalysisVersion = 1

// Analysis is the JSON document of one run of several engines on one trace
// (`wirepath analyze --engine all --format json`): the results in the
// order the engines ran, each a complete result (the Result contract) with
// the same trace summary. The member "wirepath_analysis" (the envelope's
// version) tells it from a single result, which has "version".
type Analysis struct {
	Analysis int              `json:"wirepath_analysis"`
	Engines  []string         `json:"engines"`
	Results  []*causal.Result `json:"results"`
}

// NewAnalysis wraps results in the envelope.
func NewAnalysis(rs []*causal.Result) *Analysis {
	a := &Analysis{Analysis: AnalysisVersion, Engines: []string{}, Results: []*causal.Result{}}
	for _, r := range rs {
		a.Engines = append(a.Engines, r.Engine)
		if r.Patterns == nil {
			cp := *r
			cp.Patterns = []causal.Pattern{}
			r = &cp
		}
		a.Results = append(a.Results, r)
	}
	return a
}

// WriteAll renders the results of one run (one trace, one or several
// engines) in format. One result is written as Write does. Several are one
// document, as docs/formats.md ("Several engines") defines:
//
//   - text: each engine's patterns in turn, then one trailer (clocks, NAT
//     table, accounting of every stage and engine, warnings);
//   - json: the Analysis envelope;
//   - dot: one digraph with a cluster per engine;
//   - html: one page with a section per engine and the shared tables once;
//   - otlp: one export request holding every engine's traces;
//   - perfetto: one trace-event document, engine i's patterns as processes
//     (i+1)·PerfettoPIDStride + rank.
func WriteAll(w io.Writer, format string, rs []*causal.Result, opt Options) error {
	if len(rs) == 0 {
		return errors.New("no result to write")
	}
	if len(rs) == 1 {
		return Write(w, format, rs[0], opt)
	}
	switch format {
	case FormatText:
		return writeText(w, rs, TextOptions{Top: opt.Top, Summary: opt.Summary})
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(NewAnalysis(rs))
	case FormatDOT:
		return writeDOT(w, rs, DOTOptions{Top: opt.Top})
	case FormatHTML:
		return writeHTML(w, rs, HTMLOptions{Top: opt.Top, Title: opt.Title})
	case FormatOTLP:
		return writeOTLP(w, rs, ExportOptions{Top: opt.Top, Trace: opt.Trace})
	case FormatPerfetto:
		return writePerfetto(w, rs, ExportOptions{Top: opt.Top, Trace: opt.Trace})
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// ReadResults reads what WriteAll wrote as JSON: a single result, or an
// Analysis envelope of several. Each result is checked as ReadJSON checks
// one. name is used in errors.
func ReadResults(r io.Reader, name string) ([]*causal.Result, error) {
	data, err := io.ReadAll(bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		return nil, &ResultError{File: name, Offset: -1, Err: err}
	}
	var probe struct {
		Analysis *int `json:"wirepath_analysis"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&probe); err != nil || probe.Analysis == nil {
		// Not an envelope (or not JSON at all): ReadJSON says what is wrong.
		res, err := ReadJSON(bytes.NewReader(data), name)
		if err != nil {
			return nil, err
		}
		return []*causal.Result{res}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var a Analysis
	if err := dec.Decode(&a); err != nil {
		return nil, jsonError(name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ResultError{File: name, Offset: dec.InputOffset(), Err: errors.New("data after the analysis object")}
	}
	switch {
	case a.Analysis > AnalysisVersion:
		return nil, &ResultError{File: name, Offset: -1, Err: fmt.Errorf("%w: analysis version %d, this build reads up to %d", ErrNewerVersion, a.Analysis, AnalysisVersion)}
	case a.Analysis < 1:
		return nil, &ResultError{File: name, Offset: -1, Err: fmt.Errorf("bad analysis version %d", a.Analysis)}
	case len(a.Results) == 0:
		return nil, &ResultError{File: name, Offset: -1, Err: errors.New("the analysis holds no result")}
	}
	for i, res := range a.Results {
		if res == nil {
			return nil, &ResultError{File: name, Offset: -1, Err: fmt.Errorf("results[%d] is null", i)}
		}
		if err := checkResult(res, fmt.Sprintf("results[%d]: ", i)); err != nil {
			return nil, &ResultError{File: name, Offset: -1, Err: err}
		}
	}
	return a.Results, nil
}

// ReadResultsFile reads the results in the file at path.
func ReadResultsFile(path string) ([]*causal.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadResults(f, path)
}
