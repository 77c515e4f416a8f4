// Package decompress opens input that may be gzip- or zstd-compressed,
// recognising the compression by its magic number rather than the file
// name. Every reader of outside files (captures, traces, preload traces)
// opens its input through it, so that users can hand them compressed
// files directly.
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
	switch k {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return "none"
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

// Options size the buffers of NewReader and tune its decompressor.
type Options struct {
	// BufSize is the size of the buffer in front of the input (default
	// 64 KiB), which is also the buffer of the content when it is not
	// compressed.
	BufSize int
	// OutSize is the size of the buffer of the decompressed content
	// (default BufSize).
	OutSize int
	// LowMem makes the zstd decoder use less memory, at some cost in speed.
	LowMem bool
}

// NewReader returns a buffered reader of r's decompressed content (r's
// own content when it is not compressed), the compression found, and a
// function that releases the decompressor (it returns the decompressor's
// error, if any). On error the compression is that of the header that
// could not be read.
func NewReader(r io.Reader, opt Options) (*bufio.Reader, Kind, func() error, error) {
	if opt.BufSize <= 0 {
		opt.BufSize = 64 << 10
	}
	if opt.OutSize <= 0 {
		opt.OutSize = opt.BufSize
	}
	nop := func() error { return nil }
	br := bufio.NewReaderSize(r, opt.BufSize)
	head, _ := br.Peek(4)
	switch k := Detect(head); k {
	case Gzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, k, nop, err // "gzip: invalid header", io.ErrUnexpectedEOF
		}
		return bufio.NewReaderSize(zr, opt.OutSize), k, zr.Close, nil
	case Zstd:
		zopts := []zstd.DOption{zstd.WithDecoderConcurrency(1)}
		if opt.LowMem {
			zopts = append(zopts, zstd.WithDecoderLowmem(true))
		}
		zr, err := zstd.NewReader(br, zopts...)
		if err != nil {
			return nil, k, nop, fmt.Errorf("zstd: %w", err)
		}
		return bufio.NewReaderSize(zr, opt.OutSize), k, func() error { zr.Close(); return nil }, nil
	}
	return br, None, nop, nil
}
