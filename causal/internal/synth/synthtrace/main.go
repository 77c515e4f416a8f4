// Command synthtrace writes a synthetic message trace made by
// causal/internal/synth, as TSV: the CoDeeN-shaped CDN the linking
// benchmark uses (scripts/bench-link.sh), or the three-tier LAN service of
// the engine tests, for fixtures. It prints what it wrote on stderr.
//
//	go run ./causal/internal/synth/synthtrace -messages 4700000 -o cdn.tsv
//	go run ./causal/internal/synth/synthtrace -system multitier -rate 20 -duration 2s -o small.tsv
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
	system := flag.String("system", "cdn", "system to simulate: cdn or multitier")
	n := flag.Int("messages", 0, "about how many messages to write (sets the request rate; 0 = use -rate)")
	rate := flag.Float64("rate", 350, "requests per second")
	dur := flag.Duration("duration", time.Hour, "how long the trace lasts")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "", "output file (default stdout)")
	flag.Parse()
	if err := run(*system, *n, *rate, *dur, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "synthtrace:", err)
		os.Exit(1)
	}
}

func run(system string, n int, rate float64, dur time.Duration, seed uint64, out string) error {
	var sys synth.System
	switch system {
	case "cdn":
		sys = synth.CDN(rate, dur, seed)
	case "multitier":
		sys = synth.MultiTier(rate, dur, seed)
	default:
		return fmt.Errorf("unknown system %q", system)
	}
	if n > 0 {
		sys.Rate = float64(n) / sys.MeanMessages() / dur.Seconds()
	}
	t, _, err := synth.Generate(sys)
	if err != nil {
		return err
	}
	w := os.Stdout
	if out != "" && out != "-" {
		if w, err = os.Create(out); err != nil {
			return err
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := trace.WriteTSV(bw, t); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "synthtrace: %s, %d messages, %.0f requests/s over %v\n", system, len(t.Messages), sys.Rate, dur)
	if w != os.Stdout {
		return w.Close()
	}
	return nil
}
