#!/usr/bin/env bash
# scripts/hostile.sh: reruns the hostile-input cases of issue 13's audit that
# can be reconstructed, each in bounded time and memory (timeout, ulimit -v),
# and prints how many were handled well.
#
#   scripts/hostile.sh            # build bin/wirepath-hostile, run every case
#   WIREPATH=bin/wirepath scripts/hostile.sh
#   HOSTILE_TIMEOUT=60 HOSTILE_MEM_MB=3072 scripts/hostile.sh
#
# A case passes when the command ends within the time with an expected exit
# status (0 success, 1 unreadable input, 2 usage, 3 bad input skipped), and
# stderr shows no panic or runtime error; a failing status must come with a
# message naming the file. Cases that must give one answer also compare it:
# a capture read from a pipe, a FIFO or <(...) against the same file; an
# output that is also an input must be refused (exit 2) and the input left
# byte for byte. The crafted files come from scripts/hostile-gen.py. Exit
# status: 0 when every case passed, 1 otherwise. Needs python3 and zstd.
set -u
cd "$(dirname "$0")/.."
TIMEOUT=${HOSTILE_TIMEOUT:-60}
MEM_MB=${HOSTILE_MEM_MB:-3072}
work=$(mktemp -d /tmp/wirepath-hostile.XXXXXX)
trap 'rm -rf "$work"' EXIT
BIN=${WIREPATH:-}
if [ -z "$BIN" ]; then
	BIN=bin/wirepath-hostile
	go build -o "$BIN" ./cmd/wirepath || exit 1
fi
BIN=$(realpath "$BIN")
python3 scripts/hostile-gen.py "$work/gen" || exit 1

pass=0
fail=0
failed=()

# verdict NAME OK: counts a case.
verdict() {
	if [ "$2" = ok ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed+=("$1: $2")
	fi
}

# bounded CMD...: runs CMD (a shell string) under the limits; sets rc and
# leaves stdout and stderr in $work/out and $work/err.
bounded() {
	(
		ulimit -v $((MEM_MB * 1024))
		exec timeout -k 5 "$TIMEOUT" bash -c "$1"
	) >"$work/out" 2>"$work/err" </dev/null
	rc=$?
}

# sane NAME CODES FILE: the last run ended with a status in CODES (e.g.
# "0 3"), without a panic, and named FILE in stderr if it failed.
sane() {
	local name=$1 codes=$2 file=${3:-}
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		verdict "$name" "timed out (${TIMEOUT}s)"
		return
	fi
	if grep -qE '^(panic:|fatal error:|goroutine [0-9]+ \[)|runtime: out of memory' "$work/err"; then
		verdict "$name" "crashed: $(grep -m1 -E 'panic:|fatal error:|out of memory' "$work/err")"
		return
	fi
	case " $codes " in
	*" $rc "*) ;;
	*)
		verdict "$name" "exit $rc, want one of $codes: $(head -c 200 "$work/err")"
		return
		;;
	esac
	if [ "$rc" != 0 ] && [ -n "$file" ] && ! grep -qF "$(basename "$file")" "$work/err"; then
		verdict "$name" "exit $rc without naming $(basename "$file"): $(head -c 200 "$work/err")"
		return
	fi
	verdict "$name" ok
}

W="$BIN"
caps=testdata/captures
g=$work/gen

