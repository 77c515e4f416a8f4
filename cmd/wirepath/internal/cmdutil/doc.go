// Package cmdutil holds what every wirepath subcommand shares: the I/O
// streams, exit codes, the progress display, output files and JSON printing.
// It holds no pipeline logic.
package cmdutil
