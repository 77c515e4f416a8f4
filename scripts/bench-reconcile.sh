#!/bin/sh
# Benchmark of the front half of the pipeline: "wirepath reconcile" on a
# synthetic capture (tools/benchgen: many concurrent HTTP-like
# connections), with and without NAT learning, against "wirepath messages"
# (the stages up to flows), then the reconcile stage alone (go test -bench).
# Usage: scripts/bench-reconcile.sh            (PACKETS=... to change the size)
set -eu
cd "$(dirname "$0")/.."
dir=${TMPDIR:-/tmp}/wirepath-bench-reconcile
mkdir -p "$dir"
go build -o "$dir/wirepath" ./cmd/wirepath
go run ./tools/benchgen/cmd/benchgen -packets "${PACKETS:-400000}" -o "$dir/bench.pcap"
echo "== wirepath reconcile (accounting of one run)"
"$dir/wirepath" reconcile -o "$dir/trace.tsv" "$dir/bench.pcap" 2>&1 | head -3
run() { # label command...
	echo "== $1"; shift
	if command -v farm-bench >/dev/null; then
		farm-bench -n 3 --timeout 600 -- "$@" | grep -E ' (cpu s|wall s|peak MiB) '
	else
		/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB peak" "$@"
	fi
}
run "wirepath messages --no-nat" "$dir/wirepath" messages -q --no-nat -o /dev/null "$dir/bench.pcap"
run "wirepath messages (NAT learned and undone)" "$dir/wirepath" messages -q -o /dev/null "$dir/bench.pcap"
run "wirepath reconcile --no-nat" "$dir/wirepath" reconcile -q --no-nat -o "$dir/trace.tsv" "$dir/bench.pcap"
run "wirepath reconcile" "$dir/wirepath" reconcile -q -o "$dir/trace.tsv" "$dir/bench.pcap"
echo "== the reconcile stage alone, on messages in memory"
go test ./reconcile -run '^$' -bench 'BenchmarkReconcile' -benchmem -count 3
rm -f "$dir/bench.pcap" "$dir/trace.tsv"
