package trace

// The stages that count into the accounting (Meta.Accounting, and a
// result's), by the name their counters carry in Count.Stage: the one
// place these names are written. An engine counts under its own name
// (linking.Name, nesting.Name, convolution.Name).
const (
	// StagePcapio counts the records read, decoded, deduplicated and merged.
	StagePcapio = "pcapio"
	// StageNAT counts what NAT learning found and what rewriting the
	// packets did.
	StageNAT = "nat"
	// StageFlows counts connections, messages, gaps and fragments.
	StageFlows = "flows"
	// StagePreload counts the syscall traces read.
	StagePreload = "preload"
	// StageReconcile counts the messages and nodes of the trace built.
	StageReconcile = "reconcile"
	// StageTrace counts what a Reader read from a trace file.
	StageTrace = "trace"
	// StageGen counts what the trace generator made and lost.
	StageGen = "gen"
)

// The counters of the accounting a Reader adds to Meta (stage StageTrace):
// the messages read and the bad lines skipped.
const (
	CountMessagesRead = "messages_read"
	CountSkippedLines = "skipped_lines"
)
