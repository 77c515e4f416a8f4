package preload

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/internal/lines"
)

// StraceOptions controls ConvertStrace.
type StraceOptions struct {
	// Host names the machine the trace was taken on (headers need one).
	Host string
	// Strict makes the first line that cannot be understood an error;
	// otherwise such lines are skipped and counted.
	Strict bool
	// MaxWarnings bounds the warnings kept (default 10).
	MaxWarnings int
}

// StraceStats is the accounting of a conversion: every line is counted in
// Lines and in exactly one of Converted, Ignored, Unfinished and Skipped.
type StraceStats struct {
	Lines      int64 `json:"lines"`
	Converted  int64 `json:"converted"`  // socket calls written as records
	Ignored    int64 `json:"ignored"`    // calls on other descriptors, other syscalls, signals, exits
	Unfinished int64 `json:"unfinished"` // "<unfinished ...>" halves, written when resumed
	Skipped    int64 `json:"skipped"`    // lines not understood
	// Dangling counts unfinished calls never resumed (the trace was cut).
	Dangling int64 `json:"dangling"`
	// Records counts the records written: one per converted call, one per
	// datagram of sendmmsg and recvmmsg.
	Records  int64    `json:"records"`
	Warnings []string `json:"warnings,omitempty"`
}

// ConvertStrace converts the output of `strace -f -ttt -yy` (with or
// without -o, -T and -s) into a preload trace written to w: one header per
// process (from execve and clone) and one record per socket call. Calls are
// recognised as socket calls from strace's -yy descriptor annotations
// (<TCP:[...]>, <UDP:[...]>, <UNIX-STREAM:[...]>, ...), which also give the
// endpoints. When strace printed a datagram's whole payload its CRC-32 is
// computed, so that the record matches the library's. When in is an
// io.ReadSeeker the input is read twice, the first time to learn which
// process created each UNIX socket, so that records name the peer pid.
//
// file names the input in errors. The accounting is returned even with an
// error.
func ConvertStrace(in io.Reader, file string, w *Writer, opt StraceOptions) (StraceStats, error) {
	if opt.MaxWarnings <= 0 {
		opt.MaxWarnings = 10
	}
	if opt.Host == "" {
		opt.Host = "localhost"
	}
	c := &straceConv{opt: opt, file: file, w: w, procs: map[int]*straceProc{}, pending: map[int]pendingCall{}, tgid: map[int]int{}, inodeOwner: map[string]int{}}
	if rs, ok := in.(io.ReadSeeker); ok {
		start, err := rs.Seek(0, io.SeekCurrent)
		if err == nil {
			c.learnInodes(rs)
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return c.stats, err
			}
		}
	}
	err := c.run(in)
	c.stats.Dangling = int64(len(c.pending))
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return c.stats, err
}

type straceProc struct {
	pid     int
	ppid    int
	name    string
	exe     string
	start   int64
	written bool
	// desc is the last description written per fd, so that a record says
	// where a descriptor goes only when that is news.
	desc map[int]fdDesc
}

type fdDesc struct {
	sock          SockType
	local, remote string
	inode, peer   string
}

type pendingCall struct {
	ts   int64
	text string
}

type straceConv struct {
	opt     StraceOptions
	file    string
	w       *Writer
	sc      *lines.Scanner
	stats   StraceStats
	procs   map[int]*straceProc
	pending map[int]pendingCall
	// tgid maps thread ids to the process they belong to.
	tgid map[int]int
	// inodeOwner maps a UNIX socket inode to the pid that created it.
	inodeOwner map[string]int
	// mainPID is the pid of lines without a pid prefix (strace without -o
	// prints none for the first process), learnt from its set_tid_address.
	mainPID int
	rec     Record
}

// warn handles the error of the line being converted: it returns the
// error that stops the conversion when reading strictly, and otherwise
// counts the line as skipped.
func (c *straceConv) warn(err error) error {
	if !c.sc.Skip(err) {
		return c.sc.Err()
	}
	if p := c.sc.Problems(); int64(len(p)) == c.sc.Skipped() {
		c.stats.Warnings = append(c.stats.Warnings, p[len(p)-1].Error())
	}
	c.stats.Skipped++
	return nil
}

func (c *straceConv) run(in io.Reader) error {
	c.sc = lines.NewScanner(in, c.file, lines.Options{KeepEmpty: true, Strict: c.opt.Strict, MaxProblems: c.opt.MaxWarnings})
	for c.sc.Scan() {
		c.stats.Lines++
		if err := c.doLine(strings.TrimRight(string(c.sc.Bytes()), "\r")); err != nil {
			return err
		}
	}
	return c.sc.Err()
}

