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
# INFLIGHTS="1 4 16 64" RPCS="grpc" (tier2 to the backends: grpc, http or
# both) REQUESTS=1000 SEED=1 DURATION=60s. Each run's captures, truth,
# trace, results and score stay in OUT_DIR/VARIANT-TRACING-N[-RPC]/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-/tmp/wirepath-testbed}
variants=${VARIANTS:-ids opaque}
tracings=${TRACINGS:-sniffed preload}
inflights=${INFLIGHTS:-1 4 16 64}
rpcs=${RPCS:-grpc}
export REQUESTS=${REQUESTS:-1000} SEED=${SEED:-1} DURATION=${DURATION:-60s}

mkdir -p "$out/bin"
(cd "$root" && make -s preload && go build -o "$out/bin/wirepath" ./cmd/wirepath &&
	for c in tbload tbtier tbpcap tbtruth; do go build -o "$out/bin/$c" ./testbed/cmd/$c; done)
export TBBIN=$out/bin WIREPATH_ROOT=$root
wp=$out/bin/wirepath

for rpc in $rpcs; do
	for v in $variants; do
		for tr in $tracings; do
			for n in $inflights; do
				d=$out/$v-$tr-$n-$rpc
				echo "== $v $tr $n in flight, $rpc" >&2
				RPC=$rpc VARIANT=$v TRACING=$tr INFLIGHT=$n "$here/testbed.sh" "$d" 2>"$d.log" || { echo "testbed.sh failed: $d.log" >&2; exit 1; }
				caps=("$d"/*.pcap "$d"/*.pcapng)
				pre=()
				[ -d "$d/preload" ] && pre=(--preload "$d/preload")
				"$wp" -q analyze "${caps[@]}" "${pre[@]}" --reference "$d/outside.pcapng" --roles "$d/roles.txt" \
					--tls-keylog "$d/keylog.txt" --engine all --format json --instances -1 --save-trace "$d/trace.tsv" \
					-o "$d/results.json" 2>>"$d.log" || [ $? = 3 ]
				"$wp" -q score "$d/results.json" "$d/truth.jsonl" --trace "$d/trace.tsv" --format json -o "$d/score.json" 2>>"$d.log"
				"$wp" -q score "$d/results.json" "$d/truth.jsonl" --trace "$d/trace.tsv" -o "$d/score.txt" 2>>"$d.log"
			done
		done
	done
done

/usr/bin/python3 - "$out" $variants -- $tracings -- $inflights -- $rpcs <<'PY'
import json, sys, os
out = sys.argv[1]
rest = sys.argv[2:]
i = rest.index("--"); variants = rest[:i]; rest = rest[i+1:]
i = rest.index("--"); tracings = rest[:i]; rest = rest[i+1:]
i = rest.index("--"); inflights = rest[:i]; rpcs = rest[i+1:]
links = ["web→app", "app→memcached", "app→redis", "app→dns", "app→tier2", "tier2→backend", "backend→postgres"]
def pct(x): return "%.1f" % (100 * x)
print("Messages and calls against the truth (the pipeline, before any engine):\n")
print("| rpc | payload | tracing | in flight | true messages | in the trace | true calls | paired exactly | of them tier2→backend | backend→postgres |")
print("|---|---|---|---|---|---|---|---|---|---|")
for rpc in rpcs:
    for v in variants:
        for t in tracings:
            for n in inflights:
                s = json.load(open(os.path.join(out, "%s-%s-%s-%s" % (v, t, n, rpc), "score.json")))
                m = s["mapping"]; pl = m.get("pairs_by_link", {})
                cell = lambda l: "%d/%d" % tuple(pl[l]) if l in pl else "–"
                print("| %s | %s | %s | %s | %d | %d | %d | %d | %s | %s |" % (rpc, v, t, n, m["truth_messages"], m["matched"],
                      m["calls"], m["pairs_right"], cell("tier2→backend"), cell("backend→postgres")))
print("\nThe engines:\n")
print("| rpc | payload | tracing | in flight | engine | requests right % | child calls attributed % | " +
      " | ".join(l + " %" for l in links) + " | background kept out % | app delay error µs | true msgs unseen |")
print("|" + "---|" * (10 + len(links)))
for rpc in rpcs:
  for v in variants:
    for t in tracings:
        for n in inflights:
            p = os.path.join(out, "%s-%s-%s-%s" % (v, t, n, rpc), "score.json")
            s = json.load(open(p))
            for e in s["engines"]:
                if not e["instances"]:
                    continue
                lk = {l["link"]: l for l in e["links"]}
                calls = sum(l["calls"] for l in e["links"]); right = sum(l["right"] for l in e["links"])
                app = [x for x in e["nodes"] if x["node"] == "app"]
                cells = [rpc, v, t, n, e["engine"], "%s (%d/%d)" % (pct(e["requests"]["share"]), e["requests"]["right"], e["requests"]["all"]),
                         pct(right / calls if calls else 0)]
                cells += [pct(lk[l]["attributed"]) if l in lk else "–" for l in links]
                cells += [pct(e["background"]["share"]), "%.0f" % app[0]["mean_abs_error_us"] if app else "–",
                          str(s["mapping"]["truth_unmatched"])]
                print("| " + " | ".join(str(c) for c in cells) + " |")
PY
