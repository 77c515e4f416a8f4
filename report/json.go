package report

import (
	"io"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
)

// WriteJSON writes res as the indented JSON result contract (docs/formats.md,
// "Result"; docs/result.schema.json), as resultjson.Write does: the
// contract is read and written there, this is the json format of Write.
func WriteJSON(w io.Writer, res *causal.Result) error {
	return resultjson.Write(w, res)
}
