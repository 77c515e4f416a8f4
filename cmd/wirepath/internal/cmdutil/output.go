package cmdutil

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/wirepath/wirepath/trace"
)

// Output is where a command writes its report: a file given with -o
// (written atomically: see AtomicFile), or standard output. Close (or
// Finish) flushes it and reports write errors.
type Output struct {
	io.Writer
	bw   *bufio.Writer
	file *AtomicFile
}

// OpenOutput opens path for writing, or wraps ios.Out when path is "" or "-".
func OpenOutput(ios *IOStreams, path string) (*Output, error) {
	o := &Output{}
	if path == "" || path == "-" {
		o.bw = bufio.NewWriterSize(ios.Out, 64<<10)
	} else {
		f, err := CreateAtomic(path)
		if err != nil {
			return nil, err
		}
		o.file = f
		o.bw = bufio.NewWriterSize(f, 1<<20)
	}
	o.Writer = o.bw
	return o, nil
}

// Close flushes the output and, for a file, puts it in place: it is
// Finish(nil).
func (o *Output) Close() error { return o.Finish(nil) }

// Finish ends the output of a run that ended with err: with nil, it
// flushes the output and puts a file in place, returning any write
// error; otherwise a file is removed (what was there stays) and err is
// returned.
func (o *Output) Finish(err error) error {
	if err != nil {
		o.bw.Flush()
		if o.file != nil {
			o.file.Abort()
		}
		return err
	}
	err = o.bw.Flush()
	if o.file != nil {
		if err != nil {
			o.file.Abort()
		} else {
			err = o.file.Commit()
		}
	}
	return err
}

// WriteJSON writes v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WriteTraceFile writes t to the file at path as trace.WriteFile does
// (format and compression from the name unless f says), atomically.
func WriteTraceFile(path string, t *trace.Trace, f trace.Format) error {
	a, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(a, 1<<20)
	err = trace.WriteNamed(bw, path, t, f)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}
