package resultjson

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// writeIndented writes src, compact JSON as encoding/json marshals it (no
// white space outside strings), to w indented as json.Indent(dst, src, "",
// "  ") indents it, byte for byte: an empty object or array stays {} or
// [], a colon is followed by a space, and every other value starts a line
// of its own. It does not validate src (the marshaller made it); runs of
// string and literal bytes are copied whole, where json.Indent steps its
// scanner through every byte and builds the whole document in memory
// before a byte is written (a third of the cost of writing a large result).
func writeIndented(w io.Writer, src []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	depth := 0
	open := false // after { or [: the line break waits for the first member
	for i := 0; i < len(src); {
		c := src[i]
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline(bw, depth)
		}
		switch c {
		case '"':
			j := stringEnd(src, i)
			_, _ = bw.Write(src[i:j])
			i = j
			continue
		case '{', '[':
			open = true
			_ = bw.WriteByte(c)
		case ',':
			_ = bw.WriteByte(c)
			newline(bw, depth)
		case ':':
			_, _ = bw.WriteString(": ")
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				newline(bw, depth)
			}
			_ = bw.WriteByte(c)
		default:
			j := i + 1
			for j < len(src) && !isPunct(src[j]) {
				j++
			}
			_, _ = bw.Write(src[i:j])
			i = j
			continue
		}
		i++
	}
	return bw.Flush()
}

// stringEnd returns the index after the string starting with the quote at
// src[i], or len(src) if it is not closed.
func stringEnd(src []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			return len(src)
		}
		j += k
		n := 0
		for b := j - 1; b > i && src[b] == '\\'; b-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// isPunct reports whether c starts a token writeIndented lays out.
func isPunct(c byte) bool {
	switch c {
	case '"', '{', '[', '}', ']', ',', ':':
		return true
	}
	return false
}

// indentUnit is a line break followed by indentation, cut to the depth
// wanted.
var indentUnit = []byte("\n" + strings.Repeat("  ", 32))

// newline ends a line and indents the next one to depth.
func newline(bw *bufio.Writer, depth int) {
	n := 1 + 2*depth
	if n <= len(indentUnit) {
		_, _ = bw.Write(indentUnit[:n])
		return
	}
	_ = bw.WriteByte('\n')
	for n--; n > 0; {
		k := min(n, len(indentUnit)-1)
		_, _ = bw.Write(indentUnit[1 : 1+k])
		n -= k
	}
}
