// Package genfix holds the generated traces the engines' tests and
// benchmarks run on, as configurations of the trace generator
// (causal/gen): the three-tier LAN service and the CoDeeN-shaped CDN of
// the linking engine's tests, and Project 5's multi-tier system as the
// nesting and convolution engines' tests use it. Each is a YAML file
// embedded here plus the few parameters the tests vary; the truth is
// gen's.
//
// It is a test fixture and a tool's library (tools/gentrace), not part of
// the product: `wirepath gen` ships its own configurations.
package genfix

import (
	"bytes"
	"embed"
	"fmt"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

//go:embed *.yaml
var files embed.FS

// load parses the embedded configuration name.yaml. The files are part of
// the package, so a failure is a programming error.
func load(name string) *gen.Config {
	src, err := files.ReadFile(name + ".yaml")
	if err != nil {
		panic(err)
	}
	c, err := gen.ParseConfig(bytes.NewReader(src), "genfix/"+name+".yaml")
	if err != nil {
		panic(err)
	}
	return c
}

// lasting sets c to start instances at rate per second for d, seeded.
func lasting(c *gen.Config, rate float64, d time.Duration, seed uint64) *gen.Config {
	c.Rate, c.Duration, c.Instances, c.Messages, c.Seed = rate, gen.Duration(d), 0, 0, seed
	return c
}

// LAN returns the three-tier LAN service (lan.yaml): requests arriving at
// rate per second for d.
func LAN(rate float64, d time.Duration, seed uint64) *gen.Config {
	return lasting(load("lan"), rate, d, seed)
}

// CDN returns the CoDeeN-shaped CDN (cdn.yaml): requests arriving at rate
// per second for d, every host's clock off by up to 10 s.
func CDN(rate float64, d time.Duration, seed uint64) *gen.Config {
	return lasting(load("cdn"), rate, d, seed)
}

// RPC describes a trace of Project 5's multi-tier system (rpc.yaml).
type RPC struct {
	// Clients run in parallel, each one request at a time, thinking a
	// uniformly random time in [ThinkMin, ThinkMax] between two (default
	// 6 clients, 100 to 300 ms).
	Clients            int
	ThinkMin, ThinkMax time.Duration
	// Messages stops the clients once this many messages were generated;
	// Duration once that much time passed (at least one is needed).
	Messages int
	Duration time.Duration
	// Added is inserted at WS2 between its calls to AUTH and to the
	// application server (200 ms in the paper's "added-delay" trace).
	Added time.Duration
	// NoCallIDs leaves the call ids out; OneTimestamp gives each message
	// one timestamp (Project 5's traces).
	NoCallIDs, OneTimestamp bool
	// Skew shifts the clocks of nodes.
	Skew map[string]time.Duration
	Seed uint64
}

// Config returns the generator configuration of r.
func (r RPC) Config() *gen.Config {
	c := load("rpc")
	if r.Clients > 0 {
		c.Clients = r.Clients
	}
	if r.ThinkMax > 0 {
		c.Think = gen.Range{Min: r.ThinkMin, Max: r.ThinkMax}
	}
	c.Messages, c.Duration, c.Seed = r.Messages, gen.Duration(r.Duration), r.Seed
	if r.NoCallIDs {
		f := false
		c.CallIDs = &f
	}
	if r.OneTimestamp {
		c.Timestamps = "single"
	}
	for n, d := range r.Skew {
		if c.Skew == nil {
			c.Skew = make(map[string]gen.Duration)
		}
		c.Skew[n] = gen.Duration(d)
	}
	if r.Added > 0 {
		for _, t := range c.Tracelets {
			// The AP call after AUTH's return in WS2's requests with both.
			if calls := t.RPC.Calls; len(calls) == 2 {
				g := *calls[1].Delay
				g.Mean += r.Added
				calls[1].DelayBy = map[string]gen.Gauss{"WS2": g}
			}
		}
	}
	return c
}

// Generate generates c and returns the trace and its truth indexed like
// the trace.
func Generate(c *gen.Config) (*trace.Trace, *gen.TraceTruth, error) {
	out, err := gen.Generate(c, gen.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("genfix: %s: %w", c.Name, err)
	}
	return out.Trace, out.Truth.OnTrace(), nil
}

// MeanMessages returns the mean number of messages an instance of c's
// shared tracelets has, weighted by tracelet weight: two per call of an
// rpc tracelet, one per message of a messages tracelet.
func MeanMessages(c *gen.Config) float64 {
	var size func(cl *gen.Call) int
	size = func(cl *gen.Call) int {
		n := 2
		for _, s := range cl.Calls {
			n += size(s)
		}
		return n
	}
	tot, w := 0.0, 0.0
	for _, t := range c.Tracelets {
		if t.Clients > 0 {
			continue
		}
		wt := t.Weight
		if wt == 0 {
			wt = 1
		}
		n := len(t.Messages)
		if t.RPC != nil {
			n = size(t.RPC)
		}
		tot += wt * float64(n)
		w += wt
	}
	if w == 0 {
		return 0
	}
	return tot / w
}
