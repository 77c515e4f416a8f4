package resultjson

import (
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

func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
