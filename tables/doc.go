// Package tables writes what the pipeline found as Parquet tables that SQL
// engines (DuckDB, Spark, ClickHouse, Trino) read without wirepath: the
// packets' observations, the messages, the connections and the requests,
// each a directory of Parquet files partitioned by hour in the Hive layout
//
//	DIR/TABLE/date=YYYY-MM-DD/hour=HH/part-NNNNN.parquet
//
// (the hour, UTC, of each row's time: see each row type). The schema of
// every table is the struct of its row type (Observation, Message,
// Connection, Request); docs/formats.md documents it as a versioned
// contract, and every file carries its table's name and SchemaVersion in
// its key-value metadata ("wirepath.table", "wirepath.schema_version").
//
// A Writer streams: rows are buffered per open file and flushed in row
// groups of RowGroupRows, and at most MaxOpenParts files of a table are
// open at once (a row for an hour whose file was closed starts a new part
// in that hour), so memory is bounded whatever the input's size. The
// tables are written in a temporary directory beside DIR and put in place
// by Close; Abort removes them, leaving DIR as it was.
package tables
