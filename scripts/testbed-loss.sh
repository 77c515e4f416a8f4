#!/usr/bin/env bash
# testbed-loss.sh measures what a sniffer's packet loss costs the causal
# engines on a testbed run (docs/accuracy.md, "Loss that stays local"):
# for every loss rate it makes one sniffer of the run drop that share of
# its packets (testbed/cmd/tbpcap, seeded), runs `wirepath analyze --engine
# all` on the captures, scores every engine against the run's truth, and
# prints a Markdown table: per engine and rate, the requests that lost a
# message (none of them can be right) and the requests exactly right. The
# loss stays local when the wrong requests rise by at most the share that
# lost a message.
#
#   testbed/testbed.sh /tmp/tb                 # one run (as root)
#   scripts/testbed-loss.sh /tmp/tb [OUT_DIR]  # default OUT_DIR: RUN_DIR/loss
#
# Settings (environment): SNIFFER=inside.pcapng, the capture that loses
# packets; LEAVE_OUT=lb-any.pcap, captures not analysed (the load
# balancer's sniffer sees every inside packet again, so with it a loss
# elsewhere would cost nothing); RATES="0 0.002 0.005 0.01" (the first is
# the baseline the rise is measured from); SEED=1;
# WIREPATH and TBPCAP, prebuilt binaries (else built).
set -euo pipefail

run=${1:?usage: testbed-loss.sh RUN_DIR [OUT_DIR]}
out=${2:-$run/loss}
sniffer=${SNIFFER:-inside.pcapng}
leave=${LEAVE_OUT:-lb-any.pcap}
rates=${RATES:-0 0.002 0.005 0.01}
seed=${SEED:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
wp=${WIREPATH:-}
tbpcap=${TBPCAP:-}
if [ -z "$wp" ]; then wp=$out/wirepath; (cd "$root" && go build -o "$wp" ./cmd/wirepath); fi
if [ -z "$tbpcap" ]; then tbpcap=$out/tbpcap; (cd "$root" && go build -o "$tbpcap" ./testbed/cmd/tbpcap); fi
[ -f "$run/$sniffer" ] || { echo "testbed-loss.sh: $run/$sniffer: no such capture" >&2; exit 1; }

for rate in $rates; do
	d=$out/loss-$rate
	mkdir -p "$d"
	caps=()
	for f in "$run"/*.pcap "$run"/*.pcapng; do
		b=$(basename "$f")
		case " $leave " in *" $b "*) continue ;; esac
		if [ "$b" = "$sniffer" ]; then
			"$tbpcap" -loss "$rate" -seed "$seed" "$f" "$d/$b" >"$d/loss.json"
		else
			cp "$f" "$d/$b"
		fi
		caps+=("$d/$b")
	done
	ref=()
	[ -f "$d/outside.pcapng" ] && ref=(--reference "$d/outside.pcapng")
	roles=()
	[ -f "$run/roles.txt" ] && roles=(--roles "$run/roles.txt")
	pre=()
	[ -d "$run/preload" ] && pre=(--preload "$run/preload")
	"$wp" -q analyze "${caps[@]}" "${pre[@]}" "${ref[@]}" "${roles[@]}" --engine all --format json --instances -1 \
		--save-trace "$d/trace.tsv" -o "$d/results.json" 2>"$d/analyze.log" || [ $? = 3 ]
	"$wp" -q score "$d/results.json" "$run/truth.jsonl" --trace "$d/trace.tsv" --json -o "$d/score.json" 2>>"$d/analyze.log"
done

/usr/bin/env python3 - "$out" "$sniffer" $rates <<'PY'
import json, os, sys
out, sniffer, rates = sys.argv[1], sys.argv[2], sys.argv[3:]
base = {}
print("| %s loss | engine | requests | lost a message | right | wrong rose (points) | within the bound |" % sniffer)
print("|---|---|---|---|---|---|---|")
for rate in rates:
    s = json.load(open(os.path.join(out, "loss-" + rate, "score.json")))
    for e in s["engines"]:
        if not e["instances"]:
            continue
        r = e["requests"]
        lost = (r["all"] - r["observed"]) / r["all"]
        right = r["right"] / r["all"]
        base.setdefault(e["engine"], right)
        rise = base[e["engine"]] - right
        print("| %.1f %% | %s | %d | %.1f %% | %.1f %% | %.1f | %s |" % (100 * float(rate), e["engine"], r["all"], 100 * lost, 100 * right,
              100 * rise, "yes" if rise <= lost + 1e-9 else "no"))
PY
