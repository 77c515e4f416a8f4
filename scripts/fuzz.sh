#!/usr/bin/env bash
# Runs every Fuzz* target in the module for $FUZZTIME each and prints how
# many inputs each executed. Targets are discovered with `go test -list`,
# so new fuzz tests need no registration; each starts from its seed
# corpus (the repository's test data, internal/fuzzseed, and
# testdata/fuzz). Minimizing a new input is capped at $FUZZMINIMIZE
# executions: go's default, a minute per new input, left the slow
# targets 3 to 30 counted executions in 5 s.
set -uo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZMINIMIZE=${FUZZMINIMIZE:-100x}
cd "$(dirname "$0")/.."
status=0
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
for pkg in $($GO list ./...); do
	for target in $($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $target ($FUZZTIME)"
		out=$($GO test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZMINIMIZE" "$pkg" 2>&1)
		rc=$?
		echo "$out" | tail -n 3
		execs=$(echo "$out" | grep -o 'execs: [0-9]*' | tail -1 | awk '{print $2}')
		result=ok
		if [ $rc -ne 0 ]; then
			result=FAIL
			status=1
			echo "$out" | grep -v '^fuzz: elapsed' | tail -n 20
		fi
		printf '%-48s %-22s %10s  %s\n' "${pkg#github.com/wirepath/wirepath/}" "$target" "${execs:-?}" "$result" >>"$summary"
	done
done
echo
echo "executions per target in $FUZZTIME:"
printf '%-48s %-22s %10s  %s\n' PACKAGE TARGET EXECS RESULT
cat "$summary"
exit $status
