package evidence

import "bytes"

// Dialect is the SQL dialect of a query text: it decides what quotes mean.
type Dialect uint8

// The SQL dialects.
const (
	// Postgres: '...' strings (E'...' with backslash escapes), "..."
	// identifiers, $tag$...$tag$ strings, $1 parameters.
	Postgres Dialect = iota
	// MySQL: '...' and "..." strings with backslash escapes, `...`
	// identifiers, ? parameters, # comments.
	MySQL
)

// maxSQLScan is how far into a query text the label is looked for.
const maxSQLScan = 4096

// SQL token kinds.
const (
	sqlEOF = iota
	sqlWord
	sqlIdent // a quoted identifier
	sqlString
	sqlNumber
	sqlPunct
)

type sqlTok struct {
	kind  int
	text  []byte // the word, the identifier or string without quotes, the number
	start int
}

// sqlLexer splits a query text into tokens, skipping comments (and
// reading sqlcommenter identifiers from them).
type sqlLexer struct {
	q []byte
	i int
	d Dialect
	b *Builder
}

func (l *sqlLexer) next() sqlTok {
	for l.i < len(l.q) {
		c := l.q[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			l.i++
		case c == '-' && l.at(1) == '-', c == '#' && l.d == MySQL:
			for l.i < len(l.q) && l.q[l.i] != '\n' {
				l.i++
			}
		case c == '/' && l.at(1) == '*':
			end := bytes.Index(l.q[l.i+2:], []byte("*/"))
			if end < 0 {
				l.i = len(l.q)
				break
			}
			l.b.sqlComment(l.q[l.i+2 : l.i+2+end])
			l.i += end + 4
		default:
			return l.token(c)
		}
	}
	return sqlTok{kind: sqlEOF, start: l.i}
}

func (l *sqlLexer) at(k int) byte {
	if l.i+k < len(l.q) {
		return l.q[l.i+k]
	}
	return 0
}

func (l *sqlLexer) token(c byte) sqlTok {
	start := l.i
	switch {
	case c == '\'' || (c == '"' && l.d == MySQL):
		esc := l.d == MySQL || (start > 0 && (l.q[start-1] == 'E' || l.q[start-1] == 'e'))
		return l.quoted(c, sqlString, esc)
	case c == '"' || c == '`':
		return l.quoted(c, sqlIdent, false)
	case c == '$' && l.d == Postgres && !isDigit(l.at(1)):
		return l.dollar()
	case isDigit(c) || (c == '.' && isDigit(l.at(1))):
		return l.span(sqlNumber, numberByte)
	case isWordByte(c) && !isDigit(c):
		return l.span(sqlWord, func(q []byte, j int) bool { return isWordByte(q[j]) || q[j] == '$' })
	case c == '$' || c == '?': // a parameter: $1, ?
		l.i++
		return l.span(sqlPunct, func(q []byte, j int) bool { return isDigit(q[j]) })
	}
	l.i++
	return sqlTok{kind: sqlPunct, text: l.q[start:l.i], start: start}
}

// span reads a token of kind from the token's start (l.i may already be
// past its first byte) while in(q, j) holds.
func (l *sqlLexer) span(kind int, in func(q []byte, j int) bool) sqlTok {
	start := l.i
	if kind == sqlPunct {
		start--
	}
	j := l.i
	for j < len(l.q) && in(l.q, j) {
		j++
	}
	l.i = j
	return sqlTok{kind: kind, text: l.q[start:j], start: start}
}

// numberByte reports whether q[j] continues a numeric literal.
func numberByte(q []byte, j int) bool {
	c := q[j]
	return isDigit(c) || c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && j > 0 && (q[j-1] == 'e' || q[j-1] == 'E'))
}

// quoted reads a literal or identifier quoted with q, where a doubled q
// (and, with esc, a backslash) escapes. An unterminated one ends the text.
func (l *sqlLexer) quoted(q byte, kind int, esc bool) sqlTok {
	start := l.i
	j := l.i + 1
	for j < len(l.q) {
		switch {
		case esc && l.q[j] == '\\':
			j += 2
			continue
		case l.q[j] == q && j+1 < len(l.q) && l.q[j+1] == q:
			j += 2
			continue
		case l.q[j] == q:
			l.i = j + 1
			return sqlTok{kind: kind, text: l.q[start+1 : j], start: start}
		}
		j++
	}
	l.i = len(l.q)
	return sqlTok{kind: sqlEOF, start: start}
}