// splitPrefix takes the pid and timestamp off a line.
func splitPrefix(s string) (pid int, ts int64, rest string, err error) {
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "[pid") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return 0, 0, "", errors.New("unterminated [pid N]")
		}
		pid, err = strconv.Atoi(strings.TrimSpace(s[4:end]))
		if err != nil {
			return 0, 0, "", fmt.Errorf("bad pid %q", s[4:end])
		}
		s = strings.TrimLeft(s[end+1:], " ")
	}
	f, after, ok := strings.Cut(s, " ")
	if !ok {
		return 0, 0, "", errors.New("no timestamp")
	}
	if !strings.Contains(f, ".") { // "PID " prefix of strace -o with -f
		if pid, err = strconv.Atoi(f); err != nil {
			return 0, 0, "", fmt.Errorf("bad pid %q", f)
		}
		s = strings.TrimLeft(after, " ")
		if f, after, ok = strings.Cut(s, " "); !ok {
			return 0, 0, "", errors.New("no timestamp")
		}
	}
	ts, err = parseStraceTime(f)
	if err != nil {
		return 0, 0, "", err
	}
	return pid, ts, after, nil
}

// parseStraceTime parses -ttt's seconds.microseconds (any fraction).
func parseStraceTime(f string) (int64, error) {
	sec, frac, ok := strings.Cut(f, ".")
	if !ok || sec == "" || frac == "" {
		return 0, fmt.Errorf("bad timestamp %q (run strace with -ttt)", f)
	}
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s < 0 || s > 1<<33 {
		return 0, fmt.Errorf("bad timestamp %q (run strace with -ttt)", f)
	}
	if len(frac) > 9 {
		frac = frac[:9]
	}
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("bad timestamp %q", f)
	}
	for i := len(frac); i < 9; i++ {
		ns *= 10
	}
	return s*1e9 + ns, nil
}

func (c *straceConv) doLine(line string) error {
	if strings.TrimSpace(line) == "" {
		c.stats.Ignored++
		return nil
	}
	pid, ts, rest, err := splitPrefix(line)
	if err != nil {
		return c.warn(err)
	}
	if pid == 0 {
		pid = c.mainPID
	}
	if strings.HasPrefix(rest, "+++") || strings.HasPrefix(rest, "---") {
		c.stats.Ignored++
		return nil
	}
	start := ts
	if strings.HasPrefix(rest, "<... ") {
		i := strings.Index(rest, " resumed>")
		if i < 0 {
			return c.warn(errors.New("bad resumed line"))
		}
		p, ok := c.pending[pid]
		if !ok {
			return c.warn(fmt.Errorf("resumed call of pid %d that did not start", pid))
		}
		delete(c.pending, pid)
		rest = p.text + rest[i+len(" resumed>"):]
		start = p.ts
	} else if t, ok := strings.CutSuffix(rest, " <unfinished ...>"); ok {
		if _, dup := c.pending[pid]; dup {
			c.stats.Dangling++
		}
		c.pending[pid] = pendingCall{ts: ts, text: t}
		c.stats.Unfinished++
		return nil
	}
	call, err := parseCall(rest)
	if err != nil {
		return c.warn(err)
	}
	ok, err := c.convert(pid, start, ts, call)
	if err != nil {
		return c.warn(err)
	}
	if ok {
		c.stats.Converted++
	} else {
		c.stats.Ignored++
	}
	return nil
}

// straceCall is one syscall line, split.
type straceCall struct {
	name  string
	args  []string
	ret   string // the return value with its annotation, "?" if none
	errno string
	dur   int64 // from -T, else -1
}

// parseCall splits "name(arg, arg, ...) = ret [ERRNO (text)] [<0.000012>]".
func parseCall(s string) (straceCall, error) {
	c := straceCall{dur: -1}
	open := strings.IndexByte(s, '(')
	if open <= 0 {
		return c, fmt.Errorf("not a system call: %.40q", s)
	}
	c.name = s[:open]
	for _, r := range c.name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return c, fmt.Errorf("bad system call name %.40q", c.name)
		}
	}
	args, end, err := splitArgs(s, open+1)
	if err != nil {
		return c, err
	}
	c.args = args
	tail := strings.TrimSpace(s[end:])
	if !strings.HasPrefix(tail, "=") {
		return c, fmt.Errorf("no return value in %.60q", s)
	}
	tail = strings.TrimSpace(tail[1:])
	if i := strings.LastIndex(tail, " <"); i >= 0 && strings.HasSuffix(tail, ">") {
		if d, err := parseStraceTime(tail[i+2 : len(tail)-1]); err == nil {
			c.dur = d
			tail = tail[:i]
		}
	}
	ret, more, _ := cutRet(tail)
	c.ret = ret
	if more = strings.TrimSpace(more); strings.HasPrefix(more, "E") {
		c.errno, _, _ = strings.Cut(more, " ")
	}
	return c, nil
}

// cutRet takes the return value, with its <...> annotation, off tail.
func cutRet(tail string) (ret, rest string, ok bool) {
	i := 0
	for i < len(tail) && tail[i] != ' ' && tail[i] != '<' {
		i++
	}
	if i < len(tail) && tail[i] == '<' {
		j := annotationEnd(tail, i)
		if j < 0 {
			return tail, "", false
		}
		i = j
	}
	return tail[:i], tail[i:], true
}

