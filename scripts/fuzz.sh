#!/usr/bin/env bash
# Runs every Fuzz* target in the module for $FUZZTIME each. Targets are
# discovered with `go test -list`, so new fuzz tests need no registration.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
cd "$(dirname "$0")/.."
status=0
for pkg in $($GO list ./...); do
	for target in $($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $target ($FUZZTIME)"
		if ! $GO test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg"; then
			status=1
		fi
	done
done
exit $status
