#!/bin/bash
# The scale benchmark (docs/scale.md, docs/performance.md): captures of a
# realistic mix (scripts/scale/mix.yaml: HTTP with keep-alive pools, Redis,
# DNS, three sniffers) grown to each size of SIZES (GB), and at each size
# `wirepath analyze`, `messages` and `reconcile` timed with /usr/bin/time -v
# (CPU = user + system, peak RSS).
#
# The captures are made by the product's own generator, `wirepath gen
# CONFIG --pcap DIR`, in chunks of 20 s of traffic (about 470 MB of pcapng
# for the three sniffers), each with its own seed and a start 22 s after
# the previous one's; each sniffer's chunks are concatenated into one
# pcapng file (a new section per chunk), so every size is a prefix of the
# next; the chunks are kept for the next run (KEEP the directory, or
# remove it). The inputs reach wirepath through named pipes, as a live
# capture would.
#
# Usage: scripts/bench-scale.sh [OUTDIR]     (SIZES="1 2 5 10", RUNS=1, CMDS="analyze messages reconcile",
#        ANALYZE_ARGS="--windowed 10s" for the bounded-memory analysis)
# Needs about max(SIZES) GB of disk in OUTDIR (default /tmp/wirepath-scale);
# WIREPATH=path/to/binary measures another build (the chunks are reused).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${TMPDIR:-/tmp}/wirepath-scale}
sizes=${SIZES:-1 2 5 10}
runs=${RUNS:-1}
cmds=${CMDS:-analyze messages reconcile}
mkdir -p "$out/chunk"
w=${WIREPATH:-$out/wirepath}
[ -n "${WIREPATH:-}" ] || go build -o "$w" ./cmd/wirepath
# chunk N's files are $out/chunk/N/{core,front,data}.pcapng; sizes[N] is
# the bytes of chunks 0..N.
maxgb=$(echo "$sizes" | tr ' ' '\n' | sort -n | tail -1)
target=$(awk -v s="$maxgb" 'BEGIN{printf "%d", s*1e9}')
total=0 k=0 cum=()
while [ "$total" -lt "$target" ]; do
	d="$out/chunk/$k"
	if [ ! -s "$d/data.pcapng" ]; then
		mkdir -p "$d"
		start=$(date -u -d "@$((1704067200 + k * 22))" +%Y-%m-%dT%H:%M:%SZ)
		sed -e "s/^start: .*/start: $start/" -e "s/^seed: .*/seed: $((k + 7))/" scripts/scale/mix.yaml >"$d/mix.yaml"
		"$w" gen -q "$d/mix.yaml" --pcap "$d" >/dev/null
		rm -f "$d/trace.tsv" "$d/truth.tsv"
	fi
	total=$((total + $(stat -c %s "$d"/{core,front,data}.pcapng | awk '{t+=$1} END {print t}')))
	cum+=("$total")
	k=$((k + 1))
done
# feed N: each sniffer's chunks 0..N-1, concatenated (a pcapng section per
# chunk), through a named pipe $out/SNIFFER.pcapng: the inputs are read as
# a stream, as from a live capture, and take no disk of their own.
feed() {
	for s in core front data; do
		rm -f "$out/$s.pcapng"
		mkfifo "$out/$s.pcapng"
		(for i in $(seq 0 $(($1 - 1))); do cat "$out/chunk/$i/$s.pcapng"; done >"$out/$s.pcapng") &
	done
}
files="$out/core.pcapng $out/front.pcapng $out/data.pcapng"
for size in $sizes; do
	want=$(awk -v s="$size" 'BEGIN{printf "%d", s*1e9}')
	n=0
	while [ "$n" -lt "${#cum[@]}" ] && [ "${cum[$n]}" -lt "$want" ]; do n=$((n + 1)); done
	n=$((n + 1)) bytes=${cum[$((n - 1))]}
	feed "$n"
	pk=$("$w" stats -q --format json $files | sed -n 's/.*"records": *\([0-9]*\).*/\1/p' | tail -1)
	wait
	for c in $cmds; do
		args=(-q -o /dev/null)
		[ "$c" = reconcile ] && args=(-q -o "$out/trace.tsv")
		# shellcheck disable=SC2206 # ANALYZE_ARGS is split into flags
		[ "$c" = analyze ] && args+=(${ANALYZE_ARGS:-})
		for _ in $(seq "$runs"); do
			feed "$n"
			/usr/bin/time -v "$w" "$c" "${args[@]}" $files 2>"$out/time.txt" >/dev/null || grep -v '^\s' "$out/time.txt" >&2
			wait
			awk -v c="$c" -v gb="$size" -v pk="$pk" -v bytes="$bytes" '
				/User time/ {u=$NF} /System time/ {s=$NF} /Maximum resident/ {m=$NF}
				/Elapsed \(wall/ {n=split($NF,a,":"); w=(n==3)?a[1]*3600+a[2]*60+a[3]:a[1]*60+a[2]}
				END {printf "%-10s %5s GB %6.2f GB %10d records  cpu %7.1f s  wall %7.1f s  %8.0f records/cpu-s  peak %6.0f MB\n",
					c, gb, bytes/1e9, pk, u+s, w, pk/(u+s), m/1024}' "$out/time.txt"
		done
		rm -f "$out/trace.tsv"
	done
done
rm -f $files