// annotationEnd returns the index after the '>' closing the <...> at i;
// '>' inside brackets or quotes (as in "->") does not close it.
func annotationEnd(s string, i int) int {
	depth := 0
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '[':
			depth++
		case ']':
			depth--
		case '"':
			k := skipString(s, j)
			if k < 0 {
				return -1
			}
			j = k - 1
		case '>':
			if depth <= 0 {
				return j + 1
			}
		}
	}
	return -1
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// splitArgs splits the argument list starting at i (after '(') at top-level
// commas and returns the arguments and the index after the closing ')'.
func splitArgs(s string, i int) ([]string, int, error) {
	var args []string
	depth := 0
	start := i
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"':
			k := skipString(s, j)
			if k < 0 {
				return nil, 0, errors.New("unterminated string")
			}
			j = k - 1
		case '<':
			if j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
				k := annotationEnd(s, j)
				if k < 0 {
					return nil, 0, errors.New("unterminated <...> annotation")
				}
				j = k - 1
			}
		case '(', '[', '{':
			depth++
		case ']', '}':
			depth--
		case ')':
			if depth == 0 {
				if a := strings.TrimSpace(s[start:j]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, j + 1, nil
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:j]))
				start = j + 1
			}
		case '/':
			if j+1 < len(s) && s[j+1] == '*' { // /* 35 vars */
				if k := strings.Index(s[j:], "*/"); k > 0 {
					j += k + 1
				}
			}
		}
	}
	return nil, 0, errors.New("unterminated argument list")
}

// fdAnn is a descriptor with its -yy annotation.
type fdAnn struct {
	fd   int
	kind string // "TCP", "UDPv6", "UNIX-STREAM", "" for files
	body string // inside the brackets
	ok   bool
}

// parseFD parses "3<TCP:[1.2.3.4:5->6.7.8.9:10]>" or "3</path>" or "3".
func parseFD(a string) fdAnn {
	i := 0
	for i < len(a) && a[i] >= '0' && a[i] <= '9' {
		i++
	}
	if i == 0 {
		return fdAnn{}
	}
	fd, err := strconv.Atoi(a[:i])
	if err != nil {
		return fdAnn{}
	}
	r := fdAnn{fd: fd, ok: true}
	if i < len(a) && a[i] == '<' && strings.HasSuffix(a, ">") {
		in := a[i+1 : len(a)-1]
		if k, body, ok := strings.Cut(in, ":["); ok && strings.HasSuffix(body, "]") && isUpperKind(k) {
			r.kind, r.body = k, body[:len(body)-1]
		}
	}
	return r
}

func isUpperKind(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == 'v') {
			return false
		}
	}
	return true
}

func sockOfKind(k string) SockType {
	switch k {
	case "TCP", "TCPv6":
		return SockTCP
	case "UDP", "UDPv6", "UDPLITE", "UDPLITEv6":
		return SockUDP
	case "UNIX-STREAM", "UNIX":
		return SockUnixStream
	case "UNIX-DGRAM":
		return SockUnixDgram
	case "UNIX-SEQPACKET":
		return SockUnixSeqpacket
	case "RAW", "RAWv6":
		return SockRaw
	}
	return SockUnknown
}

// describeAnn turns an annotation's body into endpoints. TCP/UDP bodies are
// "inode", "local" or "local->remote"; UNIX bodies are "inode",
// "inode->peer", with an optional ,"path".
func describeAnn(a fdAnn) fdDesc {
	d := fdDesc{sock: sockOfKind(a.kind)}
	if d.sock == SockUnknown {
		return d
	}
	body := a.body
	if d.sock.Unix() {
		pathPart := ""
		if i := strings.Index(body, ",\""); i >= 0 {
			if p, err := strconv.Unquote(body[i+1:]); err == nil {
				pathPart = p
			}
			body = body[:i]
		}
		d.inode, d.peer, _ = strings.Cut(body, "->")
		if pathPart != "" {
			d.local = "unix:" + pathPart
		} else {
			d.local = "unix:"
		}
		return d
	}
	l, r, _ := strings.Cut(body, "->")
	if isNumber(l) { // only the inode: not bound yet
		d.inode = l
		return d
	}
	d.local, d.remote = normEndpoint(l), normEndpoint(r)
	return d
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// normEndpoint writes IPv4-mapped IPv6 endpoints as IPv4, as the library does.
func normEndpoint(s string) string {
	if rest, ok := strings.CutPrefix(s, "[::ffff:"); ok {
		if i := strings.Index(rest, "]:"); i > 0 && strings.Count(rest[:i], ".") == 3 {
			return rest[:i] + rest[i+1:]
		}
	}
	return s
}

// parseSockaddr turns strace's {sa_family=AF_INET, sin_port=htons(80),
// sin_addr=inet_addr("1.2.3.4")} (and the AF_INET6 and AF_UNIX forms) into
// an endpoint. msg_name={...} is accepted too.
func parseSockaddr(a string) string {
	if i := strings.Index(a, "sa_family="); i >= 0 {
		a = a[i:]
	} else {
		return ""
	}
	field := func(key string) string {
		i := strings.Index(a, key+"=")
		if i < 0 {
			return ""
		}
		v := a[i+len(key)+1:]
		if j := strings.IndexAny(v, ",}"); j >= 0 {
			// a quoted value may hold , or }
			if strings.HasPrefix(v, "\"") {
				if k := skipString(v, 0); k > 0 {
					return v[:k]
				}
			}
			if strings.HasPrefix(v, "inet_pton(") || strings.HasPrefix(v, "inet_addr(") || strings.HasPrefix(v, "htons(") {
				if k := strings.IndexByte(v, ')'); k > 0 {
					return v[:k+1]
				}
			}
			return v[:j]
		}
		return v
	}
	inner := func(v string) string { // htons(80) -> 80, inet_addr("x") -> x
		if i := strings.IndexByte(v, '('); i >= 0 && strings.HasSuffix(v, ")") {
			v = v[i+1 : len(v)-1]
		}
		if i := strings.LastIndexByte(v, ','); i >= 0 { // inet_pton(AF_INET6, "::1", &sin6_addr)
			parts := strings.Split(v, ",")
			for _, p := range parts {
				if p = strings.TrimSpace(p); strings.HasPrefix(p, "\"") {
					v = p
				}
			}
		}
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v
	}
	switch fam := field("sa_family"); fam {
	case "AF_INET":
		return inner(field("sin_addr")) + ":" + inner(field("sin_port"))
	case "AF_INET6":
		return normEndpoint("[" + inner(field("sin6_addr")) + "]:" + inner(field("sin6_port")))
	case "AF_UNIX":
		p := field("sun_path")
		if p == "" {
			return "unix:"
		}
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		}
		if strings.HasPrefix(p, "@") || p == "" {
			return "unix:" + p
		}
		return "unix:" + p
	}
	return ""
}

