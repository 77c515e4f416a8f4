package cmdutil

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// extFormats maps an output file's extension to the report formats it
// may hold: .json holds the JSON result and the JSON exports.
var extFormats = map[string][]string{
	".html": {"html"},
	".htm":  {"html"},
	".txt":  {"text"},
	".text": {"text"},
	".dot":  {"dot"},
	".gv":   {"dot"},
	".json": {"json", "otlp", "perfetto"},
}

// FormatsOfPath returns the report formats a file named path may hold by
// its extension (case-insensitive), nil for an extension that says
// nothing (none, .out, standard output "-").
func FormatsOfPath(path string) []string {
	if path == "" || path == "-" {
		return nil
	}
	return extFormats[strings.ToLower(filepath.Ext(path))]
}

// OutputFormat reconciles the --format flag of fs with the report file
// output names: when --format was not given and the extension names a
// format the command writes (one of formats; the first of them for .json),
// --format is set to it, so that -o report.html writes HTML; when
// --format was given and the extension names other formats only, it is a
// usage error (-o report.html --format text would write text into a
// .html file). Other extensions, and standard output, leave --format as
// it is.
func OutputFormat(fs *pflag.FlagSet, output string, formats []string) error {
	want := FormatsOfPath(output)
	f := fs.Lookup("format")
	if len(want) == 0 || f == nil {
		return nil
	}
	// --json, where a command keeps it, is --format json given.
	if f.Changed || fs.Changed("json") {
		if slices.Contains(want, f.Value.String()) {
			return nil
		}
		return UsageErrorf("--format %s does not match the output file %s (its extension is for %s): change one of them",
			f.Value.String(), output, strings.Join(want, ", "))
	}
	for _, w := range want {
		if slices.Contains(formats, w) {
			if w == f.Value.String() {
				return nil
			}
			return fs.Set("format", w)
		}
	}
	return UsageErrorf("the output file %s is for %s, which this command does not write (--format %s)",
		output, strings.Join(want, ", "), strings.Join(formats, ", "))
}
