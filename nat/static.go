package nat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/pcapio"
)

// MaxTableBytes bounds the size of a translation table file ReadTable
// accepts.
const MaxTableBytes = 64 << 20

// Given is a translation table given by the user (--nat-table): the
// mappings `wirepath nat --format json` writes, or the text form of
// docs/nat.md ("[PROTO] OUTSIDE INSIDE" per line). Unlike a learned Table
// it renames by endpoint, at all times: a packet's endpoint whose name is
// the outside name of a row gets the row's inside name. A row names one
// endpoint (addr:port) or every port of an address (addr:* or addr, the
// port kept). A row that cannot be applied is kept out and counted:
// an outside name given two inside names (a load balancer's round robin:
// which connection went where is only known by learning) and a JSON
// addr:* row whose box did not keep every port (ports_kept < conns: the
// inside port of a connection is not in the table).
type Given struct {
	// Rows are the mappings read, in file order; Applied those applied
	// (the others are counted in Ambiguous and PortUnknown).
	Rows    []Mapping
	Applied []Mapping
	// Ambiguous counts the rows kept out because their outside name has
	// another inside name too; PortUnknown the addr:* rows kept out
	// because the box changed some ports.
	Ambiguous   int
	PortUnknown int

	exact map[givenKey]netip.AddrPort // (proto, outside endpoint) -> inside
	addrs map[givenKey]netip.Addr     // (proto or 0, outside address) -> inside
}

// givenKey is a row's protocol (0: TCP and UDP and protocols without
// ports, for text rows without a protocol) and outside name.
type givenKey struct {
	proto uint8
	ap    netip.AddrPort
}

// TableError is a translation table's bad input: the file, the line and
// the byte offset of the error, and what is wrong.
type TableError struct {
	File   string
	Line   int
	Offset int64
	Err    error
}

// Error returns "FILE:LINE (byte OFFSET): what is wrong".
func (e *TableError) Error() string {
	return fmt.Sprintf("%s:%d (byte %d): %v", e.File, e.Line, e.Offset, e.Err)
}

// Unwrap returns what is wrong.
func (e *TableError) Unwrap() error { return e.Err }

// ReadTable reads a translation table (JSON or text, told apart by its
// first character other than white space: '{' is JSON) from r, named file
// in errors. It reads at most MaxTableBytes.
func ReadTable(r io.Reader, file string) (*Given, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTableBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > MaxTableBytes {
		return nil, &TableError{File: file, Line: lineAt(data, MaxTableBytes), Offset: MaxTableBytes, Err: fmt.Errorf("table larger than %d bytes", MaxTableBytes)}
	}
	return ParseTable(data, file)
}

// ReadTableFile reads the translation table in the file at path (see
// ReadTable).
func ReadTableFile(path string) (*Given, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTable(f, path)
}

// ParseTable parses a translation table (see ReadTable).
func ParseTable(data []byte, file string) (*Given, error) {
	var rows []Mapping
	var err error
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		rows, err = parseJSONTable(data, file)
	} else {
		rows, err = parseTextTable(data, file)
	}
	if err != nil {
		return nil, err
	}
	return newGiven(rows), nil
}

