// Package decompress opens input that may be gzip- or zstd-compressed,
// recognising the compression by its magic number rather than the file
// name. Trace and preload readers use it so that users can hand them
// compressed files directly.
package decompress

import (
	"bufio"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Kind is the compression of a stream.
type Kind uint8

// The compressions recognised.
const (
	None Kind = iota
	Gzip
	Zstd
)

// String returns "none", "gzip" or "zstd".
func (k Kind) String() string {
	return [...]string{"none", "gzip", "zstd"}[k]
}

// Detect reports the compression that the first bytes of a stream show.
func Detect(head []byte) Kind {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return Gzip
	case len(head) >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd:
		return Zstd
	}
	return None
}

// NewReader returns a buffered reader of r's decompressed content (r's
// own content when it is not compressed), the compression found, and a
// function that releases the decompressor. bufSize sizes the buffers.
func NewReader(r io.Reader, bufSize int) (*bufio.Reader, Kind, func(), error) {
	br := bufio.NewReaderSize(r, bufSize)
	head, _ := br.Peek(4)
	switch k := Detect(head); k {
	case Gzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, k, func() {}, err // "gzip: invalid header", io.ErrUnexpectedEOF
		}
		return bufio.NewReaderSize(zr, bufSize), k, func() { zr.Close() }, nil
	case Zstd:
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, k, func() {}, fmt.Errorf("zstd: %w", err)
		}
		return bufio.NewReaderSize(zr, bufSize), k, zr.Close, nil
	}
	return br, None, func() {}, nil
}