// unquoteFull decodes a strace string argument if it is complete (not cut
// with "..."), for datagram checksums.
func unquoteFull(a string) ([]byte, bool) {
	if !strings.HasPrefix(a, "\"") || !strings.HasSuffix(a, "\"") || len(a) < 2 {
		return nil, false
	}
	// strace escapes as C: \n \t \r \v \f \\ \" and octal \NNN, or \xNN with -x.
	var out []byte
	s := a[1 : len(a)-1]
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' {
			out = append(out, ch)
			continue
		}
		i++
		if i >= len(s) {
			return nil, false
		}
		switch e := s[i]; {
		case e == 'n':
			out = append(out, '\n')
		case e == 't':
			out = append(out, '\t')
		case e == 'r':
			out = append(out, '\r')
		case e == 'v':
			out = append(out, '\v')
		case e == 'f':
			out = append(out, '\f')
		case e == '\\' || e == '"' || e == '\'':
			out = append(out, e)
		case e == 'x':
			if i+2 >= len(s) {
				return nil, false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return nil, false
			}
			out = append(out, byte(v))
			i += 2
		case e >= '0' && e <= '7':
			v := 0
			n := 0
			for n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
				v = v*8 + int(s[i]-'0')
				i++
				n++
			}
			i--
			if v > 255 {
				return nil, false
			}
			out = append(out, byte(v))
		default:
			return nil, false
		}
	}
	return out, true
}

// iovStrings returns the iov_base strings of an iovec array argument and
// the sum of the iov_len values.
func iovStrings(a string) (bases []string, total int64, ok bool) {
	ok = true
	for {
		i := strings.Index(a, "iov_base=")
		if i < 0 {
			break
		}
		a = a[i+len("iov_base="):]
		if strings.HasPrefix(a, "\"") {
			k := skipString(a, 0)
			if k < 0 {
				return nil, 0, false
			}
			b := a[:k]
			if strings.HasPrefix(a[k:], "...") {
				ok = false
			}
			bases = append(bases, b)
			a = a[k:]
		} else {
			ok = false
		}
		j := strings.Index(a, "iov_len=")
		if j < 0 {
			return nil, 0, false
		}
		a = a[j+len("iov_len="):]
		k := 0
		for k < len(a) && a[k] >= '0' && a[k] <= '9' {
			k++
		}
		n, err := strconv.ParseInt(a[:k], 10, 64)
		if err != nil {
			return nil, 0, false
		}
		total += n
	}
	return bases, total, ok
}

var straceCalls = map[string]Call{
	"socket": CallSocket, "socketpair": CallSocketpair, "connect": CallConnect, "accept": CallAccept,
	"accept4": CallAccept4, "bind": CallBind, "listen": CallListen, "send": CallSend, "sendto": CallSendto,
	"sendmsg": CallSendmsg, "sendmmsg": CallSendmmsg, "write": CallWrite, "writev": CallWritev,
	"sendfile": CallSendfile, "sendfile64": CallSendfile, "recv": CallRecv, "recvfrom": CallRecvfrom,
	"recvmsg": CallRecvmsg, "recvmmsg": CallRecvmmsg, "read": CallRead, "readv": CallReadv,
	"close": CallClose, "shutdown": CallShutdown, "dup": CallDup, "dup2": CallDup2, "dup3": CallDup3,
	"fcntl": CallDup, "clone": CallFork, "clone3": CallFork, "fork": CallFork, "vfork": CallFork,
	"execve": CallExec, "execveat": CallExec,
}