// lineAt returns the line of byte offset off in data (from 1).
func lineAt(data []byte, off int64) int {
	off = max(0, min(off, int64(len(data))))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// parseTextTable reads "[PROTO] OUTSIDE INSIDE" lines; '#' starts a
// comment.
func parseTextTable(data []byte, file string) ([]Mapping, error) {
	var rows []Mapping
	off := int64(0)
	for line := 1; len(data) > 0; line++ {
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		start := off
		off += int64(len(text)) + 1
		if i := bytes.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(string(text))
		if len(f) == 0 {
			continue
		}
		m, err := textRow(f)
		if err != nil {
			return nil, &TableError{File: file, Line: line, Offset: start, Err: err}
		}
		rows = append(rows, m)
	}
	return rows, nil
}

// textRow parses the fields of one text line.
func textRow(f []string) (Mapping, error) {
	var m Mapping
	switch len(f) {
	case 2:
		if _, err := parseProto(f[0]); err == nil {
			return m, errors.New("want \"[PROTO] OUTSIDE INSIDE\", got 2 fields")
		}
	case 3:
		p, err := parseProto(f[0])
		if err != nil {
			return m, err
		}
		m.Proto, f = p, f[1:]
	default:
		return m, fmt.Errorf("want \"[PROTO] OUTSIDE INSIDE\", got %d fields", len(f))
	}
	return rowOf(m, f[0], f[1])
}

// rowOf completes m with its outside and inside names.
func rowOf(m Mapping, outside, inside string) (Mapping, error) {
	var oAny, iAny bool
	var err error
	if m.Outside, oAny, err = parseName(outside); err != nil {
		return m, fmt.Errorf("outside name: %w", err)
	}
	if m.Inside, iAny, err = parseName(inside); err != nil {
		return m, fmt.Errorf("inside name: %w", err)
	}
	if m.Proto != 0 && !hasPorts(m.Proto) {
		oAny, iAny = true, true
		if m.Outside.Port() != 0 || m.Inside.Port() != 0 {
			return m, fmt.Errorf("%s has no ports", ProtoName(m.Proto))
		}
	}
	if oAny != iAny {
		return m, errors.New("one name has a port and the other not: write both as addr:port, or both as addr:* (or addr)")
	}
	if m.Outside.Addr().Is4() != m.Inside.Addr().Is4() {
		return m, errors.New("the two names are of different IP families")
	}
	m.AnyPort = oAny
	return m, nil
}

// parseName parses "addr:port", "[v6]:port", "addr:*", "[v6]:*" or an
// address alone; anyPort is set for the last three.
func parseName(s string) (ap netip.AddrPort, anyPort bool, err error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return ap, false, fmt.Errorf("address %q has a zone", s)
		}
		return netip.AddrPortFrom(a.Unmap(), 0), true, nil
	}
	if rest, ok := strings.CutSuffix(s, ":*"); ok {
		rest = strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]")
		a, err := netip.ParseAddr(rest)
		if err != nil || a.Zone() != "" {
			return ap, false, fmt.Errorf("bad address in %q", s)
		}
		return netip.AddrPortFrom(a.Unmap(), 0), true, nil
	}
	ap, err = netip.ParseAddrPort(s)
	if err != nil {
		return ap, false, fmt.Errorf("%q is not addr:port, addr:* or an address", s)
	}
	if ap.Addr().Zone() != "" {
		return ap, false, fmt.Errorf("address %q has a zone", s)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), false, nil
}

// parseProto parses a protocol as ProtoName writes it.
func parseProto(s string) (uint8, error) {
	switch strings.ToLower(s) {
	case "tcp":
		return pcapio.ProtoTCP, nil
	case "udp":
		return pcapio.ProtoUDP, nil
	case "icmp":
		return pcapio.ProtoICMP, nil
	case "icmpv6":
		return pcapio.ProtoICMPv6, nil
	}
	if n, ok := strings.CutPrefix(strings.ToLower(s), "ip"); ok {
		if v, err := strconv.ParseUint(n, 10, 8); err == nil && v > 0 {
			return uint8(v), nil
		}
	}
	return 0, fmt.Errorf("unknown protocol %q (tcp, udp, icmp, icmpv6 or ipN)", s)
}

// parseKind parses a Kind's name ("" is KindUnknown).
func parseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), nil
		}
	}
	if s == "" {
		return KindUnknown, nil
	}
	return 0, fmt.Errorf("unknown kind %q", s)
}

// parseJSONTable reads the document WriteJSON writes: its mappings (the
// rejected candidates, clocks and accounting are ignored).
func parseJSONTable(data []byte, file string) ([]Mapping, error) {
	fail := func(off int64, err error) error {
		return &TableError{File: file, Line: lineAt(data, off), Offset: off, Err: err}
	}
	// The syntax first, for its error's position in the file (a
	// Decoder's is relative to its buffer).
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return nil, fail(0, err)
		}
		off := se.Offset
		if off > 0 && off < int64(len(data)) {
			off-- // the offending byte
		}
		return nil, fail(off, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{', checked by the caller
		return nil, fail(dec.InputOffset(), err)
	}
	var rows []Mapping
	seen := false
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(off, jsonErr(err))
		}
		key, _ := tok.(string)
		switch key {
		case "version":
			var v int
			if err := dec.Decode(&v); err != nil {
				return nil, fail(off, jsonErr(err))
			}
			if v != FormatVersion {
				return nil, fail(off, fmt.Errorf("table version %d, this wirepath reads version %d", v, FormatVersion))
			}
		case "mappings":
			seen = true
			if rows, err = jsonMappings(dec, fail); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fail(dec.InputOffset(), jsonErr(err))
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(dec.InputOffset(), jsonErr(err))
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return nil, fail(off, errors.New("data after the table"))
	}
	if !seen {
		return nil, fail(0, errors.New(`no "mappings": not a table written by wirepath nat --format json`))
	}
	return rows, nil
}

