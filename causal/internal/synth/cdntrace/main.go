// Command cdntrace writes a synthetic CDN message trace shaped like the
// CoDeeN trace of WAP5 (untraced clients, 115 proxies, peer proxies, DNS
// and untraced origins, unsynchronised clocks) for the linking benchmark
// (scripts/bench-link.sh). It prints what it wrote on stderr.
//
//	go run ./causal/internal/synth/cdntrace -messages 4700000 -o cdn.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/wirepath/wirepath/causal/internal/synth"
	"github.com/wirepath/wirepath/trace"
)

func main() {
	n := flag.Int("messages", 4_700_000, "about how many messages to write")
	dur := flag.Duration("duration", time.Hour, "how long the trace lasts")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "", "output file (default stdout)")
	flag.Parse()
	if err := run(*n, *dur, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "cdntrace:", err)
		os.Exit(1)
	}
}

func run(n int, dur time.Duration, seed uint64, out string) error {
	sys := synth.CDN(1, dur, seed)
	reqs := int(float64(n) / sys.MeanMessages())
	sys.Rate = float64(reqs) / dur.Seconds()
	t, _, err := synth.Generate(sys)
	if err != nil {
		return err
	}
	w := os.Stdout
	if out != "" && out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := trace.WriteTSV(bw, t); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cdntrace: %d messages, %.0f requests/s over %v\n", len(t.Messages), sys.Rate, dur)
	if w != os.Stdout {
		return w.Close()
	}
	return nil
}
