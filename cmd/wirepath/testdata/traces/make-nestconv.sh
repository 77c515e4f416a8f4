#!/usr/bin/env bash
# Regenerates the traces the nest and convolve golden tests read.
# rpc-small.tsv: a few requests of the multi-tier system (tools/gentrace
# -fixture rpc, Project 5's multi-tier system made by causal/gen).
# The committed files were written by the fixture generator gentrace
# replaced (internal/rpcgen, removed after commit c209f89), whose random
# stream differs: running this script writes equivalent but different
# traces, and the nest and convolve goldens of cmd/wirepath must then be
# rewritten (go test ./cmd/wirepath -update).
# conv-small.tsv: 12 s of the multi-tier system, send time, endpoints and nodes
# only (endpoints let the clients aggregate into CLIENT).
# fig3.tsv is written by hand (Project 5 Figure 3) and not generated.
set -euo pipefail
cd "$(dirname "$0")"
root=../../../..
go run "$root/tools/gentrace" -fixture rpc -messages 300 -clients 3 -seed 1 -o rpc-small.tsv
go run "$root/tools/gentrace" -fixture rpc -duration 12s -clients 6 -seed 2 -call-ids=false -one-timestamp -o - |
	awk -F'\t' 'BEGIN { OFS = "\t" } /^#/ { if ($0 ~ /^# wirepath-trace/) print; next } { print $1, $3, $4, $5, $6 }' >conv-small.tsv
