#!/bin/bash
# The command-line benchmark of issue 14 (README "Performance",
# docs/performance.md): `wirepath stats`, `merge -o /dev/null`,
# `messages --no-nat`, `messages` and `analyze` on one set of captures,
# each timed with /usr/bin/time (CPU = user + system, peak RSS), reported
# as CPU seconds, records per CPU second and peak RSS.
#
# The captures are the scale benchmark's first chunk (scripts/bench-scale.sh:
# `wirepath gen scripts/scale/mix.yaml --pcap DIR`, 20 s of HTTP with
# keep-alive pools, Redis, DNS and a database at 2,000 requests/s, three
# sniffers; 462 MB, 1.62 M records), made here if missing; CAPTURES="a b c"
# measures others.
#
# Usage: scripts/bench-commands.sh [OUTDIR]   (RUNS=3: the least CPU of the runs
#        is kept, the machine being shared; WIREPATH=path/to/binary measures
#        another build, e.g. one built from an older commit for a before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${TMPDIR:-/tmp}/wirepath-scale}
runs=${RUNS:-3}
w=${WIREPATH:-$out/wirepath}
mkdir -p "$out/chunk/0"
[ -n "${WIREPATH:-}" ] || go build -o "$w" ./cmd/wirepath
if [ -z "${CAPTURES:-}" ]; then
	d="$out/chunk/0"
	if [ ! -s "$d/data.pcapng" ]; then
		sed -e "s/^start: .*/start: 2024-01-01T00:00:00Z/" -e "s/^seed: .*/seed: 7/" scripts/scale/mix.yaml >"$d/mix.yaml"
		"$w" gen -q "$d/mix.yaml" --pcap "$d" >/dev/null
		rm -f "$d/trace.tsv" "$d/truth.tsv"
	fi
	CAPTURES="$d/core.pcapng $d/front.pcapng $d/data.pcapng"
fi
# shellcheck disable=SC2086 # CAPTURES is a list of files
records=$("$w" stats -q --format json $CAPTURES | sed -n 's/.*"records": *\([0-9]*\).*/\1/p' | tail -1)
echo "$records records"
printf '| command | CPU s | records per CPU s | peak RSS | wall s |\n|---|---|---|---|---|\n'
while IFS='|' read -r name args; do
	best=""
	for _ in $(seq "$runs"); do
		# shellcheck disable=SC2086 # args and CAPTURES are split on purpose
		/usr/bin/time -f "%U %S %M %e" -o "$out/time.txt" "$w" $args $CAPTURES >/dev/null
		line=$(awk '{printf "%.2f %d %.1f", $1+$2, $3/1024, $4}' "$out/time.txt")
		if [ -z "$best" ] || awk -v a="$line" -v b="$best" 'BEGIN{split(a,x," "); split(b,y," "); exit !(x[1] < y[1])}'; then
			best=$line
		fi
	done
	echo "$best" | awk -v n="$name" -v r="$records" '{rate = ($1 > 0) ? sprintf("%.0f k", r/$1/1000) : "-"; printf "| `wirepath %s` | %.1f | %s | %d MB | %.1f |\n", n, $1, rate, $2, $3}'
done <<EOF
stats|stats -q --format json
merge -o /dev/null|merge -q -o /dev/null
messages --no-nat|messages -q --no-nat -o /dev/null
messages|messages -q -o /dev/null
analyze|analyze -q -o /dev/null
EOF
