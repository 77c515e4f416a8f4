#!/usr/bin/env bash
# Prints the import graph of wirepath's packages (non-test imports inside
# the module), one package a line: "pkg: dep dep ...", paths relative to the
# module. docs/architecture.md draws its picture from this output, and
# internal/layers tests the rules it states. With -dot, a Graphviz digraph.
set -euo pipefail
GO=${GO:-go}
cd "$(dirname "$0")/.."
mod=$($GO list -m)
lines=$($GO list -f '{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}' ./... |
	awk -v m="$mod" '{
		out = substr($1, 1, length($1) - 1); sub("^" m "/?", "", out); if (out == "") out = "."
		deps = ""
		for (i = 2; i <= NF; i++) if ($i == m || index($i, m "/") == 1) { d = $i; sub("^" m "/", "", d); deps = deps " " d }
		print out ":" deps
	}')
if [ "${1:-}" = "-dot" ]; then
	echo "digraph wirepath {"
	echo "  rankdir=BT; node [shape=box, fontname=monospace];"
	echo "$lines" | awk -F': *' '{ n = split($2, d, " "); if (n == 0) printf "  \"%s\";\n", $1; for (i = 1; i <= n; i++) printf "  \"%s\" -> \"%s\";\n", $1, d[i] }'
	echo "}"
else
	echo "$lines"
fi
