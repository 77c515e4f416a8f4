// Package jsonl is a small, allocation-free reader of the flat JSON objects
// that wirepath's JSON Lines formats (the message trace and the preload
// syscall trace) put one per line.
//
// An Object walks the members of one object in place: keys and string values
// are returned as byte slices into the line or into the Object's scratch
// buffer, valid until the next call to Next. Nested objects and arrays are
// recognised and can be skipped or taken raw (for encoding/json to decode),
// so readers stay forward compatible with members they do not know.
//
// It accepts exactly the JSON that encoding/json accepts for such a line
// (the fuzz test checks this), with the same treatment of invalid UTF-8 and
// lone surrogates (replaced by U+FFFD). It knows nothing about traces.
package jsonl

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the JSON type of a value.
type Kind uint8

// The value kinds.
const (
	Invalid Kind = iota
	String
	Number
	True
	False
	Null
	ObjectKind
	Array
)

var kindNames = [...]string{"invalid", "string", "number", "true", "false", "null", "object", "array"}

// String returns the kind's JSON name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// MaxDepth bounds the nesting of skipped values.
const MaxDepth = 1000

// Errors of the lexer. They are wrapped with the byte offset in the line.
var (
	ErrNotObject = errors.New("not a JSON object")
	ErrSyntax    = errors.New("JSON syntax error")
	ErrNotInt    = errors.New("not an integer")
	ErrRange     = errors.New("integer out of range")
	ErrType      = errors.New("wrong JSON type")
)

// SyntaxError is a lexing error at a byte offset of the line.
type SyntaxError struct {
	Offset int // 0-based byte offset in the line
	Err    error
}

// Error formats the error with its 1-based column.
func (e *SyntaxError) Error() string { return fmt.Sprintf("byte %d: %v", e.Offset+1, e.Err) }

// Unwrap returns the underlying error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Object iterates over the members of one JSON object. The zero value is
// ready for Reset.
type Object struct {
	b      []byte
	i      int
	first  bool
	done   bool
	err    error
	keyBuf []byte
	valBuf []byte
}

// Value is one member's value. Its methods decode it; slices they return
// stay valid until the next call to Next.
type Value struct {
	Kind       Kind
	o          *Object
	start, end int
}

// Reset starts iterating over the object in line. Leading and trailing
// white space is allowed.
func (o *Object) Reset(line []byte) error {
	o.b, o.i, o.first, o.done, o.err = line, 0, true, false, nil
	o.skipWS()
	if o.i >= len(o.b) || o.b[o.i] != '{' {
		o.done = true
		o.err = &SyntaxError{Offset: o.i, Err: ErrNotObject}
		return o.err
	}
	o.i++
	return nil
}

// Err returns the first error Next met, or nil.
func (o *Object) Err() error { return o.err }

func (o *Object) fail(err error) bool {
	if o.err == nil {
		o.err = &SyntaxError{Offset: o.i, Err: err}
	}
	o.done = true
	return false
}

func (o *Object) skipWS() {
	for o.i < len(o.b) {
		switch o.b[o.i] {
		case ' ', '\t', '\n', '\r':
			o.i++
		default:
			return
		}
	}
}

// Next returns the next member. It returns ok=false at the end of the
// object or on an error (see Err). It checks that nothing but white space
// follows the object.
func (o *Object) Next() (key []byte, v Value, ok bool) {
	if o.done {
		return nil, Value{}, false
	}
	o.skipWS()
	if o.i >= len(o.b) {
		return nil, Value{}, o.fail(ErrSyntax)
	}
	if o.b[o.i] == '}' {
		o.i++
		o.skipWS()
		if o.i != len(o.b) {
			return nil, Value{}, o.fail(errors.New("data after the object"))
		}
		o.done = true
		return nil, Value{}, false
	}
	if !o.first {
		if o.b[o.i] != ',' {
			return nil, Value{}, o.fail(errors.New("expected , or }"))
		}
		o.i++
		o.skipWS()
	}
	o.first = false
	if o.i >= len(o.b) || o.b[o.i] != '"' {
		return nil, Value{}, o.fail(errors.New("expected a string key"))
	}
	var err error
	key, o.keyBuf, err = o.str(o.keyBuf)
	if err != nil {
		return nil, Value{}, o.fail(err)
	}
	o.skipWS()
	if o.i >= len(o.b) || o.b[o.i] != ':' {
		return nil, Value{}, o.fail(errors.New("expected ':' after the member name"))
	}
	o.i++
	o.skipWS()
	start := o.i
	kind, err := o.value(0)
	if err != nil {
		return nil, Value{}, o.fail(err)
	}
	return key, Value{Kind: kind, o: o, start: start, end: o.i}, true
}

