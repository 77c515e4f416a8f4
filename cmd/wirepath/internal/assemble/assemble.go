// Package assemble is the "wirepath assemble" command: it runs the
// per-request assembly engine on a message trace and prints the path
// patterns its requests aggregate into (and, in JSON, every request).
package assemble

import (
	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
)

const long = `Assemble every request's causal tree from a message trace, call by call.

It pairs CALL and RETURN messages into calls exactly (by call id, stream id
or connection order, whatever the timestamps say), takes every exact link
the trace carries (a propagated request id shared with exactly one
candidate request; the thread that received a request, when it served no
other meanwhile), then assigns the rest of each node's calls jointly: every
call a node makes goes to exactly one request the node was serving, or to
none (background), so that it left after the request arrived and, for a
synchronous call, came back before the request's reply left (within
--tolerance), maximising the likelihood of the node's call graph learnt
from the trace itself (which kinds of calls each kind of request makes, in
which order, serial or parallel, after which delays) and of the content
tokens and sizes the calls share. The models are re-fitted over --passes
passes (EM). Each node is solved in time order by a Viterbi search that is
exact where it keeps every hypothesis and a beam search of --beam
hypotheses where not; the accounting says how many decisions were exact.

Each link gets a confidence and up to --alternatives (at most 3) of the
other requests it may belong to, each request the probability that its
whole tree is right; patterns are aggregated
from the requests, and with --format json the result lists every request
("requests": its messages, their parents, calls and evidence).

TRACE is a message trace the trace package reads. See docs/causal-assembly.md.`

// NewCmd returns the assemble command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, enginecmd.Run) }

// newCmd returns the command; runF does the work once the flags are
// checked (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, runF enginecmd.RunFunc) *cobra.Command {
	return enginecmd.NewCmd(ios, enginecmd.Spec{
		Use:   "assemble TRACE",
		Short: "Assemble every request's causal tree (the assembly engine)",
		Long:  long,
		Example: `  wirepath assemble trace.tsv
  wirepath assemble --beam 256 --passes 6 trace.tsv
  wirepath assemble --format json -o result.json trace.tsv`,
		Flags: &enginecmd.AssemblyFlags{},
	}, runF)
}
