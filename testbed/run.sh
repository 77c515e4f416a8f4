#!/usr/bin/env bash
# run.sh measures the causal engines on the testbed: for every payload
# variant, tracing variant and number of requests in flight it builds the
# system (testbed.sh), runs `wirepath analyze --engine all` on the captures
# (and the preload traces), scores every engine with `wirepath score`
# against the truth, and prints a Markdown table (docs/accuracy.md,
# "Testbed"). Run as root from anywhere:
#
#   testbed/run.sh [OUT_DIR]            # default /tmp/wirepath-testbed
#
# Settings (environment): VARIANTS="ids opaque" TRACINGS="sniffed preload"
# INFLIGHTS="1 4 16 64" REQUESTS=1000 SEED=1 DURATION=60s. Each run's
# captures, truth, trace, results and score stay in OUT_DIR/VARIANT-TRACING-N/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-/tmp/wirepath-testbed}
variants=${VARIANTS:-ids opaque}
tracings=${TRACINGS:-sniffed preload}
inflights=${INFLIGHTS:-1 4 16 64}
export REQUESTS=${REQUESTS:-1000} SEED=${SEED:-1} DURATION=${DURATION:-60s}

mkdir -p "$out/bin"
(cd "$root" && make -s preload && go build -o "$out/bin/wirepath" ./cmd/wirepath &&
	for c in tbload tbtier tbpcap tbtruth; do go build -o "$out/bin/$c" ./testbed/cmd/$c; done)
export TBBIN=$out/bin WIREPATH_ROOT=$root
wp=$out/bin/wirepath

for v in $variants; do
	for tr in $tracings; do
		for n in $inflights; do
			d=$out/$v-$tr-$n
			echo "== $v $tr $n in flight" >&2
			VARIANT=$v TRACING=$tr INFLIGHT=$n "$here/testbed.sh" "$d" 2>"$d.log" || { echo "testbed.sh failed: $d.log" >&2; exit 1; }
			caps=("$d"/*.pcap "$d"/*.pcapng)
			pre=()
			[ -d "$d/preload" ] && pre=(--preload "$d/preload")
			"$wp" -q analyze "${caps[@]}" "${pre[@]}" --reference "$d/outside.pcapng" --roles "$d/roles.txt" \
				--engine all --format json --instances -1 --save-trace "$d/trace.tsv" -o "$d/results.json" 2>>"$d.log" || [ $? = 3 ]
			"$wp" -q score "$d/results.json" "$d/truth.jsonl" --trace "$d/trace.tsv" --format json -o "$d/score.json" 2>>"$d.log"
			"$wp" -q score "$d/results.json" "$d/truth.jsonl" --trace "$d/trace.tsv" -o "$d/score.txt" 2>>"$d.log"
		done
	done
done

/usr/bin/python3 - "$out" $variants -- $tracings -- $inflights <<'PY'
import json, sys, os
out = sys.argv[1]
rest = sys.argv[2:]
i = rest.index("--"); variants = rest[:i]; rest = rest[i+1:]
i = rest.index("--"); tracings = rest[:i]; inflights = rest[i+1:]
links = ["web→app", "app→memcached", "app→redis", "app→dns", "app→tier2", "tier2→backend"]
def pct(x): return "%.1f" % (100 * x)
print("| payload | tracing | in flight | engine | requests right % | child calls attributed % | " +
      " | ".join(l + " %" for l in links) + " | background kept out % | app delay error µs | true msgs unseen |")
print("|" + "---|" * (9 + len(links)))
for v in variants:
    for t in tracings:
        for n in inflights:
            p = os.path.join(out, "%s-%s-%s" % (v, t, n), "score.json")
            s = json.load(open(p))
            for e in s["engines"]:
                if not e["instances"]:
                    continue
                lk = {l["link"]: l for l in e["links"]}
                calls = sum(l["calls"] for l in e["links"]); right = sum(l["right"] for l in e["links"])
                app = [x for x in e["nodes"] if x["node"] == "app"]
                cells = [v, t, n, e["engine"], "%s (%d/%d)" % (pct(e["requests"]["share"]), e["requests"]["right"], e["requests"]["all"]),
                         pct(right / calls if calls else 0)]
                cells += [pct(lk[l]["attributed"]) if l in lk else "–" for l in links]
                cells += [pct(e["background"]["share"]), "%.0f" % app[0]["mean_abs_error_us"] if app else "–",
                          str(s["mapping"]["truth_unmatched"])]
                print("| " + " | ".join(str(c) for c in cells) + " |")
PY
