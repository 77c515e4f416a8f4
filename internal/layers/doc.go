// Package layers holds a test that enforces the layering rules of
// docs/architecture.md on the import graph: what each package may import
// of wirepath, read from the import declarations of its non-test files.
package layers
