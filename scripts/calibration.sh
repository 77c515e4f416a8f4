#!/bin/bash
# calibration.sh: do the assembly engine's confidences mean what they say?
# Assembles saved testbed runs, scores them against their truth with
# `wirepath score --format json`, and pools engines[0].calibration over the
# runs (docs/accuracy.md, "Calibration"): per joint link and per request,
# the cases, mean stated confidence, share right, Brier score and ECE, all
# runs together and at each number in flight; then the reliability bins.
#
# Usage: scripts/calibration.sh BIN OUTDIR RUN...
#   BIN, RUN and TRACES as in scripts/assembly-accuracy.sh (RUN named
#   PAYLOAD-TRACING-INFLIGHT-RPC, holding truth.jsonl and trace.tsv, or
#   TRACES/NAME.trace.tsv when that exists). ASSEMBLE_FLAGS are passed to
#   assemble. POOL_ONLY=1 pools the scores already in OUTDIR.
# Writes OUTDIR/NAME.json (the result) and OUTDIR/NAME.score.json.
set -euo pipefail
bin=$1 out=$2
shift 2
mkdir -p "$out"
if [ -z "${POOL_ONLY:-}" ]; then
	for run in "$@"; do
		name=$(basename "$run")
		trace=$run/trace.tsv
		if [ -n "${TRACES:-}" ] && [ -f "$TRACES/$name.trace.tsv" ]; then
			trace=$TRACES/$name.trace.tsv
		fi
		# shellcheck disable=SC2086
		"$bin" -q assemble "$trace" --format json --instances -1 ${ASSEMBLE_FLAGS:-} -o "$out/$name.json" 2>"$out/$name.err"
		"$bin" -q score "$out/$name.json" "$run/truth.jsonl" --trace "$trace" --format json >"$out/$name.score.json" 2>>"$out/$name.err"
	done
fi
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
pools = {}
def add(key, what, rel):
    p = pools.setdefault((key, what), {'n': 0, 'right': 0, 'conf': 0.0, 'brier': 0.0, 'bins': {}})
    p['n'] += rel.get('n', 0)
    p['right'] += rel.get('right', 0)
    p['conf'] += rel.get('mean_confidence', 0) * rel.get('n', 0)
    p['brier'] += rel.get('brier', 0) * rel.get('n', 0)
    for b in rel.get('bins') or []:
        q = p['bins'].setdefault((b['lo'], b['hi']), [0, 0, 0.0])
        q[0] += b['n']; q[1] += b['right']; q[2] += b['mean_confidence'] * b['n']
for f in sorted(glob.glob(os.path.join(out, '*.score.json'))):
    name = os.path.basename(f)[:-len('.score.json')]
    if name.count('-') != 3:
        continue
    inf = name.split('-')[2]
    cal = json.load(open(f))['engines'][0].get('calibration')
    if not cal:
        continue
    for what in ('joint_links', 'requests'):
        for key in ('all', inf + ' in flight'):
            add(key, what, cal[what])
def ece(p):
    return sum(abs(c / n - r / n) * n for n, r, c in p['bins'].values() if n) / p['n'] if p['n'] else 0
print('| | cases | stated | right | Brier | ECE |')
print('|---|---|---|---|---|---|')
for key in ['all', '1 in flight', '4 in flight', '16 in flight', '64 in flight']:
    for what in ('joint_links', 'requests'):
        p = pools.get((key, what))
        if not p or not p['n']:
            continue
        n = p['n']
        print(f"| {what.replace('_', ' ')}, {key} | {n:,} | {100*p['conf']/n:.1f} % | {100*p['right']/n:.1f} % | {p['brier']/n:.3f} | {ece(p):.3f} |")
print()
print('| stated | joint links | requests |')
print('|---|---|---|')
edges = sorted(set(k for w in ('joint_links', 'requests') for k in pools.get(('all', w), {'bins': {}})['bins']))
for lo, hi in edges:
    cells = []
    for w in ('joint_links', 'requests'):
        b = pools.get(('all', w), {'bins': {}})['bins'].get((lo, hi))
        cells.append(f"{100*b[1]/b[0]:.1f} % ({b[0]:,})" if b and b[0] else '–')
    print(f"| {lo:g}–{hi:g} | {cells[0]} | {cells[1]} |")
PY
