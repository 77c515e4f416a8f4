// Command gentrace writes the generated traces the engines' tests and
// benchmarks use (internal/genfix, made by causal/gen) as TSV trace files,
// for the benchmark scripts and the command's golden fixtures: the
// CoDeeN-shaped CDN of the linking benchmark (scripts/bench-link.sh), the
// three-tier LAN service of the linking tests, and Project 5's multi-tier
// system of the nesting and convolution benchmarks
// (scripts/bench-nestconv.sh). It is a tool, not the product: `wirepath
// gen` is the user-facing generator. It prints what it wrote on stderr.
//
//	go run ./tools/gentrace -fixture cdn -messages 4700000 -duration 1h -o cdn.tsv
//	go run ./tools/gentrace -fixture lan -rate 20 -duration 1500ms -seed 7 -o lan.tsv
//	go run ./tools/gentrace -fixture rpc -messages 2000000 -clients 6 -o nest.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/internal/genfix"
	"github.com/wirepath/wirepath/trace"
)

// options are the command's flags.
type options struct {
	fixture  string
	messages int
	rate     float64
	duration time.Duration
	seed     uint64
	out      string
	truth    string
	rpc      genfix.RPC
	callIDs  bool
}

func main() {
	var o options
	flag.StringVar(&o.fixture, "fixture", "cdn", "fixture to generate: cdn, lan or rpc")
	flag.IntVar(&o.messages, "messages", 0, "about how many messages to write (cdn and lan: sets the request rate over -duration; rpc: stops there)")
	flag.Float64Var(&o.rate, "rate", 0, "requests per second (cdn and lan; default the fixture's)")
	flag.DurationVar(&o.duration, "duration", 0, "how long requests start (default: cdn and lan 1h with -messages, else 10s; rpc no limit)")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed")
	flag.StringVar(&o.out, "o", "", "output `file` (default stdout)")
	flag.StringVar(&o.truth, "truth", "", "also write the ground truth to `file` (gen's truth format)")
	flag.IntVar(&o.rpc.Clients, "clients", 6, "rpc: parallel clients")
	flag.DurationVar(&o.rpc.ThinkMin, "think-min", 100*time.Millisecond, "rpc: shortest think time")
	flag.DurationVar(&o.rpc.ThinkMax, "think-max", 300*time.Millisecond, "rpc: longest think time")
	flag.DurationVar(&o.rpc.Added, "added-delay", 0, "rpc: delay added at WS2 between its calls to AUTH and an application server")
	flag.BoolVar(&o.callIDs, "call-ids", true, "rpc: give calls and returns call ids")
	flag.BoolVar(&o.rpc.OneTimestamp, "one-timestamp", false, "rpc: one timestamp per message")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "gentrace:", err)
		os.Exit(1)
	}
}

// config builds the fixture's configuration from the flags.
func config(o options) (*gen.Config, error) {
	switch o.fixture {
	case "cdn", "lan":
		d := o.duration
		if d == 0 {
			d = 10 * time.Second
			if o.messages > 0 {
				d = time.Hour
			}
		}
		c := genfix.LAN(1, d, o.seed)
		if o.fixture == "cdn" {
			c = genfix.CDN(1, d, o.seed)
		}
		switch {
		case o.messages > 0:
			c.Rate = float64(o.messages) / genfix.MeanMessages(c) / d.Seconds()
		case o.rate > 0:
			c.Rate = o.rate
		default:
			c.Rate = map[string]float64{"cdn": 350, "lan": 20}[o.fixture]
		}
		return c, nil
	case "rpc":
		r := o.rpc
		r.Messages, r.Duration, r.Seed, r.NoCallIDs = o.messages, o.duration, o.seed, !o.callIDs
		if r.Messages == 0 && r.Duration == 0 {
			return nil, fmt.Errorf("rpc needs -messages or -duration")
		}
		return r.Config(), nil
	}
	return nil, fmt.Errorf("unknown fixture %q (want cdn, lan or rpc)", o.fixture)
}

func run(o options) error {
	c, err := config(o)
	if err != nil {
		return err
	}
	out, err := gen.Generate(c, gen.Options{})
	if err != nil {
		return err
	}
	if err := writeTrace(o.out, out.Trace); err != nil {
		return err
	}
	if o.truth != "" {
		if err := gen.WriteTruthFile(o.truth, out.Truth); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "gentrace: %s, %d messages, %d requests\n", o.fixture, len(out.Trace.Messages), out.Stats.Instances)
	return nil
}

// writeTrace writes t as TSV to path (stdout for "" or "-").
func writeTrace(path string, t *trace.Trace) error {
	var w io.Writer = os.Stdout
	var f *os.File
	if path != "" && path != "-" {
		var err error
		if f, err = os.Create(path); err != nil {
			return err
		}
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	err := trace.WriteTSV(bw, t)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