func (c *straceConv) proc(pid int, ts int64) *straceProc {
	if t, ok := c.tgid[pid]; ok {
		pid = t
	}
	p := c.procs[pid]
	if p == nil {
		p = &straceProc{pid: pid, start: ts, desc: map[int]fdDesc{}}
		c.procs[pid] = p
	}
	return p
}

func (c *straceConv) header(p *straceProc) error {
	p.written = true
	return c.w.WriteHeader(&Header{Version: Version, Tool: "strace", Host: c.opt.Host, PID: p.pid, PPID: p.ppid, Process: p.name, Exe: p.exe, StartTS: p.start})
}

// convert turns one call into a record; it reports whether it wrote one.
func (c *straceConv) convert(tid int, start, end int64, sc straceCall) (bool, error) {
	call, known := straceCalls[sc.name]
	if !known {
		return false, nil
	}
	p := c.proc(tid, start)
	r := &c.rec
	r.reset()
	r.PID, r.TID, r.TS, r.Call = p.pid, tid, start, call
	r.Dur = max(end-start, 0) // a resumed line with an earlier time: bad input
	if sc.dur >= 0 {
		r.Dur = sc.dur
	}
	if ok, err := setRet(r, sc); !ok || err != nil {
		return false, err
	}
	var write bool
	var err error
	switch call {
	case CallFork:
		write, err = c.fork(p, r, sc, end)
	case CallExec:
		return c.exec(p, r, sc)
	case CallSocket:
		write = c.socket(p, r, sc)
	case CallSocketpair:
		write = c.socketpair(p, r, sc)
	case CallDup, CallDup2, CallDup3:
		write = dup(p, r, sc)
	default:
		return c.fdCall(p, r, sc)
	}
	if !write || err != nil {
		return false, err
	}
	return true, c.writeWithHeader(p, r)
}

// arg returns the call's argument i, "" when it has fewer.
func (sc *straceCall) arg(i int) string {
	if i < len(sc.args) {
		return sc.args[i]
	}
	return ""
}

// setRet sets the return value (and errno) of r from the call's. It
// reports false for a return value that is an address, as of mmap: not a
// call this converter records.
func setRet(r *Record, sc straceCall) (bool, error) {
	if sc.ret == "?" {
		return true, nil
	}
	switch ra := parseFD(sc.ret); {
	case ra.ok:
		r.Ret = int64(ra.fd)
	case strings.HasPrefix(sc.ret, "-"):
		v, err := strconv.ParseInt(sc.ret, 10, 64)
		if err != nil {
			return false, fmt.Errorf("bad return value %q", sc.ret)
		}
		r.Ret = v
	case strings.HasPrefix(sc.ret, "0x"):
		return false, nil
	default:
		return false, fmt.Errorf("bad return value %q", sc.ret)
	}
	r.HasRet = true
	r.Errno = sc.errno
	return true, nil
}

