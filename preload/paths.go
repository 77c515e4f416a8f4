package preload

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ExpandPaths replaces the directories among paths by the syscall traces
// in them (*.jsonl, *.jsonl.gz, *.jsonl.zst, sorted), as the library writes
// one file per process into a directory. Other paths are kept as given; a
// directory without traces is an error.
func ExpandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var m []string
		for _, pat := range []string{"*.jsonl", "*.jsonl.gz", "*.jsonl.zst"} {
			g, err := filepath.Glob(filepath.Join(p, pat))
			if err != nil {
				return nil, err
			}
			m = append(m, g...)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no *.jsonl traces in the directory", p)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}
