// Package sqltest holds the test that reads wirepath's Parquet tables
// (package tables) back with DuckDB, through its Go binding and the DuckDB
// library bundled with it, and checks them against the text report of the
// same run. The package has no code of its own: it is where the binding,
// which needs cgo, is imported, so that building wirepath needs neither
// cgo nor DuckDB; `go test ./...` (and so `make test`) runs it.
package sqltest
