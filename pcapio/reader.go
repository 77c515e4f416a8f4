package pcapio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wirepath/wirepath/internal/decompress"
)

// readBufferSize is the size of the buffered reader in front of each
// capture: about 1 MiB reads pcaps markedly faster than bufio's 4 KiB.
const readBufferSize = 1 << 20

// maxRecordLen bounds the captured length of one record and the length of
// one pcapng block. Anything larger is a corrupt length field; without the
// bound a flipped bit would make the reader allocate gigabytes.
const maxRecordLen = 16 << 20

// Format is the container format of a capture file.
type Format uint8

// The container formats.
const (
	FormatPcap   Format = iota + 1 // classic libpcap, any magic
	FormatPcapNg                   // pcapng
)

// String returns "pcap" or "pcapng".
func (f Format) String() string {
	switch f {
	case FormatPcap:
		return "pcap"
	case FormatPcapNg:
		return "pcapng"
	}
	return "unknown"
}

// Compression is how a capture file was compressed, detected from its
// first bytes (never from its name) by the decompress package that opens
// every outside file.
type Compression = decompress.Kind

// The compressions.
const (
	CompressionNone = decompress.None
	CompressionGzip = decompress.Gzip
	CompressionZstd = decompress.Zstd
)

// Interface describes one capture interface of a file: the single
// implicit interface of a classic pcap, or one pcapng Interface
// Description Block.
type Interface struct {
	// Index numbers the interfaces of the file from 0 in the order their
	// description blocks appear, across all sections.
	Index int
	// Section is the 0-based pcapng section that defined it.
	Section int
	// LinkType is the pcap LINKTYPE_ value of its frames.
	LinkType uint16
	// SnapLen is the largest captured length (0 means unlimited).
	SnapLen uint32
	// Name and Description are the if_name and if_description options.
	Name, Description string
	// TSResol is the if_tsresol option (default 6: microseconds); the high
	// bit selects a power of two instead of ten.
	TSResol uint8
	// TSOffset is the if_tsoffset option in seconds, added to every
	// timestamp of the interface.
	TSOffset int64

	conv tsConv
}

// Record is one captured frame as stored in the file, before decoding.
type Record struct {
	// Data is the captured bytes, link-layer header included. It aliases
	// the reader's buffer and is valid until the next ReadRecord.
	Data []byte
	// TS is the timestamp in nanoseconds since the epoch.
	TS int64
	// WireLen is the frame's length on the wire (>= len(Data)).
	WireLen int
	// LinkType is the link type of the record's interface.
	LinkType uint16
	// Interface is the record's interface, an index into Interfaces().
	Interface int
	// Number is the 1-based number of the record in the file, counting
	// every packet record including skipped ones.
	Number int64
	// Offset is the record's byte offset in the (decompressed) file.
	Offset int64
}

// Reader reads the records of one pcap or pcapng file, plain or gzip- or
// zstd-compressed. It is not safe for concurrent use. Errors are
// *ParseError values; after a fatal one (see ReadRecord) every later call
// returns it again.
type Reader struct {
	name        string
	br          *bufio.Reader
	off         int64 // offset of the next unread (decompressed) byte
	closers     []io.Closer
	format      Format
	compression Compression
	bigEndian   bool
	ifaces      []Interface
	num         int64 // records seen
	err         error // sticky fatal error
	pending     []error
	big         []byte // records too large to peek at in br

	// classic pcap
	pcapHdrLen int   // 16, or 24 for the modified (Kuznetzov) format
	pcapScale  int64 // ns per unit of the fraction field
	pcapSnap   uint32

	// pcapng
	secBase  int // index of the current section's first interface
	sections int
}

// OpenFile opens the capture file at path. The file is closed by Close.
func OpenFile(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(f, path, fileBufferSize(f))
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closers = append(r.closers, f)
	return r, nil
}

// NewReader reads a capture from rd; name is used in errors. It reads the
// file header (or first section header) and fails with a *ParseError
// wrapping ErrEmpty, ErrBadMagic, ErrBadVersion or io.ErrUnexpectedEOF if
// rd does not hold a capture.
func NewReader(rd io.Reader, name string) (*Reader, error) {
	return newReader(rd, name, readBufferSize)
}