// value skips one value starting at o.i and returns its kind.
func (o *Object) value(depth int) (Kind, error) {
	if o.i >= len(o.b) {
		return Invalid, ErrSyntax
	}
	switch c := o.b[o.i]; {
	case c == '"':
		var err error
		_, o.valBuf, err = o.str(o.valBuf[:0])
		return String, err
	case c == '-' || (c >= '0' && c <= '9'):
		return Number, o.number()
	case c == 't':
		return True, o.lit("true")
	case c == 'f':
		return False, o.lit("false")
	case c == 'n':
		return Null, o.lit("null")
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return Invalid, errors.New("nested too deeply")
		}
		k := ObjectKind
		if c == '[' {
			k = Array
		}
		return k, o.compound(depth + 1)
	}
	return Invalid, ErrSyntax
}

func (o *Object) lit(s string) error {
	if len(o.b)-o.i < len(s) || string(o.b[o.i:o.i+len(s)]) != s {
		return ErrSyntax
	}
	o.i += len(s)
	return nil
}

// number passes over the number at o.i: an integer part, then an
// optional fraction and exponent.
func (o *Object) number() error {
	b, i := o.b, o.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	i, ok := intPart(b, i)
	if ok {
		if i, ok = fraction(b, i); ok {
			i, ok = exponent(b, i)
		}
	}
	o.i = i
	if !ok {
		return ErrSyntax
	}
	return nil
}

// isDigit reports whether b[i] is a decimal digit.
func isDigit(b []byte, i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }

// digits returns the index after the digits from b[i] on.
func digits(b []byte, i int) int {
	for isDigit(b, i) {
		i++
	}
	return i
}

// intPart passes over "0" or a run of digits not starting with 0; it
// reports false when there is neither.
func intPart(b []byte, i int) (int, bool) {
	switch {
	case i < len(b) && b[i] == '0':
		return i + 1, true
	case isDigit(b, i):
		return digits(b, i), true
	}
	return i, false
}

// fraction passes over an optional '.' and its digits.
func fraction(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '.' {
		return i, true
	}
	i++
	if !isDigit(b, i) {
		return i, false
	}
	return digits(b, i), true
}

// exponent passes over an optional 'e' or 'E', its sign and its digits.
func exponent(b []byte, i int) (int, bool) {
	if i >= len(b) || (b[i] != 'e' && b[i] != 'E') {
		return i, true
	}
	i++
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	if !isDigit(b, i) {
		return i, false
	}
	return digits(b, i), true
}

func (o *Object) compound(depth int) error {
	open := o.b[o.i]
	closer := byte('}')
	if open == '[' {
		closer = ']'
	}
	o.i++
	o.skipWS()
	if o.i < len(o.b) && o.b[o.i] == closer {
		o.i++
		return nil
	}
	for {
		if open == '{' {
			if o.i >= len(o.b) || o.b[o.i] != '"' {
				return ErrSyntax
			}
			var err error
			if _, o.valBuf, err = o.str(o.valBuf[:0]); err != nil {
				return err
			}
			o.skipWS()
			if o.i >= len(o.b) || o.b[o.i] != ':' {
				return ErrSyntax
			}
			o.i++
			o.skipWS()
		}
		if _, err := o.value(depth); err != nil {
			return err
		}
		o.skipWS()
		if o.i >= len(o.b) {
			return ErrSyntax
		}
		switch o.b[o.i] {
		case ',':
			o.i++
			o.skipWS()
		case closer:
			o.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// str decodes the string at o.i. It returns a slice of the line when the
// string needs no decoding, else the decoded bytes appended to buf[:0].
func (o *Object) str(buf []byte) (s, newBuf []byte, err error) {
	b := o.b
	start := o.i + 1
	i := start
	for i < len(b) {
		c := b[i]
		if c == '"' {
			o.i = i + 1
			return b[start:i], buf, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	return o.decodeStr(append(buf[:0], b[start:i]...), i)
}

var (
	errControl      = errors.New("control character in string")
	errBadEscape    = errors.New("bad escape")
	errBadUnicode   = errors.New("bad \\u escape")
	errUnterminated = errors.New("unterminated string")
)

// decodeStr decodes the rest of the string at o.b[i:], which needs
// decoding, appending it to buf.
func (o *Object) decodeStr(buf []byte, i int) (s, newBuf []byte, err error) {
	b := o.b
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			o.i = i + 1
			return buf, buf, nil
		case c < 0x20:
			o.i = i
			return nil, buf, errControl
		case c == '\\':
			if buf, i, err = escape(b, i, buf); err != nil {
				o.i = i
				return nil, buf, err
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, b[i:i+size]...)
			}
			i += size
		}
	}
	o.i = i
	return nil, buf, errUnterminated
}

// escapes maps the letter of a one-letter escape to its byte.
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape at b[i] (a backslash), appending it to buf,
// and returns the index after it; on error, the index of the backslash.
func escape(b []byte, i int, buf []byte) ([]byte, int, error) {
	if i+1 >= len(b) {
		return buf, i, ErrSyntax
	}
	if b[i+1] == 'u' {
		return unicodeEscape(b, i, buf)
	}
	if e := escapes[b[i+1]]; e != 0 {
		return append(buf, e), i + 2, nil
	}
	return buf, i, errBadEscape
}

// unicodeEscape decodes the \uXXXX escape at b[i], or the surrogate pair
// of two of them, appending the rune to buf (U+FFFD for a lone surrogate).
func unicodeEscape(b []byte, i int, buf []byte) ([]byte, int, error) {
	r, ok := hex4(b, i+2)
	if !ok {
		return buf, i, errBadUnicode
	}
	i += 6
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(b, i+2); ok && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return utf8.AppendRune(buf, dec), i + 6, nil
			}
		}
		r = utf8.RuneError
	}
	return utf8.AppendRune(buf, r), i, nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Raw returns the value's JSON text.
