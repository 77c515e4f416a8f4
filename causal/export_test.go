package causal

// StructureOf exports structureOf to the tests of package causal_test.
var StructureOf = structureOf

// SetMergeLimit lowers a ResultMerger's MaxMergedPatterns for a test.
func SetMergeLimit(m *ResultMerger, n int) { m.limit = n }

// SetMergeRequestLimit lowers a ResultMerger's MaxMergedRequests for a
// test.
func SetMergeRequestLimit(m *ResultMerger, n int) { m.reqLimit = n }
