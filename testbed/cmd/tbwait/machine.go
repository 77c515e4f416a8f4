package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// statSample is one line of a run's NAME.stat (scripts/whatif-validate.sh:
// the time in seconds and /proc/stat's CPU line in clock ticks).
type statSample struct {
	t    float64
	busy float64 // user, nice, system, irq and softirq ticks
}

// readStat reads a NAME.stat file; nil if there is none.
func readStat(path string) []statSample {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []statSample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		var v [8]float64
		ok := true
		for i := range v {
			x, err := strconv.ParseFloat(fs[i], 64)
			v[i], ok = x, ok && err == nil
		}
		if ok {
			out = append(out, statSample{t: v[0], busy: v[1] + v[2] + v[3] + v[6] + v[7]})
		}
	}
	return out
}

// onFraction is the share of [t0, t1) (seconds) within odd windows of
// toggle seconds.
func onFraction(t0, t1, toggle float64) float64 {
	if t1 <= t0 {
		return 0
	}
	var on float64
	for t := t0; t < t1; {
		k := int64(t / toggle)
		end := min(t1, float64(k+1)*toggle)
		if k%2 == 1 {
			on += end - t
		}
		t = end
	}
	return on / (t1 - t0)
}

// machineFit fits the machine's busy cores per sampling interval (within
// [from, to] seconds) as a line in the interval's share of windows with
// the change: its value at 0 is the machine without the change, at 1 with
// it. hz is the clock ticks per second.
func machineFit(ss []statSample, from, to, toggle, hz float64) fit {
	var x, y []float64
	for i := 1; i < len(ss); i++ {
		a, b := ss[i-1], ss[i]
		if a.t < from || b.t > to || b.t <= a.t || b.busy < a.busy {
			continue
		}
		x = append(x, onFraction(a.t, b.t, toggle))
		y = append(y, (b.busy-a.busy)/hz/(b.t-a.t))
	}
	return olsFit(x, y)
}

// writeMachine prints, per run with a NAME.stat beside it, the machine's
// busy cores without and with the change (from, to: the run's window in
// seconds, warm-up left out).
func writeMachine(w io.Writer, run string, from, to, toggle, hz float64) {
	ss := readStat(strings.TrimRight(run, "/") + ".stat")
	if len(ss) == 0 {
		return
	}
	f := machineFit(ss, from, to, toggle, hz)
	if f.N < 3 {
		return
	}
	fmt.Fprintf(w, "- %s: the machine busy %.3f cores without the change, %.3f with it (%+.3f ±%.3f; /proc/stat each second, %d intervals as a line in their share of windows with the change)\n",
		baseNames([]string{run})[0], f.A, f.A+f.B, f.B, f.SE, f.N)
}
