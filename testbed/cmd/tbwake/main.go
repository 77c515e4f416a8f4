// Command tbwake measures what waking a process costs on this machine after
// it was idle: a UDP echo on the loopback (a second process it starts,
// itself with -echo) is pinged N times after each of several idle gaps, and
// the round trips are summarised per gap. A round trip wakes two processes
// (the echo, then the pinger), so the growth of the round trip with the gap
// is twice the extra cost of one wake-up after that much idle time
// (docs/whatif.md, **A wake-up probe**).
//
//	tbwake [-n 300] [-gaps 0,100us,1ms,5ms,20ms]
//
// Run it on an otherwise quiet machine; it prints one line per gap: mean,
// median and 90th percentile of the round trip in µs.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	echo := flag.Bool("echo", false, "serve as the echo (started by tbwake itself)")
	n := flag.Int("n", 300, "round trips per gap")
	gapList := flag.String("gaps", "0,100us,1ms,5ms,20ms", "idle gaps before each round trip (comma-separated durations)")
	addr := flag.String("addr", "127.0.0.1:9999", "the echo's UDP address")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("tbwake: ")
	if *echo {
		serveEcho(*addr)
		return
	}
	gaps, err := parseGaps(*gapList)
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-echo", "-addr", *addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(300 * time.Millisecond)
	c, err := net.Dial("udp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, gap := range gaps {
		rtts, err := probe(c, gap, *n)
		if err != nil {
			log.Fatal(err)
		}
		s := summarise(rtts)
		fmt.Printf("gap %v: mean %.0f µs, median %.0f, p90 %.0f (%d round trips)\n", gap, s.mean, s.median, s.p90, len(rtts))
	}
}

// serveEcho answers every datagram on addr with itself.
func serveEcho(addr string) {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		log.Fatal(err)
	}
	b := make([]byte, 64)
	for {
		n, a, err := c.ReadFrom(b)
		if err != nil {
			return
		}
		_, _ = c.WriteTo(b[:n], a)
	}
}

// probe makes n round trips on c, each after sleeping gap, and returns
// their durations in µs.
func probe(c net.Conn, gap time.Duration, n int) ([]float64, error) {
	b := make([]byte, 64)
	rtts := make([]float64, 0, n)
	for range n {
		if gap > 0 {
			time.Sleep(gap)
		}
		t := time.Now()
		if _, err := c.Write(b[:8]); err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(b); err != nil {
			return nil, fmt.Errorf("no echo after gap %v: %w", gap, err)
		}
		rtts = append(rtts, float64(time.Since(t).Nanoseconds())/1e3)
	}
	return rtts, nil
}

// parseGaps reads a comma-separated list of durations ("0" allowed).
func parseGaps(s string) ([]time.Duration, error) {
	var gaps []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "0" {
			gaps = append(gaps, 0)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("-gaps: %q is not a duration", f)
		}
		gaps = append(gaps, d)
	}
	return gaps, nil
}

// stats is a sample's mean, median and 90th percentile.
type stats struct{ mean, median, p90 float64 }

// summarise returns the mean, median and 90th percentile (nearest rank)
// of xs, which it sorts.
func summarise(xs []float64) stats {
	if len(xs) == 0 {
		return stats{}
	}
	sort.Float64s(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	rank := func(p float64) float64 {
		i := int(p*float64(len(xs)) + 0.5)
		return xs[min(max(i-1, 0), len(xs)-1)]
	}
	return stats{mean: sum / float64(len(xs)), median: rank(0.5), p90: rank(0.9)}
}
