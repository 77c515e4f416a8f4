#!/usr/bin/env bash
# Benchmarks `wirepath merge` against `mergecap` followed by `editcap -D`
# on a generated set of three sniffers' captures (tools/benchcap: about
# 1.2 million records, 300 MB, one sniffer 90 s off, one seeing every
# packet twice), and prints the median wall and CPU seconds, peak memory
# and the ratio. The captures stay in $DIR for the next run.
#
#   scripts/bench-merge.sh [RUNS]        (default 5; DIR=/tmp/wirepath-bench N=450000)
#
# Needs go, mergecap and editcap (Debian: tshark), GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
DIR=${DIR:-/tmp/wirepath-bench}
N=${N:-450000}
mkdir -p "$DIR"
go build -o "$DIR/wirepath" ./cmd/wirepath
[ -f "$DIR/c.pcap" ] || go run ./tools/benchcap -n "$N" -out "$DIR"
cd "$DIR"
rm -f times.tsv
WP=(./wirepath merge -q a.pcap b.pcapng c.pcap -o wirepath.pcapng)
MC=(sh -c 'mergecap -w mergecap.pcapng a.pcap b.pcapng c.pcap && editcap -D 100 mergecap.pcapng mergecap-dedup.pcapng')
"${WP[@]}" > wirepath-report.txt # warm the page cache
"${MC[@]}" > editcap-report.txt 2>&1
for _ in $(seq "$RUNS"); do
	/usr/bin/time -a -o times.tsv -f "wirepath	%e	%U	%S	%M" "${WP[@]}" > /dev/null
	/usr/bin/time -a -o times.tsv -f "mergecap+editcap	%e	%U	%S	%M" "${MC[@]}" > /dev/null
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "records: $(capinfos -c -M a.pcap b.pcapng c.pcap | awk '/Number of packets/ {s+=$NF} END {print s}') in a.pcap b.pcapng c.pcap ($(du -ch a.pcap b.pcapng c.pcap | tail -1 | cut -f1))"
printf '%-18s %8s %8s %8s %10s\n' command wall_s user_s sys_s peak_MiB
for c in wirepath mergecap+editcap; do
	w=$(awk -F'\t' -v c="$c" '$1==c {print $2}' times.tsv | median)
	u=$(awk -F'\t' -v c="$c" '$1==c {print $3}' times.tsv | median)
	s=$(awk -F'\t' -v c="$c" '$1==c {print $4}' times.tsv | median)
	m=$(awk -F'\t' -v c="$c" '$1==c {printf "%.1f\n", $5/1024}' times.tsv | median)
	printf '%-18s %8s %8s %8s %10s\n' "$c" "$w" "$u" "$s" "$m"
	eval "wall_${c%%+*}=$w"
done
awk -v a="$wall_wirepath" -v b="$wall_mergecap" 'BEGIN {printf "wall ratio wirepath / (mergecap + editcap -D): %.2f (%.1fx faster)\n", a/b, b/a}'
echo "wirepath:  $(grep 'records read' wirepath-report.txt | sed 's/^ *//')"
echo "editcap:   $(cat editcap-report.txt)"
