package pcapio

import (
	"errors"
	"fmt"
)

// Sentinel errors wrapped by ParseError; test for them with errors.Is.
// A truncated file reports io.ErrUnexpectedEOF.
var (
	// ErrEmpty: the file holds no bytes at all.
	ErrEmpty = errors.New("empty file")
	// ErrBadMagic: the file starts with neither a pcap nor a pcapng magic
	// number (after gzip or zstd decompression).
	ErrBadMagic = errors.New("not a pcap or pcapng file")
	// ErrBadVersion: a pcap file header or pcapng section header carries a
	// major version this package does not read.
	ErrBadVersion = errors.New("unsupported format version")
	// ErrBadLength: a length field is impossible (a pcap record larger than
	// the snapshot length allows or than the packet itself, a pcapng block
	// whose length is not a multiple of 4, too short or too large, or whose
	// trailing length differs from the leading one). The reader cannot find
	// the next record after it, so it stops reading the file.
	ErrBadLength = errors.New("corrupt length field")
	// ErrBadBlock: a pcapng block's lengths are consistent but its content
	// is not (a packet longer than its block, an option running past the
	// end). The block is skipped and reading goes on.
	ErrBadBlock = errors.New("malformed pcapng block")
	// ErrUnknownInterface: a pcapng packet names an interface that no
	// Interface Description Block defined. The packet is skipped.
	ErrUnknownInterface = errors.New("packet on an undefined interface")
	// ErrBadTimestamp: a pcapng packet's timestamp does not fit in int64
	// nanoseconds (after 2262), or a pcap record's fraction of a second is
	// a second or more: the record is skipped and counted as bad.
	ErrBadTimestamp = errors.New("timestamp out of range")
	// ErrUnknownLinkType: an interface's link type is one this package does
	// not decode. Its packets are passed through as StatusUndecodable; the
	// error is reported once per interface.
	ErrUnknownLinkType = errors.New("unknown link type")
)

// ParseError is a problem in one capture file, with its position. Packet
// is the 1-based number of the record (0 when the problem is not inside a
// record, e.g. a bad file header). Offset is the byte offset of the record
// or header in the file; for compressed files it counts decompressed bytes.
type ParseError struct {
	File   string
	Packet int64
	Offset int64
	Err    error
}

// Error formats the error as "FILE: packet N at byte OFFSET: ERR".
func (e *ParseError) Error() string {
	if e.Packet > 0 {
		return fmt.Sprintf("%s: packet %d at byte %d: %v", e.File, e.Packet, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: at byte %d: %v", e.File, e.Offset, e.Err)
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// fatal reports whether a reader that returned err can read no further.
func fatal(err error) bool {
	return !errors.Is(err, ErrBadBlock) && !errors.Is(err, ErrUnknownInterface) && !errors.Is(err, ErrUnknownLinkType) &&
		!errors.Is(err, ErrBadTimestamp)
}

// SnifferNameError is an option of Open naming a sniffer (Reference, or a
// key of Offsets) that is none of the inputs' sniffers: a mistake in how
// Open was called, not a problem of the input.
type SnifferNameError struct {
	Name   string // the name given
	Offset bool   // given as a key of Offsets, else as the Reference
	Known  string // the sniffers' names, quoted and comma-separated
}

// Error says which name names no sniffer and lists the sniffers.
func (e *SnifferNameError) Error() string {
	if e.Offset {
		return fmt.Sprintf("offset given for %q, which is none of %s", e.Name, e.Known)
	}
	return fmt.Sprintf("reference sniffer %q is none of %s", e.Name, e.Known)
}
