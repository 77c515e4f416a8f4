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
	}{{data, None}, {gz.Bytes(), Gzip}, {zs.Bytes(), Zstd}, {nil, None}, {[]byte{0x1f}, None}} {
		r, k, done, err := NewReader(bytes.NewReader(tc.in), 4096)
		if err != nil || k != tc.kind {
			t.Fatalf("%v: kind %v err %v", tc.kind, k, err)
		}
		got, err := io.ReadAll(r)
		done()
		want := data
		if tc.in == nil || len(tc.in) == 1 {
			want = tc.in
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v: %d bytes, err %v", tc.kind, len(got), err)
		}
	}
	// A cut gzip stream is an error, not a short read.
	r, _, done, err := NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()/2]), 4096)
	if err == nil {
		_, err = io.ReadAll(r)
		done()
	}
	if err == nil {
		t.Error("a truncated gzip stream read without error")
	}
}
