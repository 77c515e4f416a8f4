#!/bin/bash
# framing-share.sh: the share of "wirepath messages" and "wirepath
# analyze" spent inside the framing code itself on the all-gRPC capture
# of scripts/bench-grpc.sh (issue 15, docs/protocols.md "The cost of
# framing"), two ways:
#
#   - instructions (valgrind --tool=callgrind, GOMAXPROCS=1 GOGC=off,
#     GODEBUG=asyncpreemptoff=1, without which callgrind stops on Go's
#     preemption signals, and cpu.rdtscp=off: valgrind 3.19 does not
#     know RDTSCP, which the runtime's cputicks uses where the CPU has it): the own instructions of every function of
#     proto/http2 (frames, HPACK, Huffman, streams, labels, evidence) and
#     of flows' decode.go and pendtab.go (detection, Units made messages,
#     timed and paired), plus the calls they make to code outside them
#     (the runtime's copies and maps, go-farm, flows' making and queueing
#     of messages), each at what callgrind counts for the call, over the
#     run's total. Callgrind's inclusive counts are not used: Go's stack
#     growth (morestack) restarts a function on its new stack, which
#     callgrind takes for a call, and a function's inclusive count then
#     holds some of its callers' work twice; for the same reason calls to
#     runtime.morestack are left out;
#   - CPU (pprof, the hidden --cpuprofile flag, RUNS runs merged): the
#     samples with those functions on their stack over all samples,
#     garbage collection included.
#
# Usage: scripts/framing-share.sh [BIN]   (BIN: a wirepath binary, built
#        from the working tree if not given; RUNS=10; CALLGRIND=0 skips the
#        valgrind part, which takes minutes; CGDIR=DIR reads its profiles
#        DIR/cg-messages.out and DIR/cg-analyze.out, made before, instead)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TMPDIR:-/tmp}/wirepath-bench-grpc
mkdir -p "$dir"
bin=${1:-}
if [ -z "$bin" ]; then
	bin=$dir/wirepath
	go build -o "$bin" ./cmd/wirepath
fi
[ -s "$dir/grpc.pcap" ] || go run ./tools/benchgen/cmd/benchgen -grpc -batches "${BATCHES:-1000}" -o "$dir/grpc.pcap"
runs=${RUNS:-10}
# pprof's stacks are the goroutines' own, so there the inclusive time of
# flows' decode (which calls proto/http2's Feed) is the framing's.
decode='flows.(*Assembler).decode'
feed='http2.(*Decoder).Feed'
for cmd in messages analyze; do
	if [ "${CALLGRIND:-1}" != 0 ]; then
		out=${CGDIR:-$dir}/cg-$cmd.out
		if [ -z "${CGDIR:-}" ]; then
			GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 GOGC=off valgrind --tool=callgrind --callgrind-out-file="$out" \
				"$bin" "$cmd" -q -o /dev/null "$dir/grpc.pcap" >/dev/null 2>&1
		fi
		callgrind_annotate --tree=calling --auto=no --threshold=100 "$out" 2>/dev/null |
			sed -nE 's/^ *([0-9,]+) \([ 0-9.]+%\) +([*>]) +([^ ]+).*/\1 \2 \3/p; s/^ *([0-9,]+) +\([ 0-9.]+%\) +PROGRAM TOTALS.*/\1 T total/p' |
			awk -v cmd="$cmd" '
			function num(s) { gsub(",", "", s); return s + 0 }
			function framing(p) { return index(p, "wirepath/proto/http2.") > 0 || p ~ /(^|\/)flows\/(decode|pendtab)\.go:/ }
			$2 == "T" { total = num($1); next }
			$2 == "*" { cur = framing($3); if (cur) own += num($1); if (index($3, "wirepath/proto/http2.")) h2 += num($1); next }
			$2 == ">" && cur && !framing($3) && index($3, "runtime.morestack") == 0 { out += num($1) }
			END { printf "%s, instructions: %.2f G; framing %.2f G, %.1f %% (proto/http2'"'"'s own code %.2f G, %.1f %%)\n",
				cmd, total / 1e9, (own + out) / 1e9, 100 * (own + out) / total, h2 / 1e9, 100 * h2 / total }'
	fi
	profs=()
	for i in $(seq "$runs"); do
		"$bin" "$cmd" -q -o /dev/null --cpuprofile "$dir/cpu-$cmd-$i.prof" "$dir/grpc.pcap"
		profs+=("$dir/cpu-$cmd-$i.prof")
	done
	go tool pprof -top -cum "$bin" "${profs[@]}" 2>/dev/null | awk -v cmd="$cmd" -v d="$decode" -v f="$feed" '
		/Total samples =/ { for (i = 1; i <= NF; i++) if ($i == "=") total = $(i+1) }
		index($0, d) && !dd { dd = $4 }
		index($0, f) && !ff { ff = $4 }
		function secs(s) { if (s ~ /ms$/) return substr(s, 1, length(s) - 2) / 1000; return substr(s, 1, length(s) - 1) + 0 }
		END { t = secs(total); printf "%s, CPU (pprof, %d runs): %.2f s; framing (decode) %.2f s, %.1f %%; proto/http2 (Feed) %.2f s, %.1f %%\n",
			cmd, '"$runs"', t, secs(dd), 100 * secs(dd) / t, secs(ff), 100 * secs(ff) / t }'
	rm -f "${profs[@]}"
done
