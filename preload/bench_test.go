package preload

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(sampleTrace[:strings.IndexByte(sampleTrace, '\n')+1])
	line := `{"ts":1700000000000400000,"dur":700,"tid":813,"call":"send","fd":5,"len":4096,"ret":1000}` + "\n"
	dg := `{"ts":1700000000000400000,"dur":700,"tid":813,"call":"sendto","fd":7,"len":40,"ret":40,"sock":"udp","local":"0.0.0.0:5353","peer":"10.0.0.9:53","sum":"0a0b0c0d"}` + "\n"
	const n = 20000
	for i := 0; i < n/2; i++ {
		buf.WriteString(line)
		buf.WriteString(dg)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var got int64
	for i := 0; i < b.N; i++ {
		r := NewReader(bytes.NewReader(data), "bench", Options{Strict: true})
		t := NewTable()
		if err := t.ReadFrom(r); err != nil {
			b.Fatal(err)
		}
		got = t.Counters.Records
	}
	if got != n {
		b.Fatalf("%d records, want %d", got, n)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkConvertStrace(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "strace", "curl.strace"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var st StraceStats
	for i := 0; i < b.N; i++ {
		st, err = ConvertStrace(bytes.NewReader(data), "curl", NewWriter(io.Discard), StraceOptions{Host: "h"})
		if err != nil {
			b.Fatal(err)
		}
	}
	if st.Records == 0 || st.Skipped != 0 {
		b.Fatalf("%+v", st)
	}
	b.ReportMetric(float64(st.Lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
