#!/bin/sh
# Benchmark of the flows stage: "wirepath messages" on a synthetic capture
# of one million packets (many concurrent HTTP connections, see
# tools/benchgen), then the stage alone (go test -bench).
# Usage: scripts/bench-flows.sh            (PACKETS=... to change the size)
set -eu
cd "$(dirname "$0")/.."
dir=${TMPDIR:-/tmp}/wirepath-bench-flows
mkdir -p "$dir"
go build -o "$dir/wirepath" ./cmd/wirepath
go run ./tools/benchgen/cmd/benchgen -packets "${PACKETS:-1000000}" -o "$dir/bench.pcap"
echo "== wirepath messages (accounting of one run)"
"$dir/wirepath" messages -o "$dir/messages.tsv" "$dir/bench.pcap"
echo "== wirepath messages -o /dev/null, whole process"
if command -v farm-bench >/dev/null; then
	farm-bench -n 5 --timeout 600 -- "$dir/wirepath" messages -q -o /dev/null "$dir/bench.pcap"
	echo "== writing the messages as TSV"
	farm-bench -n 5 --timeout 600 -- "$dir/wirepath" messages -q -o "$dir/messages.tsv" "$dir/bench.pcap"
else
	/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB peak" "$dir/wirepath" messages -q -o /dev/null "$dir/bench.pcap"
fi
echo "== the flows stage alone, on decoded packets in memory"
go test ./flows -run '^$' -bench 'BenchmarkAssembler' -benchmem -count 3
rm -f "$dir/bench.pcap" "$dir/messages.tsv"
