package preload

import (
	"cmp"
	"os"
	"slices"

	"github.com/wirepath/wirepath/internal/decompress"
)

// Origin says how a connection came to be known.
type Origin uint8

// The origins.
const (
	OriginUnknown    Origin = iota // first seen in a data call without description
	OriginSocket                   // socket()
	OriginSocketpair               // socketpair()
	OriginConnect                  // connect()
	OriginAccept                   // accept() or accept4()
	OriginInherited                // described on first use (inherited across fork or exec)
)

var originNames = [...]string{"unknown", "socket", "socketpair", "connect", "accept", "inherited"}

// String returns the origin's name.
func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return "unknown"
}

// MarshalText makes origins readable in JSON.
func (o Origin) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Dir is the direction of a message as seen by the process.
type Dir uint8

// The directions.
const (
	DirSend Dir = iota
	DirRecv
)

// String returns "send" or "recv".
func (d Dir) String() string {
	if d == DirRecv {
		return "recv"
	}
	return "send"
}

// Msg is one successful data call on a connection: a message in WAP5's
// sense (the bytes of one write or one read).
type Msg struct {
	Dir  Dir
	Call Call
	// TS is when the call was entered and End when it returned, ns since
	// the epoch. A send's data leaves from TS on; a receive's data is all
	// there by End.
	TS, End int64
	Bytes   int64
	// Offset is, on a stream socket, how many bytes this process moved in
	// this direction on this connection before this message: the message
	// is bytes [Offset, Offset+Bytes) of the direction's stream.
	Offset int64
	// Peer is the other end of a datagram when the call named it.
	Peer   string
	Sum    uint32
	HasSum bool
	TID    int
}

// Conn is one socket of one process, from its creation (or first sight) to
// its close: a connection for stream sockets, a datagram socket otherwise.
type Conn struct {
	ID      int    // index in Table.Conns
	Host    string // of the process
	PID     int
	Process string
	FD      int // the descriptor it was first known by
	// FDs are all the descriptors that referred to it (dup, dup2).
	FDs    []int
	Sock   SockType
	Origin Origin
	// Local and Remote are the endpoints (Remote empty for an unconnected
	// datagram socket; its messages carry their Peer).
	Local, Remote string
	PeerPID       int
	Listening     bool
	// Opened and Closed are when the socket appeared and was closed by the
	// last descriptor referring to it; 0 when not seen.
	Opened, Closed int64
	Msgs           []Msg
	SentMsgs       int
	RecvMsgs       int
	SentBytes      int64
	RecvBytes      int64
	// EOF is set when a read returned 0; ShutWrite when the process shut
	// its sending side down.
	EOF, ShutWrite bool
	// Failed counts calls on it that returned an error.
	Failed int
	refs   int
}

// Process is one process seen in the traces.
type Process struct {
	Host     string
	PID      int
	PPID     int
	Name     string
	Exe      string
	Start    int64
	Children []int    // pids forked, from fork records
	Execs    []string // programs exec'd (failed attempts left out)
	Records  int64
	Conns    []*Conn
	fds      map[int]fdRef
	spans    []fdSpan
}

// fdRef is what an open descriptor refers to, and when the call that gave
// it returned (0: before the trace began). A call on the descriptor
// entered before then was made on a previous occupant of the number: the
// application could not know the new descriptor yet.
type fdRef struct {
	c     *Conn
	ready int64
}

// conn returns the connection descriptor fd refers to, or nil.
func (p *Process) conn(fd int) *Conn { return p.fds[fd].c }

// fdSpan is the time a descriptor referred to a connection: [from, to),
// from the return of the call that gave it,
// to = 0 while open.
type fdSpan struct {
	fd       int
	c        *Conn
	from, to int64
}

// ProcKey identifies a process.
type ProcKey struct {
	Host string
	PID  int
}

// Counters is the accounting of a Table: every record is counted once in
// Records and once more in exactly one of the others.
type Counters struct {
	Records      int64 `json:"records"`
	DataCalls    int64 `json:"data_calls"`    // successful data calls, each a Msg
	FailedCalls  int64 `json:"failed_calls"`  // calls that returned an error
	EmptyCalls   int64 `json:"empty_calls"`   // data calls that moved 0 bytes (EOF, empty write)
	PeekCalls    int64 `json:"peek_calls"`    // MSG_PEEK receives (data not consumed)
	SocketCalls  int64 `json:"socket_calls"`  // socket, connect, accept, bind, listen, close, shutdown, dup
	ProcessCalls int64 `json:"process_calls"` // fork, exec, end
	UnknownCalls int64 `json:"unknown_calls"` // calls this version does not know
	// Unattributed counts data calls on descriptors never described: their
	// connection has no endpoints (the data is still kept).
	Unattributed int64 `json:"unattributed"`
	// Reopened counts data calls that found their descriptor closed by a
	// close logged while its socket was still in use, and continued that
	// socket's connection (Table.reopened).
	Reopened int64 `json:"reopened"`
	// EAGAINSkipped sums what the library's end records say it did not log.
	EAGAINSkipped int64 `json:"eagain_skipped"`
	WriteErrors   int64 `json:"write_errors"`
	// LostRecords sums the records the library could not write (no log
	// file could be opened, or a write failed); LogReopens the times an
	// application closed or replaced the library's log descriptor and the
	// library reopened its log.
	LostRecords int64 `json:"lost_records"`
	LogReopens  int64 `json:"log_reopens"`
}

