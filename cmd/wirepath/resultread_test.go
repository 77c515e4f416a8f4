package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
)

// resultFixtures returns every saved result in a testdata directory of the
// module (*.result.json): the report package's fixtures, this command's,
// and testdata/results, which holds the files readers used to disagree on
// (trailing data, a hop sent by the wrong node, envelopes).
func resultFixtures(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".result.json") && strings.Contains(filepath.ToSlash(path), "/testdata/") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only %d result fixtures found: %v", len(out), out)
	}
	return out
}

// TestCommandsReadResultsAlike runs every command that reads a saved result
// (report, whatif, score) on every result fixture and checks that they
// agree with the one reader, causal/resultjson, and so with each other: a
// file it refuses, each command refuses with its error; a file it accepts,
// report re-renders unchanged, and whatif and score read (or, when the
// file holds several engines' results, refuse saying so).
func TestCommandsReadResultsAlike(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "gen", "multitier", "--duration", "2s", "--seed", "1", "-o", filepath.Join(dir, "mt.tsv")); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr.String())
	}
	truth := filepath.Join(dir, "mt.truth.tsv")
	for _, path := range resultFixtures(t) {
		rs, readErr := resultjson.ReadResultsFile(path)
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name+".out.json")
			runs := map[string][]string{
				"report": {"report", path, "--format", "json", "-o", out},
				"whatif": {"whatif", path, "--json", "--top", "0"},
				"score":  {"score", path, truth, "--json"},
			}
			for cmd, args := range runs {
				var stdout, stderr bytes.Buffer
				code := runArgs(&stdout, &stderr, args...)
				want := ""
				switch {
				case readErr != nil:
					want = readErr.Error()
				case len(rs) > 1 && cmd != "report":
					want = fmt.Sprintf("%s holds the results of %d engines", path, len(rs))
				}
				if want != "" {
					if code != 1 || !strings.Contains(stderr.String(), want) {
						t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", cmd, code, stderr.String(), want)
					}
					continue
				}
				if code != 0 {
					t.Errorf("%s: exit %d on a result the reader accepts: %s", cmd, code, stderr.String())
				}
			}
			if readErr == nil {
				checkRerendered(t, out, rs)
			}
		})
	}
}

// checkRerendered checks that report's JSON of a file is what the reader
// read from it.
func checkRerendered(t *testing.T, out string, rs []*causal.Result) {
	t.Helper()
	back, err := resultjson.ReadResultsFile(out)
	if err != nil {
		t.Fatalf("report's output: %v", err)
	}
	if len(back) != len(rs) {
		t.Fatalf("report wrote %d results, the reader read %d", len(back), len(rs))
	}
	for i := range rs {
		var a, b bytes.Buffer
		if err := resultjson.Write(&a, rs[i]); err != nil {
			t.Fatal(err)
		}
		if err := resultjson.Write(&b, back[i]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("result %d: report re-rendered it differently from what the reader read", i)
		}
	}
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
}
