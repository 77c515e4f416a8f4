package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ReadOptions controls how a whole trace file is read.
type ReadOptions struct {
	// Strict makes the first bad line an error. Otherwise bad lines are
	// skipped, counted in Meta.Accounting ("trace", "skipped_lines") and the
	// first few reported in Meta.Warnings.
	Strict bool
	// MaxWarnings bounds the warnings recorded for skipped lines (default 10).
	MaxWarnings int
}

// ReadTSV reads a whole TSV trace from r; file names r in errors.
func ReadTSV(r io.Reader, file string, opt ReadOptions) (*Trace, error) {
	t := &Trace{}
	tr := NewTSVReader(r, file, t)
	if opt.MaxWarnings <= 0 {
		opt.MaxWarnings = 10
	}
	skipped := int64(0)
	for {
		m, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *ParseError
			if opt.Strict || !errors.As(err, &pe) || errors.Is(err, ErrNoHeader) || tr.cols == nil {
				return nil, err
			}
			if skipped < int64(opt.MaxWarnings) {
				t.Meta.Warnings = append(t.Meta.Warnings, "skipped "+err.Error())
			}
			skipped++
			continue
		}
		t.Messages = append(t.Messages, m)
	}
	t.Meta.Accounting = append(t.Meta.Accounting,
		Count{Stage: "trace", Name: "messages_read", Value: int64(len(t.Messages))},
		Count{Stage: "trace", Name: "skipped_lines", Value: skipped})
	if skipped > int64(opt.MaxWarnings) {
		t.Meta.Warnings = append(t.Meta.Warnings, fmt.Sprintf("... and %d more skipped lines", skipped-int64(opt.MaxWarnings)))
	}
	if t.Meta.Source == "" {
		t.Meta.Source = file
	}
	return t, nil
}

// ReadFile reads the trace in the named file, detecting its format.
func ReadFile(path string, opt ReadOptions) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTSV(f, path, opt)
}
