package preload

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkLibraryOverhead measures what libwpcap adds per call: it runs
// testdata/progs/overhead.c (10,000 iterations of each kind of call) with
// and without the library, b.N times each, and reports the difference of
// the fastest runs per traced call (half a write+read pair) and per
// untraced file read. The program measures its own CPU time, which a busy
// machine disturbs less than wall-clock time; still, prefer a quiet one:
//
//	go test -run='^$' -bench=LibraryOverhead -benchtime=20x ./preload/
func BenchmarkLibraryOverhead(b *testing.B) {
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("gcc not installed")
	}
	dir := b.TempDir()
	lib := buildLib(b, dir)
	prog := buildProg(b, dir, "overhead")
	const iters = 10000
	run := func(preload bool) map[string]float64 {
		cmd := exec.Command(prog, strconv.Itoa(iters))
		logs := filepath.Join(dir, "logs")
		if preload {
			os.MkdirAll(logs, 0o755)
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "WIREPATH_PRELOAD_DIR="+logs)
		}
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(logs)
		m := map[string]float64{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			m[f[0]] = v
		}
		return m
	}
	best := func(dst, m map[string]float64) {
		for k, v := range m {
			if old, ok := dst[k]; !ok || v < old {
				dst[k] = v
			}
		}
	}
	base, with := map[string]float64{}, map[string]float64{}
	for i := 0; i < b.N; i++ {
		best(base, run(false))
		best(with, run(true))
	}
	if len(base) != 3 || len(with) != 3 {
		b.Fatalf("overhead program printed %v and %v", base, with)
	}
	b.ReportMetric(math.Max(with["file_read"]-base["file_read"], 0), "ns/untraced-read")
	b.ReportMetric((with["unix_rw"]-base["unix_rw"])/2, "ns/traced-unix-call")
	b.ReportMetric((with["udp_rw"]-base["udp_rw"])/2, "ns/traced-udp-call")
	b.ReportMetric(base["unix_rw"]/2, "ns/unix-call")
}
