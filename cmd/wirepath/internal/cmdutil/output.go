package cmdutil

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
)

// Output is where a command writes its report: a file given with -o, or
// standard output. Close flushes it and reports write errors.
type Output struct {
	io.Writer
	bw   *bufio.Writer
	file *os.File
}

// OpenOutput opens path for writing, or wraps ios.Out when path is "" or "-".
func OpenOutput(ios *IOStreams, path string) (*Output, error) {
	o := &Output{}
	if path == "" || path == "-" {
		o.bw = bufio.NewWriterSize(ios.Out, 64<<10)
	} else {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		o.file = f
		o.bw = bufio.NewWriterSize(f, 1<<20)
	}
	o.Writer = o.bw
	return o, nil
}

// Close flushes the output and closes the file, if any.
func (o *Output) Close() error {
	err := o.bw.Flush()
	if o.file != nil {
		if cerr := o.file.Close(); err == nil {
			err = cerr
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
