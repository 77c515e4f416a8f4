package decompress

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func TestNewReader(t *testing.T) {
	data := bytes.Repeat([]byte("wirepath trace line\n"), 1000)
	var gz, zs bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(data)
	gw.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write(data)
	zw.Close()
	for _, tc := range []struct {
		in   []byte
		kind Kind
		opt  Options
	}{
		{data, None, Options{BufSize: 4096}},
		{gz.Bytes(), Gzip, Options{BufSize: 4096}},
		{zs.Bytes(), Zstd, Options{BufSize: 4096}},
		{zs.Bytes(), Zstd, Options{BufSize: 4096, OutSize: 1 << 20, LowMem: true}},
		{gz.Bytes(), Gzip, Options{}},
		{nil, None, Options{BufSize: 4096}},
		{[]byte{0x1f}, None, Options{BufSize: 4096}},
	} {
		r, k, done, err := NewReader(bytes.NewReader(tc.in), tc.opt)
		if err != nil || k != tc.kind {
			t.Fatalf("%v: kind %v err %v", tc.kind, k, err)
		}
		got, err := io.ReadAll(r)
		if cerr := done(); cerr != nil {
			t.Errorf("%v: close: %v", tc.kind, cerr)
		}
		want := data
		if tc.in == nil || len(tc.in) == 1 {
			want = tc.in
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v: %d bytes, err %v", tc.kind, len(got), err)
		}
	}
	// A cut gzip stream is an error, not a short read.
	r, _, done, err := NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()/2]), Options{BufSize: 4096, LowMem: true})
	if err == nil {
		_, err = io.ReadAll(r)
		done()
	}
	if err == nil {
		t.Error("a truncated gzip stream read without error")
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{None: "none", Gzip: "gzip", Zstd: "zstd", 9: "none"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d) = %q, want %q", k, got, want)
		}
	}
}
