#!/usr/bin/env bash
# Regenerates the traces the nest and convolve golden tests read.
# rpc-small.tsv: a few requests of the multi-tier system (internal/rpcgen).
# conv-small.tsv: 12 s of the multi-tier system, send time, endpoints and nodes
# only (endpoints let the clients aggregate into CLIENT).
# fig3.tsv is written by hand (Project 5 Figure 3) and not generated.
set -euo pipefail
cd "$(dirname "$0")"
root=../../../..
go run "$root/internal/rpcgen/gentrace" -messages 300 -clients 3 -seed 1 -o rpc-small.tsv
go run "$root/internal/rpcgen/gentrace" -duration 12s -clients 6 -seed 2 -call-ids=false -one-timestamp -o - |
	awk -F'\t' 'BEGIN { OFS = "\t" } /^#/ { if ($0 ~ /^# wirepath-trace/) print; next } { print $1, $3, $4, $5, $6 }' >conv-small.tsv