// newReader is NewReader with a buffer of bufSize bytes for the file
// itself (1 MiB after decompression), so that small files do not cost a
// 1 MiB buffer.
func newReader(rd io.Reader, name string, bufSize int) (*Reader, error) {
	r := &Reader{name: name}
	br, kind, done, err := decompress.NewReader(rd, decompress.Options{BufSize: bufSize, OutSize: readBufferSize})
	r.closers = append(r.closers, closerFunc(done))
	if err != nil {
		if kind == decompress.Gzip {
			err = fmt.Errorf("gzip: %w", err)
		}
		return nil, r.errAt(0, 0, err)
	}
	r.compression = kind
	r.br = br
	if err := r.readHeader(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// fileBufferSize sizes the buffer for a file: readBufferSize, or less for
// a smaller regular file. A pipe, a FIFO or a terminal has no size: it
// gets the whole buffer. Records larger than the buffer are read through
// Reader.big, so the buffer's size bounds no record.
func fileBufferSize(f *os.File) int {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < readBufferSize {
		return max(int(fi.Size()), 4096)
	}
	return readBufferSize
}

// closerFunc is a func() error as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Close releases the decompressors and closes the file if OpenFile opened it.
func (r *Reader) Close() error {
	var err error
	for i := len(r.closers) - 1; i >= 0; i-- {
		if cerr := r.closers[i].Close(); err == nil {
			err = cerr
		}
	}
	r.closers = nil
	return err
}

// Name returns the name given to NewReader (the path for OpenFile).
func (r *Reader) Name() string { return r.name }

// Format returns the container format.
func (r *Reader) Format() Format { return r.format }

// Compression returns the detected compression.
func (r *Reader) Compression() Compression { return r.compression }

// Interfaces returns the interfaces defined so far. A pcapng file may
// define more as reading goes on; a classic pcap has exactly one.
func (r *Reader) Interfaces() []Interface { return r.ifaces }

// Offset returns the byte offset of the next unread byte of the
// (decompressed) file.
func (r *Reader) Offset() int64 { return r.off }

// ReadRecord reads the next record into rec. At the end of the file it
// returns io.EOF. Other errors are *ParseError values. Those wrapping
// ErrBadBlock, ErrUnknownInterface, ErrUnknownLinkType or ErrBadTimestamp are not fatal:
// the offending block was skipped (or, for an unknown link type, its
// packets will be delivered undecoded) and the next call goes on. Any
// other error is fatal and sticky: the reader cannot find the next record.
func (r *Reader) ReadRecord(rec *Record) error {
	if len(r.pending) > 0 {
		err := r.pending[0]
		r.pending = r.pending[1:]
		return err
	}
	if r.err != nil {
		return r.err
	}
	var err error
	if r.format == FormatPcap {
		err = r.readPcapRecord(rec)
	} else {
		err = r.readNgRecord(rec)
	}
	if err != nil && err != io.EOF && fatal(err) {
		r.err = err
	}
	if err == io.EOF {
		r.err = io.EOF
	}
	return err
}

// IsFatal reports whether err, returned by ReadRecord, ends the file.
func IsFatal(err error) bool { return err != nil && err != io.EOF && fatal(err) }

func (r *Reader) errAt(packet, off int64, err error) *ParseError {
	return &ParseError{File: r.name, Packet: packet, Offset: off, Err: err}
}

// peek returns the next n bytes without consuming them, or io.EOF when the
// file ends cleanly before them, or io.ErrUnexpectedEOF when it ends
// inside them. The slice is valid until the next read.
func (r *Reader) peek(n int) ([]byte, error) {
	b, err := r.br.Peek(n)
	if len(b) == n {
		return b, nil
	}
	if err == io.EOF || err == nil {
		if len(b) == 0 {
			return nil, io.EOF
		}
		return nil, io.ErrUnexpectedEOF
	}
	if errors.Is(err, io.ErrUnexpectedEOF) && len(b) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

// next consumes n bytes and returns them; valid until the next read. It
// peeks when n fits the buffer (whatever size it was given: a small file's
// buffer is small) and copies into r.big otherwise, so that a record
// larger than the buffer is read whole, or found cut by the end of the
// file, never "bufio: buffer full".
func (r *Reader) next(n int) ([]byte, error) {
	if n <= r.br.Size() {
		b, err := r.peek(n)
		if err != nil {
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		r.br.Discard(n)
		r.off += int64(n)
		return b, nil
	}
	if cap(r.big) < n {
		r.big = make([]byte, n)
	}
	b := r.big[:n]
	m, err := io.ReadFull(r.br, b)
	r.off += int64(m)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

func (r *Reader) u16(b []byte) uint16 {
	if r.bigEndian {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return uint16(b[1])<<8 | uint16(b[0])
}

func (r *Reader) u32(b []byte) uint32 {
	if r.bigEndian {
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}
	return uint32(b[3])<<24 | uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
}

func (r *Reader) u64(b []byte) uint64 {
	if r.bigEndian {
		return uint64(r.u32(b[0:4]))<<32 | uint64(r.u32(b[4:8]))
	}
	return uint64(r.u32(b[4:8]))<<32 | uint64(r.u32(b[0:4]))
}

// Magic numbers, as read little-endian from the first four bytes.
const (
	magicPcapMicro    = 0xa1b2c3d4
	magicPcapNano     = 0xa1b23c4d
	magicPcapModified = 0xa1b2cd34
	magicNgSHB        = 0x0a0d0d0a
	magicNgByteOrder  = 0x1a2b3c4d
)

func (r *Reader) readHeader() error {
	m, err := r.peek(4)
	if err != nil {
		if err == io.EOF {
			return r.errAt(0, 0, ErrEmpty)
		}
		if err == io.ErrUnexpectedEOF {
			return r.errAt(0, 0, ErrBadMagic)
		}
		return r.errAt(0, 0, err)
	}
	le := uint32(m[0]) | uint32(m[1])<<8 | uint32(m[2])<<16 | uint32(m[3])<<24
	be := uint32(m[3]) | uint32(m[2])<<8 | uint32(m[1])<<16 | uint32(m[0])<<24
	switch {
	case le == magicNgSHB:
		r.format = FormatPcapNg
		return r.readFirstSection()
	case le == magicPcapMicro || le == magicPcapNano || le == magicPcapModified:
		r.bigEndian = false
	case be == magicPcapMicro || be == magicPcapNano || be == magicPcapModified:
		r.bigEndian = true
	default:
		return r.errAt(0, 0, ErrBadMagic)
	}
	r.format = FormatPcap
	return r.readPcapHeader()
}
