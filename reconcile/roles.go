package reconcile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RoleMap names hosts and endpoints: the roles map file of `wirepath
// reconcile --roles`. Each line is
//
//	ADDRESS[:PORT] NAME [ALIAS...]   # comment
//
// An address alone names a host (so /etc/hosts files can be used as they
// are; aliases are ignored); an address with a port names a role, such as
// "10.0.0.5:5432 db". IPv6 endpoints are written "[fe80::1]:53". Blank lines
// and text after '#' are ignored. Several keys may share one name (replicas
// named alike are one node).
type RoleMap struct {
	hosts map[netip.Addr]string
	eps   map[netip.AddrPort]string
}

// RolesError reports a bad line of a roles map file.
type RolesError struct {
	File string // file name, "" for a stream
	Line int    // 1-based line number
	Err  error
}

// Error formats the error as file:line: err.
func (e *RolesError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *RolesError) Unwrap() error { return e.Err }

// Sentinel errors of ParseRoles, wrapped in a *RolesError.
var (
	ErrRolesSyntax    = errors.New("want ADDRESS[:PORT] NAME")
	ErrRolesAddress   = errors.New("bad address")
	ErrRolesName      = errors.New("bad name")
	ErrRolesDuplicate = errors.New("duplicate entry")
)

// maxRolesLine bounds one line of a roles map.
const maxRolesLine = 64 << 10

// ReadRoles reads the roles map file at path.
func ReadRoles(path string) (*RoleMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseRoles(f, path)
}

// ParseRoles parses a roles map; file names r in errors. The first bad
// line stops it with a *RolesError.
func ParseRoles(r io.Reader, file string) (*RoleMap, error) {
	m := &RoleMap{hosts: map[netip.Addr]string{}, eps: map[netip.AddrPort]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxRolesLine)
	hostLine := map[netip.Addr]int{}
	epLine := map[netip.AddrPort]int{}
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		bad := func(err error, format string, args ...any) error {
			return &RolesError{File: file, Line: line, Err: fmt.Errorf("%w: %s", err, fmt.Sprintf(format, args...))}
		}
		if len(f) < 2 {
			return nil, bad(ErrRolesSyntax, "%q has no name", f[0])
		}
		name := f[1]
		if !validName(name) {
			return nil, bad(ErrRolesName, "%q (a name is printable UTF-8 without spaces)", name)
		}
		if ap, err := netip.ParseAddrPort(f[0]); err == nil {
			ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			if prev, ok := epLine[ap]; ok && m.eps[ap] != name {
				return nil, bad(ErrRolesDuplicate, "%s is named %q on line %d", ap, m.eps[ap], prev)
			}
			epLine[ap] = line
			m.eps[ap] = name
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(f[0], "["), "]"))
		if err != nil {
			return nil, bad(ErrRolesAddress, "%q is neither an address nor an address:port", f[0])
		}
		a = a.Unmap()
		if prev, ok := hostLine[a]; ok && m.hosts[a] != name {
			return nil, bad(ErrRolesDuplicate, "%s is named %q on line %d", a, m.hosts[a], prev)
		}
		hostLine[a] = line
		m.hosts[a] = name
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &RolesError{File: file, Line: line + 1, Err: fmt.Errorf("line longer than %d bytes", maxRolesLine)}
		}
		return nil, err
	}
	return m, nil
}

// validName reports whether s can name a node: valid UTF-8, printable, no
// spaces.
func validName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// Host returns the name the map gives address a.
func (m *RoleMap) Host(a netip.Addr) (string, bool) {
	if m == nil {
		return "", false
	}
	n, ok := m.hosts[a.Unmap()]
	return n, ok
}

// Endpoint returns the name the map gives endpoint ap.
func (m *RoleMap) Endpoint(ap netip.AddrPort) (string, bool) {
	if m == nil {
		return "", false
	}
	n, ok := m.eps[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())]
	return n, ok
}

// Len returns the number of entries.
func (m *RoleMap) Len() int {
	if m == nil {
		return 0
	}
	return len(m.hosts) + len(m.eps)
}

// String formats the map in the file format, one entry per line, hosts
// before endpoints, each sorted; ParseRoles reads it back to an equal map.
func (m *RoleMap) String() string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	hs := make([]netip.Addr, 0, len(m.hosts))
	for a := range m.hosts {
		hs = append(hs, a)
	}
	slices.SortFunc(hs, netip.Addr.Compare)
	for _, a := range hs {
		fmt.Fprintf(&b, "%s %s\n", a, m.hosts[a])
	}
	es := make([]netip.AddrPort, 0, len(m.eps))
	for ap := range m.eps {
		es = append(es, ap)
	}
	slices.SortFunc(es, netip.AddrPort.Compare)
	for _, ap := range es {
		fmt.Fprintf(&b, "%s %s\n", ap, m.eps[ap])
	}
	return b.String()
}
