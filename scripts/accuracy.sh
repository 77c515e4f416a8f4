#!/usr/bin/env bash
# Runs the full-size accuracy experiments of causal/accuracy (the tests run
# short versions of the same functions) and rewrites the measured part of
# docs/accuracy.md: everything below the marker line. Arguments are passed
# to the sweep command (e.g. -only skew to run one experiment and print it
# without touching the docs).
set -euo pipefail
GO=${GO:-go}
cd "$(dirname "$0")/.."
doc=docs/accuracy.md
marker='<!-- measured: scripts/accuracy.sh writes below this line -->'
if [ $# -gt 0 ]; then
	exec $GO run ./tools/sweep "$@"
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	awk -v m="$marker" '{ print } $0 == m { exit }' "$doc"
	echo
	echo "Measured by \`scripts/accuracy.sh\` on $(date -u +%Y-%m-%d) ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))."
	echo
	$GO run ./tools/sweep
} >"$tmp"
grep -q "^$marker\$" "$tmp" || { echo "accuracy.sh: marker line missing from $doc" >&2; exit 1; }
mv "$tmp" "$doc"
trap - EXIT
echo "rewrote $doc"
