package gen

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// smallTrace generates at most a few instances of c, or reports false when
// c asks for more clients or nodes than a fuzz iteration should build.
func smallTrace(t *testing.T, c *Config) (*Output, bool) {
	if c.Clients > 64 || len(c.Nodes) > 64 {
		return nil, false
	}
	for _, tl := range c.Tracelets {
		if tl.Clients > 64 {
			return nil, false
		}
	}
	cc := *c
	cc.Instances = 3
	out, err := Generate(&cc, Options{MaxMessages: 100000})
	if err != nil {
		if strings.Contains(err.Error(), "limit") {
			return nil, false
		}
		t.Fatalf("a config that validated does not generate: %v", err)
	}
	return out, true
}

// FuzzParseConfig checks that the parser never panics and that every config
// it accepts validates, marshals to YAML that parses to the same config (a
// fixed point), and generates a consistent truth.
func FuzzParseConfig(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "testdata/gen/*.yaml")
	for _, b := range Builtins() {
		f.Add(b.Source) // every shipped config: rpc, parallel, delay_by, messages
	}
	f.Add([]byte(`{"duration":"1s","nodes":{"B":{}},"tracelets":[{"name":"x","rpc":{"to":"B"}}]}`))                                 // JSON
	f.Add([]byte("instances: 5\nnodes: {B: {proto: udp}}\ntracelets: [{name: m, messages: [{to: B}, {after: '', to: CLIENT}]}]\n")) // bad after
	f.Add([]byte("duration: 1s\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: 'B:2|B:1', delay: {mean: 1ms, sd: 2ms}}}]\n"))      // weights, mapping delay
	f.Add([]byte("duration: 1s\nskew: {CLIENT: -5s}\ndrop: {rate: 10}\nnodes: {B: {}}\ntracelets: [{name: x, clients: 3, think: 1s..2s, rpc: {to: B}}]\n"))
	f.Add([]byte("&a [*a]")) // alias cycle
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(bytes.NewReader(data), "f")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
		y1, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := ParseConfig(bytes.NewReader(y1), "again")
		if err != nil {
			t.Fatalf("marshalled config does not parse: %v\n%s", err, y1)
		}
		y2, _ := yaml.Marshal(c2)
		if !bytes.Equal(y1, y2) {
			t.Fatalf("marshal is not a fixed point:\n%s\n---\n%s", y1, y2)
		}
		if c.Duration > Duration(time.Hour) {
			return
		}
		out, ok := smallTrace(t, c)
		if !ok {
			return
		}
		if err := out.Truth.check(); err != nil {
			t.Fatal(err)
		}
		if _, err := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()}); err != nil {
			t.Fatalf("true instances rejected by the aggregator: %v", err)
		}
		out2, _ := smallTrace(t, c2)
		var b1, b2 bytes.Buffer
		trace.WriteTSV(&b1, out.Trace)
		trace.WriteTSV(&b2, out2.Trace)
		if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Fatal("a config and its marshalled form generate different traces")
		}
	})
}

// FuzzReadTruth checks that the truth reader never panics, that what it
// accepts satisfies the truth invariants (trees with one root, parents in
// the same instance), and that writing it back reads to the same bytes.
func FuzzReadTruth(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Strings(f, "testdata/demo/ground-truth.tsv")
	c := mustBuiltin(f, "children-d-cc", 0)
	c.Instances = 4
	c.Duration = 0
	c.Drop = Drop{Random: 0.2}
	out := mustGenerate(f, c)
	var buf bytes.Buffer
	if err := WriteTruth(&buf, out.Truth); err != nil {
		f.Fatal(err)
	}
	good := buf.String()
	f.Add(good)                                                    // a valid truth with lost messages
	f.Add(strings.Replace(good, "\t-\t", "\t0\t", 1))              // a root given a parent
	f.Add(strings.ReplaceAll(good, "\n", "\r\n"))                  // CRLF
	f.Add(good[:len(good)/2])                                      // cut in a row
	f.Add(strings.Replace(good, `"observed":`, `"observed":1`, 1)) // more observed than rows
	f.Add(TruthMagic + "\n#truth {\"version\":1,\"tracelets\":[\"a\"]}\nid\tinstance\tparent\tobserved\ttracelet\tsend_ts\n0\t0\t-\t-\ta\t5\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ReadTruth(strings.NewReader(in), "f")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := tr.check(); err != nil {
			t.Fatal(err)
		}
		insts := tr.Instances()
		total := 0
		for _, in := range insts {
			total += len(in.Nodes)
		}
		if total != len(tr.Trace.Messages) {
			t.Fatalf("instances hold %d messages of %d", total, len(tr.Trace.Messages))
		}
		if _, err := tr.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()}); err != nil {
			t.Fatal(err)
		}
		for o, i := range tr.ByObserved() {
			if i >= 0 && int(tr.Observed[i]) != o {
				t.Fatal("ByObserved is not the inverse of Observed")
			}
		}
		var b1, b2 bytes.Buffer
		if err := WriteTruth(&b1, tr); err != nil {
			t.Fatal(err)
		}
		tr2, err := ReadTruth(bytes.NewReader(b1.Bytes()), "again")
		if err != nil {
			t.Fatalf("written truth does not read: %v", err)
		}
		WriteTruth(&b2, tr2)
		if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Fatal("write/read is not a fixed point")
		}
	})
}