// Table folds call records into processes and their connections. Feed it
// records in each process's order (the order of its trace file).
type Table struct {
	Conns    []*Conn
	procs    map[ProcKey]*Process
	Counters Counters
	// Skipped counts bad lines the readers skipped; Warnings holds the
	// first of them.
	Skipped  int64
	Warnings []string
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{procs: make(map[ProcKey]*Process)}
}

// AddHeader records what a header says about its process.
func (t *Table) AddHeader(h *Header) {
	p := t.proc(h.Host, h.PID)
	p.PPID, p.Exe = h.PPID, h.Exe
	if h.Process != "" {
		p.Name = h.Process
	}
	if p.Start == 0 || (h.StartTS != 0 && h.StartTS < p.Start) {
		p.Start = h.StartTS
	}
}

func (t *Table) proc(host string, pid int) *Process {
	k := ProcKey{host, pid}
	p := t.procs[k]
	if p == nil {
		p = &Process{Host: host, PID: pid, fds: make(map[int]fdRef)}
		t.procs[k] = p
	}
	return p
}

// Processes returns the processes ordered by host and pid.
func (t *Table) Processes() []*Process {
	ps := make([]*Process, 0, len(t.procs))
	for _, p := range t.procs {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *Process) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID))
	})
	return ps
}

// Process returns the process with the key, or nil.
func (t *Table) Process(k ProcKey) *Process { return t.procs[k] }

func (t *Table) newConn(p *Process, fd int, r *Record, o Origin) *Conn {
	t.closeFD(p, fd, r.End()) // a new socket on an fd still open: its close went unseen, or is logged later
	c := &Conn{ID: len(t.Conns), Host: p.Host, PID: p.PID, Process: p.Name, FD: fd, FDs: []int{fd}, Origin: o, Opened: r.TS, refs: 1}
	t.Conns = append(t.Conns, c)
	p.Conns = append(p.Conns, c)
	p.fds[fd] = fdRef{c: c, ready: r.End()}
	p.spans = append(p.spans, fdSpan{fd: fd, c: c, from: r.End()})
	return c
}

func (t *Table) closeFD(p *Process, fd int, ts int64) {
	ref := p.fds[fd]
	c := ref.c
	if c == nil {
		return
	}
	if ref.ready > ts {
		// A close entered before the call that reused its descriptor
		// returned, logged after it (another thread's buffer reached the
		// file later): it ended the previous occupant, which the reuse
		// already ended at its own time; the earlier time is the true one.
		if sp := p.spanBefore(fd, c, ts); sp != nil {
			if sp.c.Closed == sp.to {
				sp.c.Closed = ts
			}
			sp.to = ts
		}
		return
	}
	delete(p.fds, fd)
	for i := len(p.spans) - 1; i >= 0; i-- {
		if p.spans[i].fd == fd && p.spans[i].to == 0 {
			p.spans[i].to = ts
			break
		}
	}
	c.refs--
	if c.refs <= 0 {
		c.Closed = ts
	}
}

// reopened returns the connection that last held data call r's
// descriptor, reopened, when r names the same stream socket (both
// addresses equal): a close of the descriptor was logged while the
// socket was still in use, by another thread that closed the previous
// occupant but whose entry time came after the reuse (seen with Python
// threads: the socket's connect, send, then another thread's close, then
// the reply's recv). A socket whose creation went unseen cannot have
// both addresses of the one just closed on that descriptor; without this
// the reply began a connection of its own, and its request, matched to
// neither copy of the sniffed connection, was a request twice. Nil when
// it does not apply.
func (t *Table) reopened(p *Process, r *Record) *Conn {
	if !r.Sock.Stream() || r.Local == "" || r.Remote == "" {
		return nil
	}
	for i := len(p.spans) - 1; i >= 0; i-- {
		sp := &p.spans[i]
		if sp.fd != r.FD {
			continue
		}
		c := sp.c
		if sp.to == 0 || sp.to > r.TS || c.Local != r.Local || c.Remote != r.Remote || !c.Sock.Stream() {
			return nil
		}
		t.Counters.Reopened++
		c.refs++
		c.Closed = 0
		p.fds[r.FD] = fdRef{c: c, ready: sp.to}
		p.spans = append(p.spans, fdSpan{fd: r.FD, c: c, from: sp.to})
		return c
	}
	return nil
}

