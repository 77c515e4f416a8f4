#!/usr/bin/env bash
# Benchmarks the nesting and convolution engines at the sizes of Project 5's
# Table 1 (README, Performance): nesting on 2 million messages of the
# multi-tier system (mean per-node parallelism about 1.6, as the paper's
# "Multi-tier (long)" trace), convolution on 200,000 messages over 500 s
# with a 10 ms quantum (the paper's "Multi-tier normal").
#
# It generates the traces once under $BENCH_DIR (default
# /tmp/wirepath-bench), times the whole commands with farm-bench (or
# /usr/bin/time -v when farm-bench is missing), then the engines alone with
# go test -bench on the same traces (the trace already in memory).
#   RUNS=5 scripts/bench-nestconv.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/wirepath-bench}
runs=${RUNS:-5}
mkdir -p "$dir" bin
go build -o bin/wirepath ./cmd/wirepath
go build -o "$dir/gentrace" ./tools/gentrace
nest=$dir/nest-2m.tsv
conv=$dir/conv-200k.tsv
[ -s "$nest" ] || "$dir/gentrace" -fixture rpc -messages 2000000 -clients 6 -seed 1 -o "$nest"
[ -s "$conv" ] || "$dir/gentrace" -fixture rpc -duration 500s -clients 24 -seed 3 -o "$conv"
echo "traces: $(($(wc -l <"$nest") - 2)) messages in $nest, $(($(wc -l <"$conv") - 2)) in $conv"

timeit() {
	if command -v farm-bench >/dev/null; then
		farm-bench -n "$runs" --timeout 1800 -- "$@"
	else
		for _ in $(seq "$runs"); do
			/usr/bin/time -v "$@" 2>&1 >/dev/null | grep -E 'User time|System time|Elapsed|Maximum resident'
		done
	fi
}

echo "== wirepath nest (whole command: read the TSV trace, infer, write)"
timeit bin/wirepath nest -q -o /dev/null "$nest"
echo "== wirepath convolve (whole command)"
timeit bin/wirepath convolve -q -o /dev/null "$conv"
echo "== engines alone (trace in memory)"
WIREPATH_BENCH_NEST=$nest WIREPATH_BENCH_CONV=$conv \
	go test -run '^$' -bench 'NestingFile|ConvolutionFile' -benchtime "${runs}x" -benchmem ./causal/nesting ./causal/convolution
