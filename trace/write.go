package trace

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Write writes t to w in format f (FormatTSV or FormatJSONL).
func Write(w io.Writer, t *Trace, f Format) error {
	switch f {
	case FormatTSV, FormatAuto:
		return WriteTSV(w, t)
	case FormatJSONL:
		return WriteJSONL(w, t)
	}
	return fmt.Errorf("cannot write traces in the %v format", f)
}

// FormatForName returns the format a file name asks for: JSON Lines for
// names ending in .jsonl, .ndjson or .json (before any .gz or .zst), TSV
// otherwise.
func FormatForName(name string) Format {
	name = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(name), ".gz"), ".zst")
	for _, ext := range []string{".jsonl", ".ndjson", ".json"} {
		if strings.HasSuffix(name, ext) {
			return FormatJSONL
		}
	}
	return FormatTSV
}

// WriteFile writes t to the named file in format f (FormatAuto: from the
// name, see FormatForName), gzip-compressed if the name ends in .gz and
// zstd-compressed if it ends in .zst.
func WriteFile(path string, t *Trace, f Format) (err error) {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}()
	return WriteNamed(file, path, t, f)
}

// WriteNamed writes t to w as WriteFile writes it to a file named name:
// the format from the name with FormatAuto, compressed as the name says.
// For callers that create the file themselves (atomically, say).
func WriteNamed(w io.Writer, name string, t *Trace, f Format) error {
	if f == FormatAuto {
		f = FormatForName(name)
	}
	var closer io.Closer
	switch {
	case strings.HasSuffix(name, ".gz"):
		zw := gzip.NewWriter(w)
		w, closer = zw, zw
	case strings.HasSuffix(name, ".zst"):
		zw, zerr := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if zerr != nil {
			return zerr
		}
		w, closer = zw, zw
	}
	if err := Write(w, t, f); err != nil {
		return err
	}
	if closer != nil {
		return closer.Close()
	}
	return nil
}