// spanBefore returns the latest span of descriptor fd held by another
// connection than cur that was open at ts (ended at ts or after), or nil.
func (p *Process) spanBefore(fd int, cur *Conn, ts int64) *fdSpan {
	for i := len(p.spans) - 1; i >= 0; i-- {
		sp := &p.spans[i]
		if sp.fd == fd && sp.c != cur && sp.from <= ts && (sp.to == 0 || sp.to >= ts) {
			return sp
		}
	}
	return nil
}

// describe copies what r says about its descriptor into c.
func describe(c *Conn, r *Record) {
	if r.Sock != SockUnknown {
		c.Sock = r.Sock
	}
	if r.Local != "" {
		c.Local = r.Local
	}
	if r.Remote != "" {
		c.Remote = r.Remote
	}
	if r.PeerPID != 0 {
		c.PeerPID = r.PeerPID
	}
}

// Add folds one record into the table.
func (t *Table) Add(r *Record) {
	t.Counters.Records++
	p := t.proc(r.Host, r.PID)
	if r.Process != "" {
		p.Name = r.Process
	}
	p.Records++
	switch {
	case r.Call == CallUnknown:
		t.Counters.UnknownCalls++
	case r.Failed():
		t.Counters.FailedCalls++
		t.addFailed(p, r)
	case r.Call.Data():
		t.addData(p, r)
	case r.Call == CallFork || r.Call == CallExec || r.Call == CallEnd:
		t.Counters.ProcessCalls++
		t.addProcessCall(p, r)
	default:
		t.Counters.SocketCalls++
		t.addSocketCall(p, r)
	}
}

// addFailed folds a call that returned an error.
func (t *Table) addFailed(p *Process, r *Record) {
	// The library logs an exec before making it and again if it failed (a
	// shell trying each directory of PATH, say).
	if r.Call == CallExec && len(p.Execs) > 0 {
		p.Execs = p.Execs[:len(p.Execs)-1]
	}
	if c := p.conn(r.FD); c != nil && r.FD >= 0 {
		c.Failed++
	}
	// A connect in progress has bound its local name already.
	if r.Call == CallConnect && r.Errno == "EINPROGRESS" {
		if c := p.conn(r.FD); c != nil {
			describe(c, r)
			c.Origin = OriginConnect
		} else if r.FD >= 0 {
			describe(t.newConn(p, r.FD, r, OriginConnect), r)
		}
	}
}

// addProcessCall folds a fork, an exec or the library's end record.
func (t *Table) addProcessCall(p *Process, r *Record) {
	switch r.Call {
	case CallFork:
		if r.Ret > 0 {
			p.Children = append(p.Children, int(r.Ret))
		}
	case CallExec:
		p.Execs = append(p.Execs, r.Path)
	case CallEnd:
		t.Counters.EAGAINSkipped += r.EAGAINSkipped
		t.Counters.WriteErrors += r.WriteErrors
		t.Counters.LostRecords += r.LostRecords
		t.Counters.LogReopens += r.LogReopens
	}
}

// addSocketCall folds a call that makes, names, closes or copies a
// descriptor.
func (t *Table) addSocketCall(p *Process, r *Record) {
	switch r.Call {
	case CallSocket:
		if r.Ret >= 0 {
			describe(t.newConn(p, int(r.Ret), r, OriginSocket), r)
		}
	case CallSocketpair:
		if r.FD >= 0 && r.FD2 >= 0 {
			a := t.newConn(p, r.FD, r, OriginSocketpair)
			b := t.newConn(p, r.FD2, r, OriginSocketpair)
			describe(a, r)
			describe(b, r)
		}
	case CallConnect:
		c := p.conn(r.FD)
		if c == nil {
			c = t.newConn(p, r.FD, r, OriginConnect)
		}
		c.Origin = OriginConnect
		describe(c, r)
	case CallAccept, CallAccept4:
		if l := p.conn(r.FD); l != nil {
			l.Listening = true
		}
		if r.Ret >= 0 {
			describe(t.newConn(p, int(r.Ret), r, OriginAccept), r)
		}
	case CallBind, CallListen:
		c := p.conn(r.FD)
		if c == nil {
			c = t.newConn(p, r.FD, r, OriginInherited)
		}
		describe(c, r)
		if r.Call == CallListen {
			c.Listening = true
		}
	case CallClose:
		t.closeFD(p, r.FD, r.TS)
	case CallShutdown:
		if c := p.conn(r.FD); c != nil && (r.How == 1 || r.How == 2) {
			c.ShutWrite = true
		}
	case CallDup, CallDup2, CallDup3:
		t.dup(p, r)
	}
}

