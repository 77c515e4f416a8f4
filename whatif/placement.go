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

// HostSpec is one host of a placement: the nodes that share it and its
// cores, as the user states them.
type HostSpec struct {
	// Name is the host's name (name=), else its nodes joined by "+".
	Name  string
	Nodes []string
	Cores int
	// Busy is the share of the host's cores the nodes kept busy during
	// the capture (busy=, from sar, top or the cgroup's cpu.stat), NaN
	// when not given.
	Busy float64
	// BusyUnc is its standard error (busy=0.2±0.01), 0 when not given.
	BusyUnc float64
	// CPUFiles are its CPU profiles (cpu=FILE,FILE...), instead of
	// busy=: the host's CPU fitted as a line in the request rate
	// (Model.FitCPU). The caller reads them into Profiles before Place.
	CPUFiles []string
	Profiles []*CPUProfile
	// CPUModel is the model of the host's CPU against the request rate
	// its saturation comes from (cpu-model=): CPUModelLine (the default,
	// Stewart and Shen's line) or CPUModelWake (FitWake).
	CPUModel string
	// Where is where it was written ("FILE:LINE" or "--host-cores"),
	// for errors.
	Where string
}

// ParseHostSpec parses one host as --host-cores and placement files write
// it:
//
//	NODE,NODE,...=CORES [busy=FRACTION|PERCENT%[±UNC] | cpu=FILE,... [cpu-model=line|wake]] [name=HOST]
//
// Node names are those of the signatures (Go-quoted when they hold a
// space, a comma or "=").
func ParseHostSpec(s string) (HostSpec, error) {
	f, err := fields(s)
	if err != nil {
		return HostSpec{}, err
	}
	if len(f) == 0 {
		return HostSpec{}, errors.New("empty host: want NODE,NODE,...=CORES")
	}
	h := HostSpec{Busy: math.NaN()}
	if err := h.parseNodes(f[0]); err != nil {
		return HostSpec{}, err
	}
	for _, x := range f[1:] {
		k, v, _ := strings.Cut(x, "=")
		switch k {
		case "busy":
			if h.Busy, h.BusyUnc, err = parseBusy(v); err != nil {
				return HostSpec{}, err
			}
		case "cpu":
			h.CPUFiles = splitNames(v)
			for i, n := range h.CPUFiles {
				h.CPUFiles[i] = unquote(n)
			}
			if slices.Contains(h.CPUFiles, "") {
				return HostSpec{}, fmt.Errorf("bad cpu %q: want CPU profile files, separated by commas", v)
			}
		case "cpu-model":
			if v != CPUModelLine && v != CPUModelWake {
				return HostSpec{}, fmt.Errorf("bad cpu-model %q: want %s or %s", v, CPUModelLine, CPUModelWake)
			}
			h.CPUModel = v
		case "name":
			h.Name = unquote(v)
		default:
			return HostSpec{}, fmt.Errorf("unknown key %q: want busy=, cpu=, cpu-model= or name=", k)
		}
	}
	if h.CPUModel != "" && len(h.CPUFiles) == 0 {
		return HostSpec{}, errors.New("cpu-model= without cpu=: the model is fitted to the CPU profiles")
	}
	if len(h.CPUFiles) > 0 && !math.IsNaN(h.Busy) {
		return HostSpec{}, errors.New("busy= and cpu= both given: the CPU profile gives the busy share, give one")
	}
	if h.Name == "" {
		h.Name = strings.Join(h.Nodes, "+")
	}
	return h, nil
}

// parseNodes parses "NODE,NODE,...=CORES".
func (h *HostSpec) parseNodes(s string) error {
	i := strings.LastIndex(s, "=")
	if i < 0 {
		return fmt.Errorf("bad host %q: want NODE,NODE,...=CORES", s)
	}
	c, err := strconv.Atoi(s[i+1:])
	if err != nil || c < 1 || c > 4096 {
		return fmt.Errorf("bad cores %q: want a whole number from 1 to 4096", s[i+1:])
	}
	h.Cores = c
	seen := map[string]bool{}
	for _, n := range splitNames(s[:i]) {
		n = strings.TrimSpace(n)
		if strings.HasPrefix(n, `"`) {
			u, err := strconv.Unquote(n)
			if err != nil {
				return fmt.Errorf("bad quoted name %s: want a Go-quoted string", n)
			}
			n = u
		}
		if n == "" {
			return fmt.Errorf("bad host %q: an empty node name", s)
		}
		if seen[n] {
			return fmt.Errorf("bad host %q: node %s listed twice", s, n)
		}
		seen[n] = true
		h.Nodes = append(h.Nodes, n)
	}
	if len(h.Nodes) == 0 {
		return fmt.Errorf("bad host %q: no nodes", s)
	}
	return nil
}

// splitNames splits a comma-separated list, keeping Go-quoted names whole.
func splitNames(s string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// parseBusy parses a share of the cores and its standard error:
// 0.35, 35%, 0.35±0.02 or 35%±2%.
func parseBusy(s string) (v, unc float64, err error) {
	a, b, ok := strings.Cut(s, "±")
	if v, err = parseShare(a); err != nil || !ok {
		return v, 0, err
	}
	if unc, err = parseShare(b); err != nil {
		return 0, 0, fmt.Errorf("bad busy %q: the uncertainty after ± is a share as well", s)
	}
	return v, unc, nil
}

// parseShare parses a share of the cores: 0.35 or 35%.
func parseShare(s string) (float64, error) {
	t, pct := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(t, 64)
	if pct {
		v /= 100
	}
	if err != nil || !(v > 0 && v < 1) {
		return 0, fmt.Errorf("bad busy %q: want the share of the cores busy, between 0 and 1 (0.35) or a percentage (35%%)", s)
	}
	return v, nil
}

// ReadPlacement reads a placement file: one host per line as
// ParseHostSpec reads them, "#" starts a comment. A node on two hosts is
// an error. Errors name the file and line.
func ReadPlacement(r io.Reader, file string) ([]HostSpec, error) {
	var out []HostSpec
	on := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t, _, _ := strings.Cut(sc.Text(), "#")
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		h, err := ParseHostSpec(t)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		h.Where = fmt.Sprintf("%s:%d", file, line)
		if err := claim(on, h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no hosts", file)
	}
	return out, nil
}

// claim records h's nodes in on (node → where), failing for a node
// already on another host.
func claim(on map[string]string, h HostSpec) error {
	for _, n := range h.Nodes {
		if w, ok := on[n]; ok {
			return fmt.Errorf("%s: node %s is already on a host (%s)", h.Where, n, w)
		}
		on[n] = h.Where
	}
	return nil
}

// CheckPlacement checks that no node is on two of hosts.
func CheckPlacement(hosts []HostSpec) error {
	on := map[string]string{}
	for _, h := range hosts {
		if err := claim(on, h); err != nil {
			return err
		}
	}
	return nil
}
