package whatif

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CPUProfileVersion is the version of the CPU profile format this package
// reads and writes (docs/formats.md, "CPU profile").
const CPUProfileVersion = "v1"

// MaxCPUSamples bounds the samples one CPU profile may hold (a week of
// one-second samples is 604,800).
const MaxCPUSamples = 1 << 22

// CPUProfile is the CPU time a host's processes used, sampled over time:
// cumulative counters read at each sample's time (docs/formats.md). Fitted
// against the request rate in the same windows (FitCPU), it gives the
// host's CPU as an affine function of the rate, Stewart and Shen's
// resource profile (§2.1).
type CPUProfile struct {
	// File is where it was read, for notes and errors.
	File string
	// HZ is the counters' units per CPU-second (1: seconds; 100: Linux
	// clock ticks).
	HZ float64
	// Columns are the CPU counters' names; Other marks those of
	// processes that are not the placement's nodes (a load generator, a
	// capture) but share the host's cores.
	Columns []string
	Other   []bool
	// HasRequests says whether the samples carry a cumulative count of
	// requests started (column "requests"): their windows' rates come
	// from it instead of from the capture.
	HasRequests bool
	Samples     []CPUSample
	// Skipped counts the samples left out: a time not after the
	// previous sample's.
	Skipped int
}

// CPUSample is one line of a CPU profile: the time (Unix seconds), the
// counters' values and the requests started so far (with HasRequests).
type CPUSample struct {
	T        float64
	CPU      []float64
	Requests float64
	Line     int
}

// ReadCPUProfile reads a CPU profile: a header line
//
//	wirepath-cpu v1 [hz=N] [columns=time,NAME,...[,requests]] [other=NAME,...]
//
// then one sample per line, whitespace-separated numbers in the columns'
// order; "#" starts a comment. A sample whose time is not after the
// previous one's is skipped and counted. Errors name the file and line.
func ReadCPUProfile(r io.Reader, file string) (*CPUProfile, error) {
	p := &CPUProfile{File: file}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line, header := 0, false
	var timeCol, reqCol int
	for sc.Scan() {
		line++
		t, _, _ := strings.Cut(sc.Text(), "#")
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		var err error
		if !header {
			timeCol, reqCol, err = p.parseHeader(t)
			header = true
		} else {
			err = p.parseSample(t, line, timeCol, reqCol)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: empty: want the header %q", file, "wirepath-cpu "+CPUProfileVersion)
	}
	if len(p.Samples) < 2 {
		return nil, fmt.Errorf("%s: %d sample(s): a profile needs at least two", file, len(p.Samples))
	}
	return p, nil
}

// parseHeader parses the header line, returning the time column's and
// the requests column's index (-1: none).
func (p *CPUProfile) parseHeader(s string) (timeCol, reqCol int, err error) {
	f := strings.Fields(s)
	if f[0] != "wirepath-cpu" {
		return 0, 0, fmt.Errorf("not a CPU profile: want the header %q first", "wirepath-cpu "+CPUProfileVersion)
	}
	if len(f) < 2 || f[1] != CPUProfileVersion {
		v := ""
		if len(f) > 1 {
			v = f[1]
		}
		return 0, 0, fmt.Errorf("CPU profile version %q: this wirepath reads %s", v, CPUProfileVersion)
	}
	p.HZ = 1
	cols, other := []string{"time", "cpu"}, []string(nil)
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "hz":
			p.HZ, err = strconv.ParseFloat(v, 64)
			if err != nil || !(p.HZ > 0) || math.IsInf(p.HZ, 0) {
				return 0, 0, fmt.Errorf("bad hz %q: want the counters' units per CPU-second (100 for clock ticks)", v)
			}
		case "columns":
			cols = strings.Split(v, ",")
		case "other":
			other = strings.Split(v, ",")
		default:
			return 0, 0, fmt.Errorf("unknown key %q: want hz=, columns= or other=", k)
		}
	}
	return p.setColumns(cols, other)
}

// setColumns checks the columns and names the CPU counters.
func (p *CPUProfile) setColumns(cols, other []string) (timeCol, reqCol int, err error) {
	if len(cols) > 64 {
		return 0, 0, fmt.Errorf("%d columns: at most 64", len(cols))
	}
	timeCol, reqCol = -1, -1
	seen := map[string]bool{}
	for i, c := range cols {
		if c == "" || seen[c] {
			return 0, 0, fmt.Errorf("bad columns %q: an empty or repeated name", strings.Join(cols, ","))
		}
		seen[c] = true
		switch c {
		case "time":
			timeCol = i
		case "requests":
			reqCol, p.HasRequests = i, true
		default:
			p.Columns = append(p.Columns, c)
		}
	}
	if timeCol < 0 || len(p.Columns) == 0 {
		return 0, 0, fmt.Errorf("bad columns %q: want time and at least one CPU counter", strings.Join(cols, ","))
	}
	p.Other = make([]bool, len(p.Columns))
	for _, o := range other {
		i := slices.Index(p.Columns, o)
		if i < 0 {
			return 0, 0, fmt.Errorf("other=%s: not one of the CPU columns (%s)", o, strings.Join(p.Columns, ","))
		}
		p.Other[i] = true
	}
	return timeCol, reqCol, nil
}

// errTooMany is returned for a profile of more than MaxCPUSamples.
var errTooMany = fmt.Errorf("more than %d samples", MaxCPUSamples)

// parseSample parses one sample line.
func (p *CPUProfile) parseSample(s string, line, timeCol, reqCol int) error {
	f := strings.Fields(s)
	if want := len(p.Columns) + 1 + b2i(p.HasRequests); len(f) != want {
		return fmt.Errorf("%d fields: the header's columns want %d", len(f), want)
	}
	if len(p.Samples) >= MaxCPUSamples {
		return errTooMany
	}
	smp := CPUSample{Line: line, CPU: make([]float64, 0, len(p.Columns))}
	for i, x := range f {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("bad value %q in column %d: want a number, not negative", x, i+1)
		}
		switch i {
		case timeCol:
			if v <= 0 {
				return errors.New("bad time 0: want Unix seconds")
			}
			smp.T = v
		case reqCol:
			smp.Requests = v
		default:
			smp.CPU = append(smp.CPU, v)
		}
	}
	if n := len(p.Samples); n > 0 && smp.T <= p.Samples[n-1].T {
		p.Skipped++
		return nil
	}
	p.Samples = append(p.Samples, smp)
	return nil
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteCPUProfile writes p in the format ReadCPUProfile reads.
func WriteCPUProfile(w io.Writer, p *CPUProfile) error {
	bw := bufio.NewWriter(w)
	cols := append([]string{"time"}, p.Columns...)
	if p.HasRequests {
		cols = append(cols, "requests")
	}
	fmt.Fprintf(bw, "wirepath-cpu %s hz=%s columns=%s", CPUProfileVersion, strconv.FormatFloat(p.HZ, 'g', -1, 64), strings.Join(cols, ","))
	var other []string
	for i, o := range p.Other {
		if o {
			other = append(other, p.Columns[i])
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(bw, " other=%s", strings.Join(other, ","))
	}
	bw.WriteString("\n")
	for _, s := range p.Samples {
		bw.WriteString(strconv.FormatFloat(s.T, 'f', -1, 64))
		for _, c := range s.CPU {
			bw.WriteString(" " + strconv.FormatFloat(c, 'g', -1, 64))
		}
		if p.HasRequests {
			bw.WriteString(" " + strconv.FormatFloat(s.Requests, 'g', -1, 64))
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}