// dup makes the descriptor a dup returned refer to the connection of the
// one it copied.
func (t *Table) dup(p *Process, r *Record) {
	nfd := int(r.Ret)
	if nfd == r.FD {
		return
	}
	t.closeFD(p, nfd, r.TS)
	if c := p.conn(r.FD); c != nil {
		p.fds[nfd] = fdRef{c: c, ready: r.End()}
		p.spans = append(p.spans, fdSpan{fd: nfd, c: c, from: r.End()})
		c.refs++
		if !slices.Contains(c.FDs, nfd) {
			c.FDs = append(c.FDs, nfd)
		}
	}
}

func (t *Table) addData(p *Process, r *Record) {
	ref := p.fds[r.FD]
	c := ref.c
	if c != nil && ref.ready > r.TS {
		// A call entered before the call that reused the descriptor
		// returned, logged after the reuse (another thread's buffer): it
		// belongs to the previous occupant.
		if sp := p.spanBefore(r.FD, c, r.TS); sp != nil {
			c = sp.c
		}
	}
	if c == nil {
		c = t.reopened(p, r)
	}
	if c == nil {
		o := OriginInherited
		if r.Sock == SockUnknown && r.Local == "" && r.Remote == "" {
			o = OriginUnknown
		}
		c = t.newConn(p, r.FD, r, o)
		c.Opened = 0
		p.fds[r.FD] = fdRef{c: c} // it was there before this call
	}
	describe(c, r)
	if c.Origin == OriginUnknown && c.Sock == SockUnknown && c.Local == "" && c.Remote == "" {
		t.Counters.Unattributed++
	}
	if r.Peek {
		t.Counters.PeekCalls++
		return
	}
	if r.Ret == 0 {
		t.Counters.EmptyCalls++
		if r.Call.Receives() && c.Sock.Stream() {
			c.EOF = true
		}
		if !c.Sock.Datagram() {
			return
		}
	} else {
		t.Counters.DataCalls++
	}
	m := Msg{Call: r.Call, TS: r.TS, End: r.End(), Bytes: r.Ret, Peer: r.Peer, Sum: r.Sum, HasSum: r.HasSum, TID: r.TID}
	if r.Call.Receives() {
		m.Dir = DirRecv
		m.Offset = c.RecvBytes
		c.RecvBytes += r.Ret
		c.RecvMsgs++
	} else {
		m.Offset = c.SentBytes
		c.SentBytes += r.Ret
		c.SentMsgs++
	}
	c.Msgs = append(c.Msgs, m)
}

// Lookup returns the connection that descriptor fd of process k referred
// to at time ts (ns), or nil. A descriptor refers to a connection from the
// call that created it (or, for one first seen in a data call, from that
// call) until the call that closed it.
func (t *Table) Lookup(k ProcKey, fd int, ts int64) *Conn {
	p := t.procs[k]
	if p == nil {
		return nil
	}
	for i := len(p.spans) - 1; i >= 0; i-- {
		sp := p.spans[i]
		if sp.fd == fd && sp.from <= ts && (sp.to == 0 || ts < sp.to) {
			return sp.c
		}
	}
	return nil
}

// Find returns the connections with the given local and remote endpoints
// (either may be "" to match any), in the order they were opened.
func (t *Table) Find(local, remote string) []*Conn {
	var out []*Conn
	for _, c := range t.Conns {
		if (local == "" || c.Local == local) && (remote == "" || c.Remote == remote) {
			out = append(out, c)
		}
	}
	return out
}

// ReadFrom reads every record of r into the table, with its headers. It
// returns r's error, if any.
func (t *Table) ReadFrom(r *Reader) error {
	seen := 0
	for r.Scan() {
		for ; seen < len(r.Headers()); seen++ {
			t.AddHeader(r.Headers()[seen])
		}
		t.Add(r.Record())
	}
	for ; seen < len(r.Headers()); seen++ {
		t.AddHeader(r.Headers()[seen])
	}
	t.Skipped += r.Skipped()
	t.Warnings = append(t.Warnings, r.Warnings()...)
	return r.Err()
}

// ReadFiles reads the preload traces in the named files (plain, gzip or
// zstd) into a new table.
func ReadFiles(opt Options, paths ...string) (*Table, error) {
	t := NewTable()
	for _, p := range paths {
		if err := t.readFile(p, opt); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Table) readFile(path string, opt Options) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, _, done, err := decompress.NewReader(f, decompress.Options{BufSize: 256 << 10, LowMem: true})
	defer done()
	if err != nil {
		return &ParseError{File: path, Err: err}
	}
	return t.ReadFrom(NewReader(r, path, opt))
}