func (v Value) Raw() []byte { return v.o.b[v.start:v.end] }

// Bytes returns a string value decoded; null gives nil. Other kinds are
// ErrType. The slice is valid until the next call to Next.
func (v Value) Bytes() ([]byte, error) {
	switch v.Kind {
	case Null:
		return nil, nil
	case String:
	default:
		return nil, ErrType
	}
	// Re-decode: the value was decoded into valBuf while skipping; a plain
	// string is a slice of the line.
	raw := v.Raw()
	plain := true
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return raw[1 : len(raw)-1], nil
	}
	return v.o.valBuf, nil
}

// Int returns an integer number value. Fractions and exponents are
// ErrNotInt, as encoding/json treats them for an int64; null is ErrType.
func (v Value) Int() (int64, error) {
	if v.Kind != Number {
		return 0, ErrType
	}
	b := v.Raw()
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, ErrNotInt
		}
		d := uint64(c - '0')
		if n > (1<<63)/10 || n*10 > 1<<63-d {
			return 0, ErrRange
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), nil
	}
	if n > 1<<63-1 {
		return 0, ErrRange
	}
	return int64(n), nil
}

// Uint returns a non-negative integer number value up to 2^64-1, which
// Int cannot hold. A minus sign (even "-0", as encoding/json has it for
// unsigned integers) is ErrRange; fractions and exponents are ErrNotInt.
func (v Value) Uint() (uint64, error) {
	if v.Kind != Number {
		return 0, ErrType
	}
	b := v.Raw()
	if b[0] == '-' {
		for _, c := range b[1:] {
			if c < '0' || c > '9' {
				return 0, ErrNotInt
			}
		}
		return 0, ErrRange
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, ErrNotInt
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, ErrRange
		}
		n = n*10 + d
	}
	return n, nil
}

// Bool returns a true or false value.
func (v Value) Bool() (bool, error) {
	switch v.Kind {
	case True:
		return true, nil
	case False:
		return false, nil
	}
	return false, ErrType
}

// Elems iterates over the elements of an array value in place, as Object
// does over members; the zero value is ready for Reset. Values it returns
// stay valid until the next call to Next.
type Elems struct {
	o Object
}

// Reset starts iterating over the elements of v, which must be an array
// (ErrType otherwise). The Elems must not outlive the line v is from.
func (e *Elems) Reset(v Value) error {
	if v.Kind != Array {
		e.o = Object{done: true, err: ErrType}
		return ErrType
	}
	e.o.b, e.o.i, e.o.first, e.o.done, e.o.err = v.Raw(), 1, true, false, nil
	return nil
}

// Next returns the next element. It returns ok=false at the end of the
// array or on an error (see Err).
func (e *Elems) Next() (v Value, ok bool) {
	o := &e.o
	if o.done {
		return Value{}, false
	}
	o.skipWS()
	if o.i >= len(o.b) {
		return Value{}, o.fail(ErrSyntax)
	}
	if o.b[o.i] == ']' {
		o.done = true
		return Value{}, false
	}
	if !o.first {
		if o.b[o.i] != ',' {
			return Value{}, o.fail(errors.New("expected , or ]"))
		}
		o.i++
		o.skipWS()
	}
	o.first = false
	start := o.i
	kind, err := o.value(0)
	if err != nil {
		return Value{}, o.fail(err)
	}
	return Value{Kind: kind, o: o, start: start, end: o.i}, true
}

// Err returns the first error Next met, or nil.
func (e *Elems) Err() error { return e.o.err }
