#!/bin/sh
# Benchmark of protocol framing on an all-gRPC capture (issue 15's target,
# docs/protocols.md "The cost of framing"): "wirepath messages" and
# "wirepath analyze" on a synthetic capture of gRPC calls (8 HTTP/2
# connections, batches of 32 concurrent unary calls, see tools/benchgen)
# with its HTTP/2 framing and with --no-framing (messages at direction
# changes, as before issue 15), then the flows stage alone (go test -bench
# BenchmarkGRPC). The comparison is CPU seconds (user + system) of the same
# binary on the same file: framing costs 1 - unframed CPU / framed CPU of
# the throughput. INSTRUCTIONS=1 also counts the instructions of
# "messages" both ways with valgrind (GOMAXPROCS=1, GOGC=off: without the
# collector's work, which depends on when it runs), which the machine's
# load does not change; INSTRUCTIONS=2 those of "analyze" too (minutes).
# Usage: scripts/bench-grpc.sh            (BATCHES=... to change the size)
set -eu
cd "$(dirname "$0")/.."
dir=${TMPDIR:-/tmp}/wirepath-bench-grpc
mkdir -p "$dir"
go build -o "$dir/wirepath" ./cmd/wirepath
go run ./tools/benchgen/cmd/benchgen -grpc -batches "${BATCHES:-1000}" -o "$dir/grpc.pcap"
echo "== wirepath messages --json (accounting of one run)"
"$dir/wirepath" messages --json -o /dev/null "$dir/grpc.pcap" | grep -A12 '"h2"' || true
for cmd in messages analyze; do
	for run in 1 2 3 4 5; do
		for mode in --no-framing --framing; do
			flag=$mode
			[ "$mode" = --framing ] && flag=
			/usr/bin/time -f "$cmd $mode: %e s wall, %U s user, %S s sys, %M KB peak" \
				"$dir/wirepath" $cmd -q -o /dev/null $flag "$dir/grpc.pcap"
		done
	done
done
if [ -n "${INSTRUCTIONS:-}" ]; then
	cmds=messages
	[ "$INSTRUCTIONS" = 2 ] && cmds="messages analyze"
	for cmd in $cmds; do
		for mode in --no-framing --framing; do
			flag=$mode
			[ "$mode" = --framing ] && flag=
			printf '%s %s: ' "$cmd" "$mode"
			GODEBUG=cpu.rdtscp=off GOMAXPROCS=1 GOGC=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
				"$dir/wirepath" $cmd -q -o /dev/null $flag "$dir/grpc.pcap" 2>&1 | awk '/I *refs:/ {print $NF, "instructions"}'
		done
	done
fi
echo "== the flows stage alone, on decoded packets in memory"
go test ./flows -run '^$' -bench 'BenchmarkGRPC' -benchmem -count 3
rm -f "$dir/grpc.pcap"
