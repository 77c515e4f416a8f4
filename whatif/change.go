package whatif

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wirepath/wirepath/causal"
)

// Kind is what a Change changes.
type Kind string

// The kinds of change.
const (
	// ChangeLink changes one link's round trip and/or bandwidth, or gives
	// their current values.
	ChangeLink Kind = "link"
	// ChangeHost changes every link of one node.
	ChangeHost Kind = "host"
	// ChangeColocate puts two nodes on one host: their link becomes local
	// (no round trip, no transmission time) and their work shares one
	// server.
	ChangeColocate Kind = "colocate"
	// ChangeSeparate moves two nodes of one host apart: their link gets
	// the round trip given (else an estimate) and their work two servers.
	ChangeSeparate Kind = "separate"
	// ChangeLoad scales the request rate.
	ChangeLoad Kind = "load"
	// ChangeFaster makes a node's service k times faster.
	ChangeFaster Kind = "faster"
)

// Change is one change of a scenario. Durations are µs, bandwidths bits
// per second; NaN means not given.
type Change struct {
	Kind Kind
	// A and B are the link's ends (ChangeLink, ChangeColocate,
	// ChangeSeparate) or the node (A: ChangeHost, ChangeFaster).
	A, B string
	// RTTUS is the new round trip, or with RTTDelta the change of it.
	RTTUS    float64
	RTTDelta bool
	// BandwidthBPS is the new bandwidth.
	BandwidthBPS float64
	// CurrentRTTUS and CurrentBWBPS give the link's current values
	// instead of the measured ones.
	CurrentRTTUS float64
	CurrentBWBPS float64
	// Factor is the load factor (ChangeLoad) or the speed-up
	// (ChangeFaster).
	Factor float64
	// Text is the change as written.
	Text string
}

// Scenario is a named set of changes made at once.
type Scenario struct {
	Name    string
	Changes []Change
}

// newChange returns a change of kind k with nothing given.
func newChange(k Kind) Change {
	nan := math.NaN()
	return Change{Kind: k, RTTUS: nan, BandwidthBPS: nan, CurrentRTTUS: nan, CurrentBWBPS: nan, Factor: nan}
}

// ParseChange parses one change as the command line and scenario files
// write it:
//
//	link A->B [rtt=DUR|+DUR|-DUR] [bandwidth=RATE] [current-rtt=DUR] [current-bandwidth=RATE]
//	host NODE rtt=+DUR|DUR [bandwidth=RATE]
//	colocate A B
//	separate A B [rtt=DUR] [bandwidth=RATE]
//	load FACTOR                (the request rate times FACTOR)
//	faster NODE FACTOR         (NODE's service FACTOR times faster)
//
// Node names are those of the signatures (quoted as the signature
// grammar quotes them when they hold spaces, "(),", or "->").
func ParseChange(s string) (Change, error) {
	f, err := fields(s)
	if err != nil {
		return Change{}, err
	}
	if len(f) == 0 {
		return Change{}, errors.New("empty change")
	}
	c := newChange(Kind(f[0]))
	c.Text = strings.TrimSpace(s)
	args, kv := splitArgs(f[1:])
	switch c.Kind {
	case ChangeLink:
		err = c.parseLink(args, kv)
	case ChangeHost:
		err = c.parseNode(args, kv, 1)
	case ChangeColocate, ChangeSeparate:
		err = c.parsePair(args, kv)
	case ChangeLoad:
		err = c.parseFactor(args, kv, 0)
	case ChangeFaster:
		err = c.parseFactor(args, kv, 1)
	default:
		return Change{}, fmt.Errorf("unknown change %q: want link, host, colocate, separate, load or faster", f[0])
	}
	if err != nil {
		return Change{}, fmt.Errorf("%s: %w", c.Text, err)
	}
	return c, nil
}

// fields splits s at spaces, keeping Go-quoted names whole.
func fields(s string) ([]string, error) {
	var out []string
	s = strings.TrimSpace(s)
	for s != "" {
		var f string
		if i := strings.IndexAny(s, " \t"); i < 0 {
			f, s = s, ""
		} else {
			f, s = s[:i], strings.TrimSpace(s[i:])
		}
		for strings.Count(f, `"`)%2 == 1 && s != "" {
			// A quoted name with a space: take up to the closing quote.
			i := strings.Index(s, `"`)
			if i < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", f+" "+s)
			}
			rest := s[i+1:]
			j := strings.IndexAny(rest, " \t")
			if j < 0 {
				j = len(rest)
			}
			f, s = f+" "+s[:i+1]+rest[:j], strings.TrimSpace(rest[j:])
		}
		out = append(out, f)
	}
	return out, nil
}

// splitArgs separates positional arguments from key=value pairs.
func splitArgs(f []string) (args []string, kv map[string]string) {
	kv = map[string]string{}
	for _, x := range f {
		if k, v, ok := strings.Cut(x, "="); ok && !strings.HasPrefix(x, `"`) {
			kv[k] = v
			continue
		}
		args = append(args, x)
	}
	return args, kv
}

