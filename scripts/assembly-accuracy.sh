#!/bin/bash
# assembly-accuracy.sh: the assembly engine on saved testbed runs, scored
# against their truth (docs/accuracy.md): requests exactly right at 1 / 4 /
# 16 / 64 in flight per variant.
#
# Usage: scripts/assembly-accuracy.sh BIN OUTDIR RUN...
#   BIN     a wirepath binary (extra flags to assemble: ASSEMBLE_FLAGS="...")
#   RUN     a run directory saved by testbed/run.sh, named
#           PAYLOAD-TRACING-INFLIGHT-RPC (e.g. opaque-sniffed-16-http),
#           holding truth.jsonl and the trace to assemble: RUN/trace.tsv, or
#           TRACES/NAME.trace.tsv when TRACES names a directory of traces
#           made again (e.g. by `wirepath analyze --save-trace` of a newer
#           build from the run's captures).
# Writes OUTDIR/NAME.json (the result) and OUTDIR/NAME.score.txt (wirepath
# score's report, with the per-link figures), then prints the table.
set -euo pipefail
bin=$1 out=$2
shift 2
mkdir -p "$out"
for run in "$@"; do
	name=$(basename "$run")
	trace=$run/trace.tsv
	if [ -n "${TRACES:-}" ] && [ -f "$TRACES/$name.trace.tsv" ]; then
		trace=$TRACES/$name.trace.tsv
	fi
	# shellcheck disable=SC2086
	"$bin" -q assemble "$trace" --format json --instances -1 ${ASSEMBLE_FLAGS:-} -o "$out/$name.json" 2>"$out/$name.err"
	"$bin" -q score "$out/$name.json" "$run/truth.jsonl" --trace "$trace" >"$out/$name.score.txt" 2>&1
done
python3 - "$out" <<'PY'
import glob, os, re, sys
out = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(out, '*.score.txt')):
    name = os.path.basename(f)[:-len('.score.txt')]
    if name.count('-') != 3:
        continue
    pay, tr, inf, rpc = name.split('-')
    m = re.search(r'engine assembly: (\d+) of (\d+) requests exactly right \(([\d.]+) %\)', open(f).read())
    rows[(rpc, pay, tr, int(inf))] = m.group(3) if m else '?'
print('| rpc | payload | tracing | requests exactly right at 1 / 4 / 16 / 64 |')
print('|---|---|---|---|')
for rpc in ['http', 'grpc']:
    for pay in ['ids', 'opaque']:
        for tr in ['sniffed', 'preload']:
            if any((rpc, pay, tr, i) in rows for i in (1, 4, 16, 64)):
                print(f"| {rpc} | {pay} | {tr} | {' / '.join(rows.get((rpc, pay, tr, i), '-') for i in (1, 4, 16, 64))} |")
PY