// dollar reads a PostgreSQL dollar-quoted string $tag$...$tag$.
func (l *sqlLexer) dollar() sqlTok {
	start := l.i
	j := l.i + 1
	for j < len(l.q) && isWordByte(l.q[j]) {
		j++
	}
	if j >= len(l.q) || l.q[j] != '$' {
		l.i = j
		return sqlTok{kind: sqlPunct, text: l.q[start:j], start: start}
	}
	tag := l.q[start : j+1]
	end := bytes.Index(l.q[j+1:], tag)
	if end < 0 {
		l.i = len(l.q)
		return sqlTok{kind: sqlEOF, start: start}
	}
	l.i = j + 1 + end + len(tag)
	return sqlTok{kind: sqlString, text: l.q[j+1 : j+1+end], start: start}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// sqlComment reads a sqlcommenter comment (key='value',...): a
// traceparent in it is a propagated identifier.
func (b *Builder) sqlComment(c []byte) {
	i := indexFold(c, "traceparent='")
	if i < 0 {
		return
	}
	v := c[i+len("traceparent='"):]
	if j := bytes.IndexByte(v, '\''); j >= 0 {
		v = v[:j]
	}
	b.Stats.IDCandidates++
	norm, ok := parseTraceparent(b.buf[:0], v)
	if !ok {
		b.Stats.Malformed++
		return
	}
	b.addID(SrcTraceparent, norm)
}

// SQL adds the literals of a query text (string and numeric literals
// starting in its first MaxBytes) as tokens, and a sqlcommenter
// traceparent as an identifier, and returns its label: the statement's
// verb and first table, "SELECT users", "INSERT orders", "UPDATE
// public.accounts", "CREATE TABLE t", or the verb alone ("BEGIN",
// "SELECT" for SELECT 1). A WITH query is labelled by its main statement.
// The label is looked for in the first 4 KiB; unquoted names are
// lowercased. An unreadable text gives "".
func (b *Builder) SQL(q []byte, d Dialect) string {
	lx := sqlLexer{q: q[:min(len(q), maxSQLScan)], d: d, b: b}
	var lb sqlLabel
	for {
		t := lx.next()
		if t.kind == sqlEOF {
			break
		}
		if (t.kind == sqlString || t.kind == sqlNumber) && t.start < b.cfg.MaxBytes {
			b.Token(t.text)
		}
		lb.step(t)
		if lb.state == lDone && t.start >= b.cfg.MaxBytes {
			break
		}
	}
	return lb.label(b)
}

// States of the label finder.
const (
	lVerb     = iota // expecting the verb
	lWith            // inside WITH: expecting the main verb at depth 0
	lFrom            // expecting FROM at depth 0
	lInto            // expecting INTO (or, for MySQL, the table)
	lTable           // expecting the table name
	lObject          // CREATE/DROP/ALTER: expecting the object kind
	lDot             // after a table name: expecting '.' for a qualified name
	lQualPart        // after '.': expecting the rest of a qualified name
	lDone
)

type sqlLabel struct {
	state  int
	depth  int
	verb   []byte
	object []byte
	table  [2][]byte // schema-qualified name parts
	quoted [2]bool
	parts  int
}

func (s *sqlLabel) step(t sqlTok) {
	if t.kind == sqlPunct && len(t.text) == 1 {
		switch t.text[0] {
		case '(':
			s.depth++
		case ')':
			s.depth--
		case ';':
			s.state = lDone
			return
		}
	}
	if s.state <= lInto {
		s.find(t)
		return
	}
	switch s.state {
	case lTable:
		s.name(t)
	case lObject:
		if t.kind != sqlWord {
			s.state = lDone
			return
		}
		if !objectModifier(t.text) {
			s.object = t.text
			s.state = lTable
		}
	case lDot:
		if t.kind == sqlPunct && string(t.text) == "." && s.parts == 1 {
			s.state = lQualPart
			return
		}
		s.state = lDone
	case lQualPart:
		if t.kind == sqlWord || t.kind == sqlIdent {
			s.table[1], s.quoted[1], s.parts = t.text, t.kind == sqlIdent, 2
		}
		s.state = lDone
	}
}

// find handles the states before the table name: the verb, a WITH
// query's main verb, FROM, INTO.
func (s *sqlLabel) find(t sqlTok) {
	word := t.kind == sqlWord
	switch s.state {
	case lVerb:
		if !word || len(t.text) > 16 {
			s.state = lDone
			return
		}
		s.verb = t.text
		s.afterVerb()
	case lWith:
		if word && s.depth == 0 && mainVerb(t.text) {
			s.verb = t.text
			s.afterVerb()
		}
	case lFrom:
		if word && s.depth == 0 && equalFold(t.text, "from") {
			s.state = lTable
		}
	case lInto:
		switch {
		case word && equalFold(t.text, "into"):
			s.state = lTable
		case word && modifier(t.text):
		default:
			s.state = lTable
			s.step(t)
		}
	}
}

// name takes the table name, skipping ONLY, IF [NOT] EXISTS and the like.
func (s *sqlLabel) name(t sqlTok) {
	switch {
	case t.kind == sqlWord && modifier(t.text):
	case t.kind == sqlWord || t.kind == sqlIdent:
		s.table[0], s.quoted[0], s.parts = t.text, t.kind == sqlIdent, 1
		s.state = lDot
	default:
		s.state = lDone
	}
}

func (s *sqlLabel) afterVerb() {
	switch {
	case equalFold(s.verb, "with"):
		s.state = lWith
	case equalFold(s.verb, "select"), equalFold(s.verb, "delete"):
		s.state = lFrom
	case equalFold(s.verb, "insert"), equalFold(s.verb, "replace"), equalFold(s.verb, "merge"):
		s.state = lInto
	case equalFold(s.verb, "update"), equalFold(s.verb, "copy"), equalFold(s.verb, "truncate"),
		equalFold(s.verb, "lock"), equalFold(s.verb, "vacuum"), equalFold(s.verb, "analyze"):
		s.state = lTable
	case equalFold(s.verb, "create"), equalFold(s.verb, "drop"), equalFold(s.verb, "alter"):
		s.state = lObject
	default:
		s.state = lDone
	}
}

func mainVerb(w []byte) bool {
	return equalFold(w, "select") || equalFold(w, "insert") || equalFold(w, "update") || equalFold(w, "delete") || equalFold(w, "merge")
}

// modifier reports whether w is a word that may stand between a verb and
// its table: ONLY, IGNORE, IF NOT EXISTS, TEMPORARY, OR REPLACE, TABLE, ...
func modifier(w []byte) bool {
	for _, m := range [...]string{"only", "ignore", "if", "not", "exists", "temp", "temporary", "or",
		"replace", "unique", "unlogged", "materialized", "low_priority", "delayed", "high_priority",
		"quick", "table", "global", "local", "concurrently", "recursive"} {
		if equalFold(w, m) {
			return true
		}
	}
	return false
}

// objectModifier reports whether w may stand between CREATE, DROP or
// ALTER and the object's kind.
func objectModifier(w []byte) bool {
	for _, m := range [...]string{"temp", "temporary", "or", "replace", "unique", "unlogged", "materialized", "global", "local"} {
		if equalFold(w, m) {
			return true
		}
	}
	return false
}

// label builds "VERB [OBJECT] table" in b's scratch and interns it.
func (s *sqlLabel) label(b *Builder) string {
	if len(s.verb) == 0 || !letters(s.verb) {
		return ""
	}
	if !letters(s.object) {
		s.object = nil
	}
	b.buf = b.buf[:0]
	for _, c := range s.verb {
		b.buf = append(b.buf, upper(c))
	}
	if len(s.object) > 0 {
		b.buf = append(b.buf, ' ')
		for _, c := range s.object {
			b.buf = append(b.buf, upper(c))
		}
	}
	for i := range s.parts {
		if !printableID(s.table[i]) {
			break
		}
		if i == 0 {
			b.buf = append(b.buf, ' ')
		} else {
			b.buf = append(b.buf, '.')
		}
		if s.quoted[i] {
			b.buf = append(b.buf, s.table[i]...)
		} else {
			b.buf = appendLower(b.buf, s.table[i])
		}
	}
	if len(b.buf) > maxLabel {
		b.buf = b.buf[:maxLabel]
	}
	return Intern(b.buf)
}

func letters(w []byte) bool {
	for _, c := range w {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
