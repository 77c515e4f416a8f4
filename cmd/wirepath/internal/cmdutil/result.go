package cmdutil

import (
	"fmt"
	"os"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
)

// ReadResults reads a saved result, or the results of several engines
// (analyze --engine all), from path, or from ios.In for "-", through the
// one reader of the result JSON (causal/resultjson): every command that
// takes a result accepts and refuses the same files with the same errors.
func ReadResults(ios *IOStreams, path string) ([]*causal.Result, error) {
	if path == "-" {
		in := ios.In
		if in == nil {
			in = os.Stdin
		}
		return resultjson.ReadResults(in, "<stdin>")
	}
	return resultjson.ReadResultsFile(path)
}

// ReadResult is ReadResults for a command that reads one result: a file
// with several engines' results is refused, saying how to take one.
func ReadResult(ios *IOStreams, path string) (*causal.Result, error) {
	rs, err := ReadResults(ios, path)
	if err != nil {
		return nil, err
	}
	if len(rs) > 1 {
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Engine
		}
		return nil, fmt.Errorf("%s holds the results of %d engines (%s); this command reads one: take it with jq '.results[I]'", path, len(rs), strings.Join(names, ", "))
	}
	return rs[0], nil
}
