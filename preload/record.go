package preload

import (
	"fmt"
	"strings"
)

// Version is the version of the preload trace format this package
// writes; it reads every version from 1 to Version.
const Version = 2

// Call is the socket API call a record describes.
type Call uint8

// The calls. The send and recv families keep their names so that a trace
// says what the application did; Dir tells the direction.
const (
	CallUnknown Call = iota
	CallSocket
	CallSocketpair
	CallConnect
	CallAccept
	CallAccept4
	CallBind
	CallListen
	CallSend
	CallSendto
	CallSendmsg
	CallSendmmsg
	CallWrite
	CallWritev
	CallSendfile
	CallSpliceSend // splice into a socket (version 2)
	CallRecv
	CallRecvfrom
	CallRecvmsg
	CallRecvmmsg
	CallRead
	CallReadv
	CallSpliceRecv // splice out of a socket (version 2)
	CallClose
	CallShutdown
	CallDup
	CallDup2
	CallDup3
	CallFork
	CallExec
	CallEnd // the library's closing record with its counters
	numCalls
)

var callNames = [numCalls]string{"?", "socket", "socketpair", "connect", "accept", "accept4", "bind", "listen",
	"send", "sendto", "sendmsg", "sendmmsg", "write", "writev", "sendfile", "splice_send",
	"recv", "recvfrom", "recvmsg", "recvmmsg", "read", "readv", "splice_recv",
	"close", "shutdown", "dup", "dup2", "dup3", "fork", "exec", "end"}

// String returns the call's name as it appears in traces.
func (c Call) String() string {
	if c < numCalls {
		return callNames[c]
	}
	return "?"
}

// ParseCall returns the Call named s, or CallUnknown.
func ParseCall(s string) Call {
	for i, n := range callNames {
		if i > 0 && n == s {
			return Call(i)
		}
	}
	return CallUnknown
}

func parseCallBytes(b []byte) Call {
	for i, n := range callNames {
		if i > 0 && n == string(b) {
			return Call(i)
		}
	}
	return CallUnknown
}

// Sends reports whether c moves data out of the process.
func (c Call) Sends() bool { return c >= CallSend && c <= CallSpliceSend }

// Receives reports whether c moves data into the process.
func (c Call) Receives() bool { return c >= CallRecv && c <= CallSpliceRecv }

// Data reports whether c moves data.
func (c Call) Data() bool { return c.Sends() || c.Receives() }

// SockType is the kind of socket a descriptor is.
type SockType uint8

// The socket kinds.
const (
	SockUnknown SockType = iota
	SockTCP
	SockUDP
	SockUnixStream
	SockUnixDgram
	SockUnixSeqpacket
	SockRaw
	SockOther
	numSock
)

var sockNames = [numSock]string{"", "tcp", "udp", "unix-stream", "unix-dgram", "unix-seqpacket", "raw", "other"}

// String returns the kind's name as it appears in traces ("" if unknown).
func (s SockType) String() string {
	if s < numSock {
		return sockNames[s]
	}
	return ""
}

// ParseSockType parses a socket kind name; unknown names are SockOther.
func ParseSockType(s string) SockType {
	if s == "" {
		return SockUnknown
	}
	for i, n := range sockNames {
		if n == s {
			return SockType(i)
		}
	}
	return SockOther
}

func parseSockBytes(b []byte) SockType {
	if len(b) == 0 {
		return SockUnknown
	}
	for i, n := range sockNames {
		if n == string(b) {
			return SockType(i)
		}
	}
	return SockOther
}

// Stream reports whether s carries a byte stream (TCP, UNIX stream).
func (s SockType) Stream() bool { return s == SockTCP || s == SockUnixStream }

// Datagram reports whether s carries datagrams with their own boundaries.
func (s SockType) Datagram() bool {
	return s == SockUDP || s == SockUnixDgram || s == SockUnixSeqpacket || s == SockRaw
}

// Unix reports whether s is a UNIX-domain socket.
func (s SockType) Unix() bool {
	return s == SockUnixStream || s == SockUnixDgram || s == SockUnixSeqpacket
}

// Header is the record that starts a trace file (and may recur, for
// example once per process in a converted strace trace). It names the
// process the records after it belong to.
type Header struct {
	Version int    `json:"wirepath_preload"`
	Tool    string `json:"tool,omitempty"` // "libwpcap", "strace", ...
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid,omitempty"`
	Process string `json:"process,omitempty"` // short name (comm)
	Exe     string `json:"exe,omitempty"`
	StartTS int64  `json:"start_ts,omitempty"` // ns since the epoch
}

// Record is one socket call. Fields that a record leaves out are zero,
// except FD, FD2 and Len, which are -1 when absent.
type Record struct {
	// Host, PID and Process say whose call it is: from the record's own
	// "pid" member or the header in force.
	Host    string
	PID     int
	Process string
	TID     int
	// TS is when the call was entered, ns since the epoch (CLOCK_REALTIME);
	// Dur is how long it took, so TS+Dur is when it returned.
	TS, Dur int64
	Call    Call
	// CallName is the call as written, kept for calls this version does
	// not know.
	CallName string
	FD, FD2  int
	// Len is the byte count the application asked for; Ret the return
	// value (bytes moved, new descriptor, child pid, 0 or -1).
	Len    int64
	Ret    int64
	HasRet bool
	Errno  string
	// Sock, Local and Remote describe the descriptor (on the call that
	// creates or names it, and the first time a process uses one it did
	// not create); PeerPID is the other process of a UNIX socket.
	Sock          SockType
	Local, Remote string
	PeerPID       int
	// Peer is the other end of this one datagram (sendto's destination,
	// recvfrom's source).
	Peer string
	// Sum is the CRC-32 (IEEE) of a datagram's payload, when HasSum.
	Sum    uint32
	HasSum bool
	Peek   bool // MSG_PEEK: the data stays in the socket
	Trunc  bool // the datagram was longer than the buffer
	How    int  // shutdown's how
	Path   string
	// The counters of an "end" record: records written, EAGAIN returns
	// not logged, failed writes of the log, records lost (version 2) and
	// times the application closed or replaced the log's descriptor
	// (version 2).
	Records, EAGAINSkipped, WriteErrors, LostRecords, LogReopens int64
}

// Failed reports whether the call returned an error.
func (r *Record) Failed() bool { return r.HasRet && r.Ret < 0 }

// End returns when the call returned.
func (r *Record) End() int64 { return r.TS + r.Dur }

// Bytes returns the bytes a successful data call moved, else 0.
func (r *Record) Bytes() int64 {
	if !r.Call.Data() || !r.HasRet || r.Ret < 0 {
		return 0
	}
	return r.Ret
}

func (r *Record) reset() {
	*r = Record{FD: -1, FD2: -1, Len: -1}
}

// String formats the record briefly, for messages and debugging.
func (r *Record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s[%d] %d %s", r.Process, r.PID, r.TS, r.CallName)
	if r.FD >= 0 {
		fmt.Fprintf(&b, " fd=%d", r.FD)
	}
	if r.HasRet {
		fmt.Fprintf(&b, " = %d", r.Ret)
	}
	if r.Errno != "" {
		fmt.Fprintf(&b, " %s", r.Errno)
	}
	return b.String()
}