// fork notes the child of a clone or fork (a thread of p, with
// CLONE_THREAD); it reports whether the call is recorded (not for a
// thread, nor a failed call).
func (c *straceConv) fork(p *straceProc, r *Record, sc straceCall, end int64) (bool, error) {
	if !r.HasRet || r.Ret <= 0 {
		return false, nil
	}
	child := int(r.Ret)
	if strings.Contains(strings.Join(sc.args, ","), "CLONE_THREAD") {
		c.tgid[child] = p.pid // a thread of p, not a process
		return false, nil
	}
	// The child may have run (and been named) before clone returned.
	cp := c.proc(child, end)
	if cp.ppid == 0 {
		cp.ppid = p.pid
		if cp.name == "" {
			cp.name, cp.exe = p.name, p.exe
		}
		if cp.written {
			if err := c.header(cp); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// exec writes the record of an execve and renames the process after the
// program, with a new header.
func (c *straceConv) exec(p *straceProc, r *Record, sc straceCall) (bool, error) {
	if r.Failed() {
		return false, nil
	}
	path, err := strconv.Unquote(sc.arg(0))
	if err != nil {
		path = sc.arg(0)
	}
	r.Path = path
	if !p.written {
		// The process's first call: name it after the program.
		p.name, p.exe = pathBase(path), path
		return true, c.writeWithHeader(p, r)
	}
	c.stats.Records++
	if err := c.w.WriteRecord(r); err != nil {
		return false, err
	}
	p.name, p.exe = pathBase(path), path
	p.desc = map[int]fdDesc{}
	return true, c.header(p)
}

// socket fills in a socket call; it reports false for a socket that is
// not of a kind recorded (netlink, packet).
func (c *straceConv) socket(p *straceProc, r *Record, sc straceCall) bool {
	if !r.HasRet || r.Failed() {
		r.Sock = sockFromArgs(sc.arg(0), sc.arg(1))
		return r.Sock != SockUnknown
	}
	ra := parseFD(sc.ret)
	d := describeAnn(ra)
	if d.sock == SockUnknown {
		return false // a netlink or packet socket
	}
	r.Sock = d.sock
	c.remember(p, ra.fd, d, false)
	return true
}

// socketpair fills in a socketpair call and notes its two descriptors.
func (c *straceConv) socketpair(p *straceProc, r *Record, sc straceCall) bool {
	fds := strings.Trim(sc.arg(3), "[]")
	a, b, _ := strings.Cut(fds, ",")
	fa, fb := parseFD(strings.TrimSpace(a)), parseFD(strings.TrimSpace(b))
	da, db := describeAnn(fa), describeAnn(fb)
	r.Sock = sockFromArgs(sc.arg(0), sc.arg(1))
	if r.Sock == SockUnknown {
		r.Sock = da.sock
	}
	if r.Sock == SockUnknown {
		return false
	}
	if fa.ok && fb.ok {
		r.FD, r.FD2 = fa.fd, fb.fd
		r.PeerPID = p.pid
		c.remember(p, fa.fd, da, false)
		c.remember(p, fb.fd, db, false)
	}
	return true
}

// dup fills in a dup of a socket (dup, dup2, dup3, fcntl F_DUPFD) and
// gives the new descriptor the old one's description.
func dup(p *straceProc, r *Record, sc straceCall) bool {
	if sc.name == "fcntl" && !strings.HasPrefix(sc.arg(1), "F_DUPFD") {
		return false
	}
	fa := parseFD(sc.arg(0))
	if !fa.ok || sockOfKind(fa.kind) == SockUnknown {
		return false
	}
	r.FD = fa.fd
	if !r.Failed() {
		p.desc[int(r.Ret)] = p.desc[fa.fd]
	}
	return true
}

// fdCall converts a call on a socket descriptor (its first argument):
// connect, accept, bind, listen, close, shutdown and the data calls.
func (c *straceConv) fdCall(p *straceProc, r *Record, sc straceCall) (bool, error) {
	fa := parseFD(sc.arg(0))
	if !fa.ok {
		return false, nil
	}
	d := describeAnn(fa)
	if d.sock == SockUnknown {
		return false, nil // a file, pipe or non-IP socket
	}
	r.FD = fa.fd
	switch call := r.Call; {
	case call == CallConnect:
		r.Sock = d.sock
		r.Remote = parseSockaddr(sc.arg(1))
		if d.local != "" && !d.sock.Unix() {
			r.Local = d.local
		}
		c.remember(p, fa.fd, fdDesc{sock: d.sock, local: r.Local, remote: r.Remote, inode: d.inode, peer: d.peer}, false)
	case call == CallAccept || call == CallAccept4:
		c.accept(p, r, sc, d)
	case call == CallBind:
		r.Sock = d.sock
		r.Local = parseSockaddr(sc.arg(1))
		c.remember(p, fa.fd, fdDesc{sock: d.sock, local: r.Local, inode: d.inode}, false)
	case call == CallListen:
		r.Sock, r.Local = d.sock, d.local
		c.remember(p, fa.fd, d, false)
	case call == CallClose:
		delete(p.desc, fa.fd)
	case call == CallShutdown:
		r.How = shutdownHow(sc.arg(1))
	case call.Data():
		return c.data(p, r, sc, fa.fd, d)
	}
	return true, c.writeWithHeader(p, r)
}

// accept fills in the new connection of an accept on the listener d.
func (c *straceConv) accept(p *straceProc, r *Record, sc straceCall, d fdDesc) {
	ra := parseFD(sc.ret)
	if !ra.ok {
		return
	}
	nd := describeAnn(ra)
	if nd.sock == SockUnknown {
		nd.sock = d.sock
	}
	if nd.sock.Unix() && d.local != "unix:" {
		nd.local = d.local // the listener's path
	}
	r.Sock, r.Local, r.Remote = nd.sock, nd.local, nd.remote
	if nd.sock.Unix() && nd.peer != "" {
		r.PeerPID = c.inodeOwner[nd.peer]
	}
	c.remember(p, ra.fd, nd, false)
}

// shutdownHow returns shutdown's how argument as a number (0 if unknown).
func shutdownHow(a string) int {
	switch a {
	case "SHUT_WR", "1":
		return 1
	case "SHUT_RDWR", "2":
		return 2
	}
	return 0
}

// data writes the record of a data call on fd, described by d (one record
// per datagram of sendmmsg and recvmmsg).
func (c *straceConv) data(p *straceProc, r *Record, sc straceCall, fd int, d fdDesc) (bool, error) {
	c.dataArgs(r, r.Call, sc, d)
	if c.remember(p, fd, d, true) {
		r.Sock, r.Local, r.Remote = d.sock, d.local, d.remote
		if d.sock.Unix() && d.peer != "" {
			r.PeerPID = c.inodeOwner[d.peer]
		}
	}
	if (r.Call == CallSendmmsg || r.Call == CallRecvmmsg) && !r.Failed() {
		return true, c.mmsg(p, r, sc.arg(1))
	}
	return true, c.writeWithHeader(p, r)
}

func (c *straceConv) writeWithHeader(p *straceProc, r *Record) error {
	if !p.written {
		if err := c.header(p); err != nil {
			return err
		}
	}
	c.stats.Records++
	return c.w.WriteRecord(r)
}

// remember notes what is known of fd; with data set it reports whether a
// data record should carry the description (the first use of the fd in
// this process, or endpoints that are news).
func (c *straceConv) remember(p *straceProc, fd int, d fdDesc, data bool) bool {
	old, seen := p.desc[fd]
	if d.sock == SockUnknown {
		return false
	}
	if d.local == "" {
		d.local = old.local
	}
	if d.remote == "" {
		d.remote = old.remote
	}
	p.desc[fd] = d
	if !data {
		return false
	}
	return !seen || (old.local != d.local && d.local != "" && !d.sock.Unix()) || (old.remote != d.remote && d.remote != "") ||
		(old.peer == "" && d.peer != "")
}

func sockFromArgs(family, typ string) SockType {
	t, _, _ := strings.Cut(typ, "|")
	switch family {
	case "AF_INET", "AF_INET6", "PF_INET", "PF_INET6":
		switch t {
		case "SOCK_STREAM":
			return SockTCP
		case "SOCK_DGRAM":
			return SockUDP
		case "SOCK_RAW":
			return SockRaw
		}
		return SockOther
	case "AF_UNIX", "AF_LOCAL", "PF_UNIX", "PF_LOCAL":
		switch t {
		case "SOCK_STREAM":
			return SockUnixStream
		case "SOCK_DGRAM":
			return SockUnixDgram
		case "SOCK_SEQPACKET":
			return SockUnixSeqpacket
		}
		return SockOther
	}
	return SockUnknown
}

// dataArgs fills the length, peer, checksum and flags of a data call.
func (c *straceConv) dataArgs(r *Record, call Call, sc straceCall, d fdDesc) {
	arg := sc.arg
	n := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return -1
		}
		return v
	}
	var payload []string // string arguments holding the data
	complete := true
	flags := ""
	switch call {
	case CallSend, CallSendto, CallWrite, CallRecv, CallRecvfrom, CallRead:
		r.Len = n(arg(2))
		payload = []string{arg(1)}
		if strings.HasSuffix(arg(1), "...") {
			complete = false
		}
		if call == CallSendto || call == CallRecvfrom {
			r.Peer = parseSockaddr(arg(4))
		}
		if call != CallWrite && call != CallRead {
			flags = arg(3)
		}
	case CallSendmsg, CallRecvmsg:
		var ok bool
		payload, r.Len, ok = iovStrings(arg(1))
		complete = ok
		if i := strings.Index(arg(1), "msg_name="); i >= 0 {
			r.Peer = parseSockaddr(arg(1)[i:])
		}
		flags = arg(2)
	case CallWritev, CallReadv:
		var ok bool
		payload, r.Len, ok = iovStrings(arg(1))
		complete = ok
	case CallSendfile:
		r.Len = n(arg(3))
		payload = nil
		complete = false
	default: // sendmmsg, recvmmsg: see mmsg
		payload = nil
		complete = false
	}
	if strings.Contains(flags, "MSG_PEEK") {
		r.Peek = true
	}
	if r.Failed() || !d.sock.Datagram() || !complete || len(payload) == 0 {
		return
	}
	var data []byte
	for _, s := range payload {
		b, ok := unquoteFull(s)
		if !ok {
			return
		}
		data = append(data, b...)
	}
	if r.Ret >= 0 && int64(len(data)) >= r.Ret {
		r.Sum, r.HasSum = crc32.ChecksumIEEE(data[:r.Ret]), true
	}
}

// mmsg writes one record per datagram of a sendmmsg or recvmmsg, whose
// vector strace prints as [{msg_hdr={...}, msg_len=N}, ...].
func (c *straceConv) mmsg(p *straceProc, r *Record, vec string) error {
	n := r.Ret
	elems := splitTop(strings.TrimSuffix(strings.TrimPrefix(vec, "["), "]"))
	base := *r
	for i := int64(0); i < n && i < int64(len(elems)); i++ {
		e := elems[i]
		rec := base
		if i > 0 { // the description rides on the first only
			rec.Sock, rec.Local, rec.Remote, rec.PeerPID = SockUnknown, "", "", 0
		}
		rec.Ret, rec.HasSum, rec.Sum, rec.Peer = -1, false, 0, ""
		if j := strings.LastIndex(e, "msg_len="); j >= 0 {
			if v, err := strconv.ParseInt(strings.TrimRight(e[j+len("msg_len="):], "}"), 10, 64); err == nil {
				rec.Ret = v
			}
		}
		if rec.Ret < 0 {
			return fmt.Errorf("no msg_len in datagram %d of %s", i, r.Call)
		}
		bases, total, ok := iovStrings(e)
		rec.Len = total
		if k := strings.Index(e, "msg_name="); k >= 0 {
			rec.Peer = parseSockaddr(e[k:])
		}
		if ok && len(bases) > 0 {
			var data []byte
			for _, b := range bases {
				if d, full := unquoteFull(b); full {
					data = append(data, d...)
				} else {
					data = nil
					break
				}
			}
			if data != nil && int64(len(data)) >= rec.Ret {
				rec.Sum, rec.HasSum = crc32.ChecksumIEEE(data[:rec.Ret]), true
			}
		}
		if err := c.writeWithHeader(p, &rec); err != nil {
			return err
		}
	}
	return nil
}

// splitTop splits s at commas outside strings and brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '"':
			if k := skipString(s, j); k > 0 {
				j = k - 1
			}
		case '[', '{', '(':
			depth++
		case ']', '}', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:j]))
				start = j + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

