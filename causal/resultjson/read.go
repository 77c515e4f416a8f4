package resultjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wirepath/wirepath/causal"
)

// ResultError is an error in a saved result file, with the 0-based byte
// offset where it was found when the JSON decoder knows it (-1 otherwise).
type ResultError struct {
	File   string
	Offset int64
	Err    error
}

// Error names the file and, when known, the byte offset.
func (e *ResultError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: byte %d: %v", e.File, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the underlying error.
func (e *ResultError) Unwrap() error { return e.Err }

// ErrNotResult is wrapped when a JSON file is not a wirepath result.
var ErrNotResult = errors.New("not a wirepath result (no \"version\")")

// ErrNewerVersion is wrapped when a result's schema version, or the
// envelope's, is newer than this build reads.
var ErrNewerVersion = errors.New("result schema version is newer than this wirepath reads")

// ReadResults reads what Write or WriteAnalysis wrote (or any producer of
// the documented schema): a single result, returned as a list of one, or
// an Analysis envelope of several. Every result is checked: its version,
// and every pattern a tree in parent-first order. Unknown fields are
// ignored, as the version policy allows additions within a version. name
// is used in errors, which are *ResultError.
func ReadResults(r io.Reader, name string) ([]*causal.Result, error) {
	data, err := io.ReadAll(bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		return nil, &ResultError{File: name, Offset: -1, Err: err}
	}
	var probe struct {
		Analysis *int `json:"wirepath_analysis"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&probe); err != nil || probe.Analysis == nil {
		// Not an envelope (or not JSON at all): readOne says what is wrong.
		res, err := readOne(data, name)
		if err != nil {
			return nil, err
		}
		return []*causal.Result{res}, nil
	}
	return readAnalysis(data, name)
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

// readOne reads a single result.
func readOne(data []byte, name string) (*causal.Result, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var res causal.Result
	if err := dec.Decode(&res); err != nil {
		return nil, jsonError(name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ResultError{File: name, Offset: dec.InputOffset(), Err: errors.New("data after the result object")}
	}
	if err := checkResult(&res, ""); err != nil {
		return nil, &ResultError{File: name, Offset: -1, Err: err}
	}
	return &res, nil
}

// readAnalysis reads an Analysis envelope and checks each result in it.
func readAnalysis(data []byte, name string) ([]*causal.Result, error) {
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

// checkResult checks a decoded result's version and patterns; where
// ("results[1]: ", say) prefixes the error.
func checkResult(res *causal.Result, where string) error {
	switch {
	case res.Version == 0:
		return fmt.Errorf("%s%w", where, ErrNotResult)
	case res.Version > causal.ResultVersion:
		return fmt.Errorf("%s%w: version %d, this build reads up to %d", where, ErrNewerVersion, res.Version, causal.ResultVersion)
	}
	for i := range res.Patterns {
		if err := checkPattern(&res.Patterns[i]); err != nil {
			return fmt.Errorf("%spatterns[%d] (rank %d): %w", where, i, res.Patterns[i].Rank, err)
		}
	}
	return nil
}

// jsonError positions a decoding error.
func jsonError(name string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// The decoder counts the offending byte; name it by its 0-based offset.
		return &ResultError{File: name, Offset: max(se.Offset-1, 0), Err: err}
	case errors.As(err, &te):
		return &ResultError{File: name, Offset: te.Offset, Err: err}
	case errors.Is(err, io.EOF):
		return &ResultError{File: name, Offset: 0, Err: errors.New("empty file")}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &ResultError{File: name, Offset: -1, Err: fmt.Errorf("truncated: %w", err)}
	}
	return &ResultError{File: name, Offset: -1, Err: err}
}

// checkPattern checks the structure every consumer of a pattern relies on
// (more than causal.Pattern.WellFormed: a hop is sent by its parent's
// receiver, and listed instances have a message per hop).
func checkPattern(p *causal.Pattern) error {
	if len(p.Hops) == 0 {
		return errors.New("no hops")
	}
	for i, h := range p.Hops {
		switch {
		case h.ID != i:
			return fmt.Errorf("hops[%d] has id %d, want %d", i, h.ID, i)
		case i == 0 && h.Parent != nil:
			return errors.New("hop 0 (the root) has a parent")
		case i > 0 && h.Parent == nil:
			return fmt.Errorf("hop %d has no parent", i)
		case i > 0 && (*h.Parent < 0 || *h.Parent >= i):
			return fmt.Errorf("hop %d: parent %d is not an earlier hop", i, *h.Parent)
		case i > 0 && p.Hops[*h.Parent].To != h.From:
			return fmt.Errorf("hop %d is sent by %q but its parent hop %d went to %q", i, h.From, *h.Parent, p.Hops[*h.Parent].To)
		}
	}
	for k, in := range p.Instances {
		if len(in.Messages) != len(p.Hops) {
			return fmt.Errorf("instances[%d] lists %d messages for %d hops", k, len(in.Messages), len(p.Hops))
		}
	}
	return nil
}
