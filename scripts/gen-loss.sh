#!/usr/bin/env bash
# gen-loss.sh measures what a sniffer's packet loss costs the causal
# engines on generated captures of a system whose tiers call each other
# over pools of persistent HTTP/1.1 connections (docs/accuracy.md, "Loss
# that stays local"): it generates the configuration's captures with one
# mirror sniffer that misses each packet with each rate (`wirepath gen
# --pcap`, the paths the same at every rate), runs `wirepath analyze` with
# each engine, scores it against the truth and prints a Markdown table:
# the requests that lost a message (none of them can be right) and the
# requests exactly right. The loss stays local when the wrong requests rise
# by at most the share that lost a message.
#
#   scripts/gen-loss.sh [OUT_DIR]        # default /tmp/wirepath-gen-loss
#
# Settings (environment): CONFIG=multitier (a shipped configuration; every
# node becomes an HTTP server with a pool of POOL=4 connections),
# DURATION=120s, RATES="0 0.002 0.005 0.01" (the first is the baseline),
# WIREPATH, a prebuilt binary (else built).
set -euo pipefail

out=${1:-/tmp/wirepath-gen-loss}
config=${CONFIG:-multitier}
pool=${POOL:-4}
duration=${DURATION:-120s}
rates=${RATES:-0 0.002 0.005 0.01}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
wp=${WIREPATH:-}
if [ -z "$wp" ]; then wp=$out/wirepath; (cd "$root" && go build -o "$wp" ./cmd/wirepath); fi

# Every node an HTTP server behind a connection pool.
"$wp" gen "$config" --dump | sed "s/^\(  [A-Za-z0-9_-]*: *{addr: [^}]*\)}\$/\1, protocol: http, pool: $pool}/" >"$out/pools.yaml"
grep -q "pool: $pool" "$out/pools.yaml" || { echo "gen-loss.sh: no node of $config took a pool" >&2; exit 1; }

for rate in $rates; do
	d=$out/loss-$rate
	mkdir -p "$d"
	{ cat "$out/pools.yaml"; printf 'sniffers:\n  - {name: mirror, loss: %s}\n' "$rate"; } >"$d/config.yaml"
	"$wp" -q gen "$d/config.yaml" --duration "$duration" --pcap "$d"
	for e in nesting linking; do
		"$wp" -q analyze "$d/mirror.pcapng" --engine "$e" --format json --instances -1 \
			--save-trace "$d/$e.tsv" -o "$d/$e.json" 2>"$d/$e.log" || [ $? = 3 ]
		"$wp" -q score "$d/$e.json" "$d/truth.tsv" --trace "$d/$e.tsv" --json -o "$d/$e.score.json" 2>>"$d/$e.log"
	done
done

/usr/bin/env python3 - "$out" $rates <<'PY'
import json, os, sys
out, rates = sys.argv[1], sys.argv[2:]
base = {}
print("| sniffer loss | engine | requests | lost a message | right | wrong rose (points) | within the bound |")
print("|---|---|---|---|---|---|---|")
for rate in rates:
    for e in ["nesting", "linking"]:
        s = json.load(open(os.path.join(out, "loss-" + rate, e + ".score.json")))
        i = s["instances"]
        lost = i.get("lost", 0) / i["truth"]
        right = 1 - i["false_negative_rate"]
        base.setdefault(e, right)
        rise = base[e] - right
        print("| %.1f %% | %s | %d | %.1f %% | %.1f %% | %.1f | %s |" % (100 * float(rate), e, i["truth"], 100 * lost, 100 * right,
              100 * rise, "yes" if rise <= lost + 1e-9 else "no"))
PY
