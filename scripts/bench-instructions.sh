#!/usr/bin/env bash
# bench-instructions.sh: instructions per benchmark operation, counted by
# valgrind (cachegrind without the cache simulation), for two revisions of
# the repository. Instruction counts do not depend on the machine's load,
# so two revisions can be compared on a busy or virtual machine (no PMU)
# where ns/op is noise. The difference of two runs of different lengths
# cancels each benchmark's setup. The garbage collector is off (GOGC=off):
# its work depends on when it runs, which made counts of one revision vary
# by 20 %; without it two runs agree within 0.3 %. The counts therefore
# leave out collection work: compare allocations with -benchmem beside them.
#
#   scripts/bench-instructions.sh OLD NEW [BENCH | PKG:BENCH ...]
#
# Without BENCH arguments it measures the stage benchmarks that exist under
# the same name in both revisions (the package may have moved). A BENCH is
# looked for in both revisions' packages; PKG:BENCH names its package
# (proto/resp:Decoder, flows:GRPC/framing=true), for the names several
# packages use. A benchmark
# runs K and 5K operations, K chosen from a native run so that K
# operations take about 50 ms (the runtime's own noise is then small).
set -euo pipefail
old=${1:?usage: bench-instructions.sh OLD NEW [BENCH...]}
new=${2:?usage: bench-instructions.sh OLD NEW [BENCH...]}
shift 2
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/old" 2>/dev/null; git -C "$repo" worktree remove --force "$work/new" 2>/dev/null; rm -rf "$work"' EXIT
git -C "$repo" worktree add -q --detach "$work/old" "$old"
git -C "$repo" worktree add -q --detach "$work/new" "$new"
benches=("$@")
if [ ${#benches[@]} -eq 0 ]; then
	benches=(Decode ReadDecode Merge Assembler Learn Rewrite Reconcile ReconcilePreload
		Read ReadTable Reader ConvertStrace Aggregator Nesting LinkingInfer LinkingLink Convolution Correlate)
fi
# pkgof DIR BENCH: the package directory holding func BenchmarkBENCH (not report's Write).
pkgof() { grep -rl --include=*_test.go "^func Benchmark$2(" "$1" | grep -v '/report/' | head -1 | xargs -r dirname; }
# irefs DIR PKG BENCH N: the instructions of a run with -benchtime=Nx.
irefs() {
	local bin="$work/$(basename "$1")-$(echo "$2" | tr / _).test"
	[ -x "$bin" ] || (cd "$1" && go test -c -o "$bin" "./${2#"$1"/}" >/dev/null)
	(cd "$2" && GODEBUG=cpu.rdtscp=off GOMAXPROCS=1 GOGC=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		"$bin" -test.run='^$' -test.bench="^Benchmark$3\$" -test.benchtime="$4"x 2>&1 >/dev/null) |
		awk '/I *refs:/ {gsub(",", "", $NF); print $NF}'
}
# opsfor DIR PKG BENCH: K, the operations that take about 50 ms natively.
opsfor() {
	local bin="$work/$(basename "$1")-$(echo "$2" | tr / _).test"
	[ -x "$bin" ] || (cd "$1" && go test -c -o "$bin" "./${2#"$1"/}" >/dev/null)
	(cd "$2" && GOMAXPROCS=1 "$bin" -test.run='^$' -test.bench="^Benchmark$3\$" -test.benchtime=0.2s) |
		awk '$1 ~ /^Benchmark/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") { if (!done) { k = int(5e7 / $i); print (k < 1 ? 1 : k); done = 1 } } }'
}
printf '%-26s %16s %16s %8s\n' benchmark "old instr/op" "new instr/op" change
for b in "${benches[@]}"; do
	label=$b
	if [[ $b == *:* ]]; then
		po=$work/old/${b%%:*} pn=$work/new/${b%%:*} b=${b#*:}
		[ -d "$po" ] || po=""
		[ -d "$pn" ] || pn=""
	else
		po=$(pkgof "$work/old" "$b") pn=$(pkgof "$work/new" "$b")
	fi
	if [ -z "$po" ] || [ -z "$pn" ]; then printf '%-26s %s\n' "$label" "(not in both)"; continue; fi
	k=$(opsfor "$work/old" "$po" "$b")
	o2=$(irefs "$work/old" "$po" "$b" "$k"); o6=$(irefs "$work/old" "$po" "$b" $((5 * k)))
	n2=$(irefs "$work/new" "$pn" "$b" "$k"); n6=$(irefs "$work/new" "$pn" "$b" $((5 * k)))
	awk -v b="$label" -v k="$k" -v o2="$o2" -v o6="$o6" -v n2="$n2" -v n6="$n6" 'BEGIN {
		o = (o6 - o2) / (4 * k); n = (n6 - n2) / (4 * k)
		printf "%-26s %16.0f %16.0f %+7.1f%%\n", b, o, n, (n - o) / o * 100 }'
done
