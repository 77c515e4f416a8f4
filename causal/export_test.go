package causal

// StructureOf exports structureOf to the tests of package causal_test.
var StructureOf = structureOf
