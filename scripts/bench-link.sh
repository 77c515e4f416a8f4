#!/usr/bin/env bash
# bench-link.sh: time `wirepath link` on a trace the size of WAP5's CoDeeN
# trace (Table 5: 4,702,865 messages, 1,354 CPU s and 1,148 MB).
#
#   scripts/bench-link.sh [MESSAGES]       # default 4700000
#
# It writes a synthetic CDN trace (tools/gentrace -fixture cdn, made by
# causal/gen from internal/genfix/cdn.yaml: untraced clients,
# 115 proxies forwarding misses to peer proxies, DNS and origin servers
# that are not traced, per-host clock offsets, one hour of Poisson requests)
# to $BENCH_DIR (default /tmp/wirepath-bench), keeps it for later runs, and
# times the whole command (reading the TSV included) with farm-bench when
# it is installed, else with /usr/bin/time -v. RUNS sets farm-bench's runs
# (default 3). The report goes to $BENCH_DIR/link.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-4700000}
dir=${BENCH_DIR:-/tmp/wirepath-bench}
mkdir -p "$dir"
trace="$dir/cdn-$n.tsv"
make -s build
if [ ! -s "$trace" ]; then
	go run ./tools/gentrace -fixture cdn -messages "$n" -duration 1h -o "$trace.tmp"
	mv "$trace.tmp" "$trace"
fi
ls -l "$trace"
if command -v farm-bench >/dev/null; then
	farm-bench -n "${RUNS:-3}" --warmup 0 --timeout 3600 -- bin/wirepath link -q -o "$dir/link.txt" "$trace"
else
	/usr/bin/time -v bin/wirepath link -q -o "$dir/link.txt" "$trace" 2>&1 |
		grep -E 'User time|System time|Elapsed|Maximum resident'
fi
head -3 "$dir/link.txt"
