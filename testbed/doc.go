// Package testbed holds the wirepath testbed: a real multi-tier system in
// network namespaces (testbed.sh), the small services it needs (app/app.py,
// cmd/tbtier, cmd/tbload), the tools that give its captures imperfect clocks
// and losses (cmd/tbpcap) and build its exact ground truth from the
// services' logs (cmd/tbtruth), and run.sh, which measures the causal
// engines on it (docs/testbed.md).
//
// The package itself has no code: its test builds one small configuration
// where the machine allows it (root, network namespaces, the Debian
// packages `make deps` installs) and checks that the truth is complete and
// consistent with the captures and that the scorer runs.
package testbed
