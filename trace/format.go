package trace

import (
	"bytes"
	"fmt"
	"strings"
)

// Format is a trace file format.
type Format uint8

// The trace formats ReadFile understands. FormatAuto asks the reader to
// detect the format from the first lines.
const (
	FormatAuto     Format = iota
	FormatTSV             // wirepath TSV, with or without the magic line
	FormatJSONL           // wirepath JSON Lines
	FormatProject5        // Project 5's "timestamp operation sender receiver id" (input only)
)

var formatNames = [...]string{"auto", "tsv", "jsonl", "project5"}

// String returns the format's name as ParseFormat accepts it.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", f)
}

// ParseFormat parses a format name ("auto", "tsv", "jsonl", "project5").
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if strings.EqualFold(s, n) {
			return Format(i), nil
		}
	}
	switch strings.ToLower(s) {
	case "json", "ndjson":
		return FormatJSONL, nil
	case "p5":
		return FormatProject5, nil
	}
	return FormatAuto, fmt.Errorf("unknown trace format %q (want tsv, jsonl or project5)", s)
}

// DetectFormat guesses the format of a trace from its first bytes
// (decompressed): the wirepath TSV magic line, a JSON object, a line whose
// first field is a decimal timestamp or Project 5's header (Project 5), and
// otherwise a TSV header. Comment lines starting with '#' are passed over.
func DetectFormat(head []byte) Format {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			if bytes.HasPrefix(line, []byte(tsvMagicPrefix)) {
				return FormatTSV
			}
			continue
		}
		if line[0] == '{' {
			return FormatJSONL
		}
		f := bytes.Fields(line)
		if _, ok := parseSeconds(f[0]); ok {
			return FormatProject5
		}
		if len(f) >= 2 && isP5Header(f) {
			return FormatProject5
		}
		return FormatTSV
	}
	return FormatTSV
}
