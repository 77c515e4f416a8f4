package whatif

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// TestReadCPUProfile: the header's keys, the samples, what is skipped, and
// errors that name the file and line.
func TestReadCPUProfile(t *testing.T) {
	for _, c := range []struct {
		name, in string
		cols     []string
		other    []bool
		reqs     bool
		n, skip  int
		err      string
	}{
		{name: "defaults", in: "wirepath-cpu v1\n1 0\n2 0.5\n", cols: []string{"cpu"}, other: []bool{false}, n: 2},
		{name: "ticks and others", in: "# c\nwirepath-cpu v1 hz=100 columns=time,tiers,client,requests other=client\n\n10 1 2 0 # s\n11 5 3 100\n",
			cols: []string{"tiers", "client"}, other: []bool{false, true}, reqs: true, n: 2},
		{name: "time not first", in: "wirepath-cpu v1 columns=cpu,time\n0 5\n1 6\n", cols: []string{"cpu"}, other: []bool{false}, n: 2},
		{name: "a time going back is skipped", in: "wirepath-cpu v1\n1 0\n3 1\n2 1\n3 1\n4 2\n", cols: []string{"cpu"}, other: []bool{false}, n: 3, skip: 2},
		{name: "no header", in: "1795752089.9 1\n", err: "f.cpu:1: not a CPU profile"},
		{name: "a newer version", in: "wirepath-cpu v2\n", err: `f.cpu:1: CPU profile version "v2": this wirepath reads v1`},
		{name: "bad hz", in: "wirepath-cpu v1 hz=0\n", err: "f.cpu:1: bad hz"},
		{name: "unknown key", in: "wirepath-cpu v1 colour=red\n", err: `f.cpu:1: unknown key "colour"`},
		{name: "no time column", in: "wirepath-cpu v1 columns=a,b\n", err: "want time and at least one CPU counter"},
		{name: "repeated column", in: "wirepath-cpu v1 columns=time,a,a\n", err: "an empty or repeated name"},
		{name: "unknown other", in: "wirepath-cpu v1 columns=time,a other=b\n", err: "other=b: not one of the CPU columns"},
		{name: "too few fields", in: "wirepath-cpu v1\n1 2\n\n3\n", err: "f.cpu:4: 1 fields: the header's columns want 2"},
		{name: "negative", in: "wirepath-cpu v1\n1 -2\n", err: `f.cpu:2: bad value "-2" in column 2`},
		{name: "not a number", in: "wirepath-cpu v1\n1 NaN\n", err: `f.cpu:2: bad value "NaN"`},
		{name: "time zero", in: "wirepath-cpu v1\n0 1\n", err: "f.cpu:2: bad time 0"},
		{name: "one sample", in: "wirepath-cpu v1\n1 1\n", err: "f.cpu: 1 sample(s)"},
		{name: "empty", in: "# nothing\n", err: "f.cpu: empty"},
	} {
		p, err := ReadCPUProfile(strings.NewReader(c.in), "f.cpu")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(p.Columns, c.cols) || !slices.Equal(p.Other, c.other) || p.HasRequests != c.reqs || len(p.Samples) != c.n || p.Skipped != c.skip {
			t.Errorf("%s: %+v", c.name, *p)
		}
	}
}

// TestCPUProfileValues: the samples' values land in their columns, and
// write back to a file that reads the same.
func TestCPUProfileValues(t *testing.T) {
	in := "wirepath-cpu v1 hz=100 columns=requests,time,tiers,client other=client\n0 10.5 1 2\n150 11.25 5 3\n"
	p, err := ReadCPUProfile(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	s := p.Samples[1]
	if s.T != 11.25 || s.Requests != 150 || !slices.Equal(s.CPU, []float64{5, 3}) || s.Line != 3 || p.HZ != 100 {
		t.Fatalf("sample %+v of %+v", s, *p)
	}
	cpuRoundTrip(t, p)
}

// cpuRoundTrip writes p and reads it back, failing unless it reads the same.
func cpuRoundTrip(t *testing.T, p *CPUProfile) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCPUProfile(&b, p); err != nil {
		t.Fatal(err)
	}
	q, err := ReadCPUProfile(&b, "again")
	if err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if q.HZ != p.HZ || !slices.Equal(q.Columns, p.Columns) || !slices.Equal(q.Other, p.Other) || q.HasRequests != p.HasRequests || len(q.Samples) != len(p.Samples) {
		t.Fatalf("read back %+v, wrote %+v", *q, *p)
	}
	for i, s := range q.Samples {
		o := p.Samples[i]
		if s.T != o.T || !slices.Equal(s.CPU, o.CPU) || s.Requests != o.Requests {
			t.Fatalf("sample %d read back %+v, wrote %+v", i, s, o)
		}
	}
}

// FuzzReadCPUProfile checks that any input reads or fails with an error
// naming the file, without panicking, and that what reads has increasing
// times, a value per column, and writes back to a file that reads the same.
func FuzzReadCPUProfile(f *testing.F) {
	for _, s := range fuzzseed.Read(f, "whatif/testdata/cpu/*.cpu") {
		f.Add(s)
	}
	for _, s := range []string{
		"wirepath-cpu v1\n1 0\n2 1\n", // the defaults
		"wirepath-cpu v1 hz=100 columns=time,a,b,requests other=b\n1 0 0 0\n2 1 1 5\n", // every key
		"wirepath-cpu v1\n2 0\n1 1\n3 2\n",                                             // a time going back
		"wirepath-cpu v1\n1 1e308\n2 1e309\n",                                          // an infinity
		"wirepath-cpu v2\n",                                                            // a newer version
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ReadCPUProfile(bytes.NewReader(in), "f.cpu")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.cpu") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		if len(p.Samples) < 2 {
			t.Fatalf("%d samples read", len(p.Samples))
		}
		for i, s := range p.Samples {
			if len(s.CPU) != len(p.Columns) || i > 0 && !(s.T > p.Samples[i-1].T) {
				t.Fatalf("sample %d: %+v", i, s)
			}
		}
		cpuRoundTrip(t, p)
	})
}
