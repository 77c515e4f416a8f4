// Command gentrace writes a generated multi-tier RPC trace (see package
// rpcgen) as a TSV trace file, for the nesting and convolution benchmarks
// (scripts/bench-nestconv.sh). It is a test fixture; wirepath gen is the
// user-facing generator.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/wirepath/wirepath/internal/rpcgen"
	"github.com/wirepath/wirepath/trace"
)

func main() {
	var (
		out      = flag.String("o", "", "output `file` (default stdout)")
		messages = flag.Int("messages", 0, "stop after this many messages")
		duration = flag.Duration("duration", 0, "stop at this trace time")
		clients  = flag.Int("clients", 6, "parallel clients")
		thinkMin = flag.Duration("think-min", 100*time.Millisecond, "shortest think time")
		thinkMax = flag.Duration("think-max", 300*time.Millisecond, "longest think time")
		added    = flag.Duration("added-delay", 0, "delay added at WS2 between its calls to AUTH and an application server")
		ids      = flag.Bool("call-ids", true, "give calls and returns call ids")
		oneTS    = flag.Bool("one-timestamp", false, "leave receive times unknown")
		seed     = flag.Uint64("seed", 1, "random seed")
	)
	flag.Parse()
	if err := run(*out, rpcgen.Config{
		Tracelets: rpcgen.MultiTier(*added),
		Clients:   *clients, ThinkMin: *thinkMin, ThinkMax: *thinkMax,
		Messages: *messages, Duration: *duration,
		Net: 100 * time.Microsecond, CallIDs: *ids, OneTimestamp: *oneTS, Seed: *seed,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "gentrace:", err)
		os.Exit(1)
	}
}

func run(path string, cfg rpcgen.Config) error {
	t, _, err := rpcgen.Generate(cfg)
	if err != nil {
		return err
	}
	w := os.Stdout
	if path != "" && path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := trace.WriteTSV(w, t); err != nil {
		return err
	}
	if w != os.Stdout {
		return w.Close()
	}
	return nil
}