func pathBase(p string) string {
	b := path.Base(p)
	if len(b) > 15 { // the kernel's comm is 15 bytes
		b = b[:15]
	}
	return b
}

// learnInodes reads the input once to map each UNIX socket inode to the
// process that created it (socket, socketpair, accept).
func (c *straceConv) learnInodes(in io.Reader) {
	sc := lines.NewScanner(in, c.file, lines.Options{})
	// Every thread's process, learnt here before the conversion reads a
	// line: a new thread's first calls often come before the clone that
	// made it returns, and would otherwise be taken for a process's.
	tgid := c.tgid
	cloning := map[int]bool{} // a CLONE_THREAD clone not yet resumed, by caller
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte("UNIX")) && !bytes.Contains(line, []byte("clone")) && !bytes.Contains(line, []byte("set_tid_address")) {
			continue
		}
		pid, _, rest, err := splitPrefix(string(line))
		if err != nil || c.learnMainPID(pid, rest) {
			continue
		}
		if pid == 0 {
			pid = c.mainPID
		}
		if t, ok := tgid[pid]; ok {
			pid = t
		}
		if child, known, thread := threadOf(rest); thread {
			if known {
				tgid[child] = pid
			} else {
				cloning[pid] = true
			}
			continue
		}
		if cloning[pid] && (strings.HasPrefix(rest, "<... clone resumed>") || strings.HasPrefix(rest, "<... clone3 resumed>")) {
			delete(cloning, pid)
			if _, ret, ok := strings.Cut(rest, ") = "); ok {
				if child, err := strconv.Atoi(strings.TrimSpace(ret)); err == nil && child > 0 {
					tgid[child] = pid
				}
			}
			continue
		}
		if ret, ok := socketReturn(rest); ok {
			c.ownInodes(pid, ret)
		}
	}
}

