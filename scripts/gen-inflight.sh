#!/usr/bin/env bash
# gen-inflight.sh measures the causal engines on generated captures of the
# testbed's shape (causal/accuracy/testdata/inflight.yaml) through the
# whole pipeline, at 1, 4, 16 and 64 requests in flight (docs/accuracy.md,
# "Requests in flight on generated traces"): three sniffers (the clients'
# and web tier's, the clock reference; the app tier's, which misses
# 0.5 % of its packets; the back tiers', 2 ms off and drifting 40 ppm),
# with propagated ids and readable payloads (ids) or none (opaque). It
# runs `wirepath analyze --engine all` on the captures, scores linking,
# nesting and assembly against the truth and prints a Markdown table of
# the requests exactly right.
#
#   scripts/gen-inflight.sh [OUT_DIR]       # default /tmp/wirepath-gen-inflight
#
# Settings (environment): VARIANTS="ids opaque" INFLIGHTS="1 4 16 64"
# INSTANCES=1000, WIREPATH, a prebuilt binary (else built).
set -euo pipefail

out=${1:-/tmp/wirepath-gen-inflight}
variants=${VARIANTS:-ids opaque}
inflights=${INFLIGHTS:-1 4 16 64}
instances=${INSTANCES:-1000}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
wp=${WIREPATH:-}
if [ -z "$wp" ]; then wp=$out/wirepath; (cd "$root" && go build -o "$wp" ./cmd/wirepath); fi
base=$root/causal/accuracy/testdata/inflight.yaml

for v in $variants; do
	for n in $inflights; do
		d=$out/$v-$n
		mkdir -p "$d"
		{
			if [ "$v" = opaque ]; then
				# no ids, no tokens, no traced threads (captures carry none anyway)
				sed -e 's/, ids: [a-z-]*//' -e '/^  tokens:/d' "$base"
			else
				cat "$base"
			fi
			printf 'sniffers:\n'
			printf '  - {name: front, nodes: [CLIENT, web]}\n'
			printf '  - {name: apptier, nodes: [app, store, cache], loss: 0.005}\n'
			printf '  - {name: back, nodes: [tier2, b1, b2, b3, db], offset: 2ms, drift_ppm: 40}\n'
		} | sed -e "s/^clients: .*/clients: $n/" -e "s/^instances: .*/instances: $instances/" >"$d/config.yaml"
		"$wp" -q gen "$d/config.yaml" --pcap "$d"
		"$wp" -q analyze "$d"/front.pcapng "$d"/apptier.pcapng "$d"/back.pcapng --engine all --format json --instances -1 \
			--save-trace "$d/rebuilt.tsv" -o "$d/results.json" 2>"$d/analyze.log" || [ $? = 3 ]
		python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
doc = json.load(open(d + "/results.json"))
for r in doc["results"]:
    if r["engine"] in ("linking", "nesting", "assembly"):
        json.dump(r, open("%s/%s.json" % (d, r["engine"]), "w"))
PY
		for e in linking nesting assembly; do
			"$wp" -q score "$d/$e.json" "$d/truth.tsv" --trace "$d/rebuilt.tsv" --format json -o "$d/$e.score.json" 2>>"$d/analyze.log"
		done
	done
done

python3 - "$out" $variants -- $inflights <<'PY'
import json, os, sys
out = sys.argv[1]; rest = sys.argv[2:]; i = rest.index("--")
variants, inflights = rest[:i], rest[i+1:]
print("| payload | engine | " + " | ".join("%s in flight" % n for n in inflights) + " |")
print("|---|---|" + "---|" * len(inflights))
for v in variants:
    for e in ["linking", "nesting", "assembly"]:
        cells = []
        for n in inflights:
            s = json.load(open(os.path.join(out, "%s-%s" % (v, n), e + ".score.json")))
            cells.append("%.1f %%" % (100 * (1 - s["instances"]["false_negative_rate"])))
        print("| %s | %s | %s |" % (v, e, " | ".join(cells)))
PY
