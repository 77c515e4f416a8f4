package assembly

// Repeats: whether a request makes a kind of call it already made. A
// request that fans out in parallel makes each of its kinds of call once,
// in any order; the call graph, which conditions a request's next call on
// its last one and how many it made, does not know which kinds it made
// already, and so finds a request that makes one kind twice and another
// none nearly as likely as two that make each once. The likelihood ratio
// of a call's kind having been made already by the candidate request, on
// the links against the other candidates, is learnt like the FIFO
// evidence: near one where requests repeat kinds as often as not (a
// request that reads a cache twice), strongly against a repeat where they
// never do.

// Bins of the repeat evidence.
const (
	repeatNew  = 0 // the candidate made no call of this kind yet
	repeatSeen = 1 // it made one
)

// repeatBin returns the repeat bin of a call of kind bit kb for a request
// that made the kinds made.
func repeatBin(made, kb uint64) int {
	if made&kb != 0 {
		return repeatSeen
	}
	return repeatNew
}

// logRepeat is the log likelihood ratio of a call of kind bit kb going to
// a request that made the kinds made.
func (m *nodeModel) logRepeat(made, kb uint64) float64 {
	return m.rep.logLR(repeatBin(made, kb))
}
