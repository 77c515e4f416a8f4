package cmdutil

import (
	"errors"
	"testing"

	"github.com/spf13/pflag"
)

func TestOutputFormat(t *testing.T) {
	all := []string{"text", "json", "dot", "html", "otlp", "perfetto"}
	tests := []struct {
		name    string
		args    []string
		formats []string
		want    string // the format after; "" for a usage error
	}{
		{"html by extension", []string{"-o", "report.html"}, all, "html"},
		{"upper-case extension", []string{"-o", "R.HTM"}, all, "html"},
		{"json by extension", []string{"-o", "r.json"}, all, "json"},
		{"dot by extension", []string{"-o", "paths.gv"}, all, "dot"},
		{"text by extension", []string{"-o", "r.txt", "--format", "text"}, all, "text"},
		{"otlp into .json", []string{"-o", "t.json", "--format", "otlp"}, all, "otlp"},
		{"unknown extension keeps the default", []string{"-o", "r.out"}, all, "text"},
		{"stdout keeps the default", []string{"-o", "-"}, all, "text"},
		{"no extension keeps the flag", []string{"-o", "report", "--format", "dot"}, all, "dot"},
		{"mismatch refused", []string{"-o", "report.html", "--format", "text"}, all, ""},
		{"json into .html refused", []string{"-o", "report.html", "--format", "json"}, all, ""},
		{"format the command does not write", []string{"-o", "report.html"}, []string{"text", "json"}, ""},
		{"text|json command picks json", []string{"-o", "s.json"}, []string{"text", "json"}, "json"},
		{"--json is a given format", []string{"-o", "s.txt", "--json"}, []string{"text", "json"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			format := fs.String("format", "text", "")
			out := fs.StringP("output", "o", "", "")
			json := fs.Bool("json", false, "")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if *json {
				fs.Set("format", "json")
			}
			err := OutputFormat(fs, *out, tt.formats)
			if tt.want == "" {
				if !errors.Is(err, ErrUsage) {
					t.Fatalf("err %v, want a usage error", err)
				}
				return
			}
			if err != nil || *format != tt.want {
				t.Fatalf("format %q, err %v; want %q", *format, err, tt.want)
			}
		})
	}
}
