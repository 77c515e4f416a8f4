// Package preload is the syscall-trace stage: the wirepath preload trace
// format (JSON Lines, one record per socket call, following LibSockCap in
// WAP5 section 3), its streaming parser, the per-process connection table
// that reconciliation reads, the LD_PRELOAD capture library that writes the
// format (C, in libwpcap/, built by the Makefile into bin/libwpcap.so) and a
// converter from strace output.
//
// A trace file starts with a header record naming the host, process id and
// process; every later record is one call: connect, accept, bind, listen,
// the send/write and recv/read families, close, shutdown, dup, fork, exec,
// with a timestamp, the thread, the descriptor, the endpoints where the call
// names or creates them, the bytes asked for and moved, the return value or
// errno, and for datagrams a CRC-32 of the payload. The format is versioned
// and documented in docs/formats.md; the library in docs/preload.md.
//
// Reader parses a trace one record at a time (Scanner-style, sticky errors,
// bad lines skipped and counted unless Strict). Table folds records into
// processes and connections: which descriptor named which endpoints when,
// and the messages on each with their byte ranges and timestamps.
//
// This package must not know about packets.
package preload