func (c *Change) parseLink(args []string, kv map[string]string) error {
	if len(args) != 1 {
		return errors.New("want one link A->B")
	}
	a, b, err := ParseLink(args[0])
	if err != nil {
		return err
	}
	c.A, c.B = a, b
	if err := c.parseKV(kv, "rtt", "bandwidth", "current-rtt", "current-bandwidth"); err != nil {
		return err
	}
	if math.IsNaN(c.RTTUS) && math.IsNaN(c.BandwidthBPS) && math.IsNaN(c.CurrentRTTUS) && math.IsNaN(c.CurrentBWBPS) {
		return errors.New("a link change needs rtt=, bandwidth=, current-rtt= or current-bandwidth=")
	}
	return nil
}

func (c *Change) parseNode(args []string, kv map[string]string, n int) error {
	if len(args) != n {
		return errors.New("want one node")
	}
	c.A = unquote(args[0])
	if err := c.parseKV(kv, "rtt", "bandwidth"); err != nil {
		return err
	}
	if math.IsNaN(c.RTTUS) && math.IsNaN(c.BandwidthBPS) {
		return errors.New("a host change needs rtt= and/or bandwidth=")
	}
	return nil
}

func (c *Change) parsePair(args []string, kv map[string]string) error {
	if len(args) != 2 {
		return errors.New("want two nodes")
	}
	c.A, c.B = unquote(args[0]), unquote(args[1])
	if c.Kind == ChangeColocate {
		return c.parseKV(kv)
	}
	if err := c.parseKV(kv, "rtt", "bandwidth"); err != nil {
		return err
	}
	if c.RTTDelta {
		return errors.New("separate takes the round trip of the new link, not a change")
	}
	return nil
}

func (c *Change) parseFactor(args []string, kv map[string]string, nodes int) error {
	if len(args) != nodes+1 {
		if nodes == 0 {
			return errors.New("want a factor")
		}
		return errors.New("want a node and a factor")
	}
	if nodes == 1 {
		c.A = unquote(args[0])
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(args[nodes], "x"), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("bad factor %q: want a positive number", args[nodes])
	}
	c.Factor = v
	return c.parseKV(kv)
}

// parseKV parses the keys allowed.
func (c *Change) parseKV(kv map[string]string, allowed ...string) error {
	for k, v := range kv {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			return fmt.Errorf("unknown key %q", k)
		}
		var err error
		switch k {
		case "rtt":
			c.RTTUS, c.RTTDelta, err = parseRTT(v)
		case "current-rtt":
			var delta bool
			c.CurrentRTTUS, delta, err = parseRTT(v)
			if delta {
				err = errors.New("current-rtt takes a round trip, not a change")
			}
		case "bandwidth":
			c.BandwidthBPS, err = ParseBandwidth(v)
		case "current-bandwidth":
			c.CurrentBWBPS, err = ParseBandwidth(v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseRTT parses a round trip ("5ms", "250us") or a change of one
// ("+5ms", "-1ms"), returning µs.
func parseRTT(s string) (float64, bool, error) {
	delta := strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-")
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("bad round trip %q: want a duration such as 5ms, +5ms or 250us", s)
	}
	if !delta && d < 0 {
		return 0, false, fmt.Errorf("bad round trip %q", s)
	}
	return float64(d) / 1e3, delta, nil
}

func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// ReadScenarios reads scenarios from a file: one change per line (as
// ParseChange reads them), "#" starts a comment, and a line "[NAME]"
// starts a scenario of that name (changes before the first are one
// scenario named after the file). Errors name the file and line.
func ReadScenarios(r io.Reader, file string) ([]Scenario, error) {
	var out []Scenario
	cur := -1
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if i := strings.Index(t, "#"); i >= 0 {
			t = t[:i]
		}
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
			out = append(out, Scenario{Name: strings.TrimSpace(t[1 : len(t)-1])})
			cur = len(out) - 1
			continue
		}
		c, err := ParseChange(t)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if cur < 0 {
			out = append(out, Scenario{Name: file})
			cur = 0
		}
		out[cur].Changes = append(out[cur].Changes, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	for _, s := range out {
		if len(s.Changes) == 0 {
			return nil, fmt.Errorf("%s: scenario %q has no changes", file, s.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no changes", file)
	}
	return out, nil
}

// String writes the change back in ParseChange's form.
func (c Change) String() string {
	if c.Text != "" {
		return c.Text
	}
	q := causal.QuoteName
	switch c.Kind {
	case ChangeLink:
		return "link " + q(c.A) + "->" + q(c.B)
	case ChangeColocate, ChangeSeparate:
		return string(c.Kind) + " " + q(c.A) + " " + q(c.B)
	case ChangeLoad:
		return "load " + strconv.FormatFloat(c.Factor, 'g', -1, 64)
	}
	return string(c.Kind) + " " + q(c.A)
}