// learnMainPID learns the pid of lines without a pid prefix from the
// first process's set_tid_address, and reports whether the line was that
// call.
func (c *straceConv) learnMainPID(pid int, rest string) bool {
	if pid != 0 || c.mainPID != 0 || !strings.HasPrefix(rest, "set_tid_address(") {
		return false
	}
	if _, ret, ok := strings.Cut(rest, ") = "); ok {
		c.mainPID, _ = strconv.Atoi(strings.TrimSpace(ret))
	}
	return true
}

// threadOf reports whether a call is a clone with CLONE_THREAD and, when
// its return value is known, the thread it created.
func threadOf(rest string) (child int, known, thread bool) {
	if !strings.HasPrefix(rest, "clone") || !strings.Contains(rest, "CLONE_THREAD") {
		return 0, false, false
	}
	if _, ret, ok := strings.Cut(rest, ") = "); ok {
		if child, err := strconv.Atoi(strings.TrimSpace(ret)); err == nil {
			return child, true, true
		}
	}
	return 0, false, true
}

// socketReturn returns the part of a finished socket, socketpair or
// accept call that holds the descriptors it made (with their inodes).
func socketReturn(rest string) (string, bool) {
	name, _, _ := strings.Cut(rest, "(")
	if r, ok := strings.CutPrefix(rest, "<... "); ok {
		name, _, _ = strings.Cut(r, " ")
	}
	if name != "socket" && name != "socketpair" && name != "accept" && name != "accept4" {
		return "", false
	}
	if strings.HasSuffix(rest, "<unfinished ...>") {
		return "", false
	}
	if name == "socketpair" { // the descriptors are an argument
		return rest, true
	}
	_, ret, ok := strings.Cut(rest, ") = ")
	return ret, ok
}

// ownInodes gives pid every UNIX socket inode annotated in ret that has
// no owner yet.
func (c *straceConv) ownInodes(pid int, ret string) {
	for {
		i := strings.Index(ret, "<UNIX")
		if i < 0 {
			return
		}
		ret = ret[i:]
		j := annotationEnd(ret, 0)
		if j < 0 {
			return
		}
		a := parseFD("0" + ret[:j])
		if d := describeAnn(a); d.inode != "" {
			if _, seen := c.inodeOwner[d.inode]; !seen {
				c.inodeOwner[d.inode] = pid
			}
		}
		ret = ret[j:]
	}
}