// jsonErr makes a JSON error's message short.
func jsonErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// jsonMappings reads the array of mappings.
func jsonMappings(dec *json.Decoder, fail func(int64, error) error) ([]Mapping, error) {
	off := dec.InputOffset()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if err == nil {
			err = errors.New(`"mappings" is not an array`)
		}
		return nil, fail(off, jsonErr(err))
	}
	var rows []Mapping
	for dec.More() {
		off := dec.InputOffset()
		var j JSONMapping
		if err := dec.Decode(&j); err != nil {
			return nil, fail(off, jsonErr(err))
		}
		m, err := jsonRow(&j)
		if err != nil {
			return nil, fail(off, fmt.Errorf("mapping %d: %w", len(rows)+1, err))
		}
		rows = append(rows, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(dec.InputOffset(), jsonErr(err))
	}
	return rows, nil
}

// jsonRow converts one JSON mapping.
func jsonRow(j *JSONMapping) (Mapping, error) {
	var m Mapping
	p, err := parseProto(j.Proto)
	if err != nil {
		return m, err
	}
	if m.Kind, err = parseKind(j.Kind); err != nil {
		return m, err
	}
	m.Proto, m.Direction, m.DecidedBy = p, j.Direction, j.DecidedBy
	m.Conns, m.Matches, m.DataMatches, m.Score = j.Conns, j.Matches, j.DataMatches, j.Score
	m.FirstNS, m.LastNS = j.FirstNS, j.LastNS
	if m, err = rowOf(m, j.Outside, j.Inside); err != nil {
		return m, err
	}
	m.PortsKept = m.Conns // not said: every port kept
	if j.PortsKept != nil {
		m.PortsKept = *j.PortsKept
	}
	return m, nil
}

// newGiven indexes the rows: the applicable ones by outside name.
func newGiven(rows []Mapping) *Given {
	g := &Given{Rows: rows, exact: map[givenKey]netip.AddrPort{}, addrs: map[givenKey]netip.Addr{}}
	insides := map[givenKey]map[netip.AddrPort]bool{}
	keyOf := func(m *Mapping) givenKey {
		k := givenKey{proto: m.Proto, ap: m.Outside}
		if m.AnyPort {
			k.ap = netip.AddrPortFrom(m.Outside.Addr(), 0)
		}
		return k
	}
	for i := range rows {
		k := keyOf(&rows[i])
		if insides[k] == nil {
			insides[k] = map[netip.AddrPort]bool{}
		}
		insides[k][rows[i].Inside] = true
	}
	for i := range rows {
		m := &rows[i]
		k := keyOf(m)
		switch {
		case len(insides[k]) > 1:
			g.Ambiguous++
			continue
		case m.AnyPort && m.PortsKept < m.Conns:
			g.PortUnknown++
			continue
		case m.AnyPort:
			g.addrs[k] = m.Inside.Addr()
		default:
			g.exact[k] = m.Inside
		}
		g.Applied = append(g.Applied, *m)
	}
	return g
}

// rename returns the inside name of endpoint ap of protocol proto, and
// whether a row renames it: an endpoint row first (of the protocol, then
// one without a protocol), then an address row likewise.
func (g *Given) rename(proto uint8, ap netip.AddrPort) (netip.AddrPort, bool) {
	if ap.Addr().Is4In6() || ap.Addr().Zone() != "" {
		return ap, false // rows name plain addresses; renaming would mix families
	}
	if hasPorts(proto) {
		if in, ok := g.exact[givenKey{proto, ap}]; ok {
			return in, true
		}
		if in, ok := g.exact[givenKey{0, ap}]; ok {
			return in, true
		}
	}
	a := netip.AddrPortFrom(ap.Addr(), 0)
	in, ok := g.addrs[givenKey{proto, a}]
	if !ok {
		in, ok = g.addrs[givenKey{0, a}]
	}
	if !ok {
		return ap, false
	}
	return netip.AddrPortFrom(in, ap.Port()), true
}

// Lookup returns the names of a packet of protocol proto from src to dst
// after the table's renaming, and whether it renamed either.
func (g *Given) Lookup(proto uint8, src, dst netip.AddrPort) (csrc, cdst netip.AddrPort, ok bool) {
	if g == nil {
		return src, dst, false
	}
	s, ok1 := g.rename(proto, src)
	d, ok2 := g.rename(proto, dst)
	return s, d, ok1 || ok2
}
