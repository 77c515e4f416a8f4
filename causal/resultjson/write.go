package resultjson

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/wirepath/wirepath/causal"
)

// Write writes res as the indented JSON result contract (docs/formats.md,
// "Result"; docs/result.schema.json). A nil pattern list is written as []
// so that the output always has the documented type.
func Write(w io.Writer, res *causal.Result) error {
	return encode(w, withPatterns(res))
}

// WriteAnalysis writes the results of one run of several engines as the
// Analysis envelope.
func WriteAnalysis(w io.Writer, rs []*causal.Result) error {
	return encode(w, NewAnalysis(rs))
}

// encode writes v as json.Encoder does with two spaces of indentation and
// HTML left unescaped: marshalled compact, then laid out by writeIndented
// as the Encoder's indentation would (the same bytes, in a quarter of its
// time and without a second copy of the document in memory).
func encode(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return writeIndented(w, buf.Bytes())
}