echo "== crafted captures (stats, messages)"
for f in "$g"/*.pcap "$g"/*.pcapng; do
	for cmd in stats messages; do
		bounded "'$W' $cmd -q '$f' >/dev/null"
		sane "$cmd $(basename "$f")" "0 1 3" "$f"
	done
done

echo "== truncations"
for src in $caps/client.pcap $caps/server.pcapng $caps/vlan.pcap; do
	size=$(stat -c %s "$src")
	points=$(python3 -c "
s=$size
pts=set(range(0, min(s, 40)))
pts.update(s*i//60 for i in range(60))
pts.update(range(max(0, s-20), s))
print(' '.join(map(str, sorted(pts))))")
	for n in $points; do
		t=$work/trunc-$n-$(basename "$src")
		head -c "$n" "$src" >"$t"
		bounded "'$W' stats -q '$t' >/dev/null"
		sane "truncated $(basename "$src") at $n" "0 1 3" "$t"
		rm -f "$t"
	done
done

echo "== compressed input"
gz=$work/cut.pcap.gz
gzip -c $caps/client.pcap | head -c 3000 >"$gz"
bounded "'$W' stats -q '$gz' >/dev/null"
sane "truncated gzip" "0 1 3" "$gz"
bomb=$work/bomb.pcap.zst
{ head -c 24 $caps/client.pcap; head -c $((2 << 30)) /dev/zero; } | zstd -q -1 -o "$bomb"
bounded "'$W' stats -q '$bomb' >/dev/null"
sane "zstd of a pcap header and 2 GiB of zeros ($(stat -c %s "$bomb") bytes)" "0 1 3" "$bomb"

echo "== pipes, FIFOs, standard input"
ref=$work/ref.tsv
"$W" messages -q $caps/client.pcap $caps/server.pcapng >"$ref" 2>/dev/null
same() { # NAME: the last run's stdout is the reference
	if [ "$rc" = 0 ] && cmp -s "$work/out" "$ref"; then verdict "$1" ok; else verdict "$1" "exit $rc, output differs from the file's"; fi
}
bounded "cat $caps/client.pcap | '$W' messages -q - $caps/server.pcapng"
same "messages from stdin"
bounded "'$W' messages -q <(cat $caps/client.pcap) <(cat $caps/server.pcapng)"
same "messages from <(...)"
fifo1=$work/f1 fifo2=$work/f2
mkfifo "$fifo1" "$fifo2"
bounded "cat $caps/client.pcap >'$fifo1' & cat $caps/server.pcapng >'$fifo2' & '$W' messages -q '$fifo1' '$fifo2'; wait"
same "messages from two FIFOs"
for cmd in reconcile analyze stats; do
	bounded "cat $caps/client.pcap >'$fifo1' & cat $caps/server.pcapng >'$fifo2' & '$W' $cmd -q '$fifo1' '$fifo2' >/dev/null; r=\$?; wait; exit \$r"
	sane "$cmd from two FIFOs" "0 3"
done
big=$g/pcap-8mb-record.pcap
bounded "cat '$big' | '$W' stats -q - >/dev/null"
sane "8 MiB record through a pipe" "0 3"
bounded "'$W' stats -q <(cat '$big') >/dev/null"
sane "8 MiB record through <(...)" "0 3"

echo "== -o equal to an input"
trace=$work/t.tsv
result=$work/r.json
"$W" reconcile -q $caps/client.pcap $caps/server.pcapng -o "$trace" 2>/dev/null
"$W" nest -q --format json -o "$result" "$trace" 2>/dev/null
cp $caps/client.pcap "$work/c.pcap"
ln "$work/c.pcap" "$work/c-hard.pcap"
ln -s "$work/c.pcap" "$work/c-sym.pcap"
echo "10.0.0.1 web" >"$work/roles.txt"
echo "tcp 192.0.2.1:80 10.0.0.1:8080" >"$work/nat.txt"
refuses() { # NAME FILE CMD: CMD exits 2 and FILE is unchanged
	local name=$1 file=$2 before
	before=$(sha256sum <"$file")
	bounded "$3"
	if [ "$rc" = 2 ] && [ "$(sha256sum <"$file")" = "$before" ]; then verdict "$name" ok; else verdict "$name" "exit $rc, $(basename "$file") $( [ "$(sha256sum <"$file")" = "$before" ] && echo kept || echo CHANGED)"; fi
}
for cmd in stats messages reconcile analyze nat merge; do
	refuses "$cmd -o the capture" "$work/c.pcap" "'$W' $cmd -q -o '$work/c.pcap' '$work/c.pcap'"
	refuses "$cmd -o a hard link of the capture" "$work/c.pcap" "'$W' $cmd -q -o '$work/c-hard.pcap' '$work/c.pcap'"
	refuses "$cmd -o a symlink to the capture" "$work/c.pcap" "'$W' $cmd -q -o '$work/c-sym.pcap' '$work/c.pcap'"
done
for cmd in nest link convolve; do
	refuses "$cmd -o the trace" "$trace" "'$W' $cmd -q -o '$trace' '$trace'"
done
for cmd in report whatif; do
	extra=""
	[ $cmd = whatif ] && extra="--link 'a->b' --rtt 1ms"
	refuses "$cmd -o the result" "$result" "'$W' $cmd -q $extra -o '$result' '$result'"
done
refuses "analyze -o the roles file" "$work/roles.txt" "'$W' analyze -q --roles '$work/roles.txt' -o '$work/roles.txt' '$work/c.pcap'"
refuses "reconcile -o the NAT table" "$work/nat.txt" "'$W' reconcile -q --nat-table '$work/nat.txt' -o '$work/nat.txt' '$work/c.pcap'"

echo "== hostile traces, results, roles, tables"
for cmd in nest link convolve; do
	bounded "'$W' $cmd -q '$g/trace-huge-line.tsv' >/dev/null"
	sane "$cmd on a 20 MiB trace line" "1 3" "trace-huge-line.tsv"
	bounded "'$W' $cmd -q '$g/trace-binary.tsv' >/dev/null"
	sane "$cmd on binary" "1 3" "trace-binary.tsv"
	bounded "'$W' $cmd -q '$caps/client.pcap' >/dev/null"
	sane "$cmd on a capture" "1 2" "client.pcap"
done
bounded "'$W' report -q '$g/result-garbage.json' >/dev/null"
sane "report on 100,000 nested arrays" "1" "result-garbage.json"
bounded "'$W' reconcile -q --roles '$g/roles-huge.txt' $caps/client.pcap >/dev/null"
sane "reconcile with an 8 MiB role name" "0 1 3"
for f in "$g"/pcap-bad-magic.pcap "$g"/trace-binary.tsv; do
	bounded "'$W' messages -q --nat-table '$f' $caps/client.pcap >/dev/null"
	sane "--nat-table $(basename "$f")" "1" "$f"
done

echo
echo "hostile inputs: $pass passed, $fail failed (limits: ${TIMEOUT}s, ${MEM_MB} MiB of address space each)"
for f in "${failed[@]}"; do
	echo "  FAIL $f"
done
[ "$fail" = 0 ]
