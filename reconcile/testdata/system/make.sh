#!/usr/bin/env bash
# make.sh runs the reconcile test system in network namespaces, under the
# LD_PRELOAD library, while two sniffers capture it, and writes the
# captures, the syscall traces and the ground truth the tests check. Run it
# as root from anywhere:
#
#     reconcile/testdata/system/make.sh [OUTDIR]
#
# (OUTDIR defaults to this directory.) Needs: ip (iproute2) with tc netem,
# gcc, Go, curl, tcpdump, dumpcap and editcap (wireshark-common), make.
#
# The system (every box a network namespace):
#
#   client  10.30.1.2 (curl, traced) ──┐            ┌── web 10.30.2.11:8080 (C, traced) ──eth1── cache 10.30.3.31:7100 (C, traced)
#   client2 10.30.1.3 (curl)  ─────────┤─ router ───┤     └── logger (UNIX socket, traced)
#                                  br1 10.30.1.1   br2 10.30.2.1
#                                                   └── db  10.30.2.21:7000 (Go: no LD_PRELOAD)
#
# The router drops 5% of the TCP segments with data it forwards (iptables
# statistic: retransmissions, seen by one sniffer only) and shapes what it
# sends to client to 20 Mbit/s (tbf: the big answers queue there). Per request the web tier asks
# db (two writes), stores in the cache, logs over the UNIX socket and
# answers; /big/N answers are written on a non-blocking socket with a small
# send buffer (partial writes).
#
# The sniffers:
#   clientside.pcapng  dumpcap on the router's two client ports (one file,
#                      two interfaces); its clock is shifted by +1.5 s
#                      (editcap -t). The reference clock.
#   web.pcap           tcpdump -i eth0 on the web host; shifted by -0.75 s.
# Nothing sniffs the web-cache link, the UNIX socket or client2's host.
# The traced hosts' clocks are the machine's (not shifted): against the
# reference they are -1.5 s off.
#
# truth.txt: the shifts, web's log (one line per request: client endpoint,
# path, db and cache endpoints, body size, partial writes) and curl's
# (pid, local endpoint, URL, status per request).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$here}
P=wprc$$
work=$(mktemp -d /tmp/wprc.XXXXXX)
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 0.3
	for ns in client client2 router web db cache; do ip netns del $P-$ns 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

inns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@"; }
bgns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@" & pids+=($!); }

echo "building"
make -s -C "$root" preload
lib=$root/bin/libwpcap.so
for p in web cache logger; do gcc -O2 -Wall -o "$work/$p" "$here/$p.c"; done
(cd "$root" && go build -o "$work/db" ./reconcile/testdata/system/db)

echo "creating namespaces"
for ns in client client2 router web db cache; do
	ip netns add $P-$ns
	inns $ns ip link set lo up
done
inns router ip link add br1 type bridge
inns router ip link add br2 type bridge
inns router ip addr add 10.30.1.1/24 dev br1
inns router ip addr add 10.30.2.1/24 dev br2
inns router ip link set br1 up
inns router ip link set br2 up
inns router sysctl -qw net.ipv4.ip_forward=1
port() { # ns addr router-port bridge
	ip link add eth0 netns $P-$1 type veth peer name $3 netns $P-router
	inns $1 ip addr add $2 dev eth0
	inns $1 ip link set eth0 up
	inns router ip link set $3 master $4
	inns router ip link set $3 up
}
port client 10.30.1.2/24 rc1 br1
port client2 10.30.1.3/24 rc2 br1
port web 10.30.2.11/24 rw br2
port db 10.30.2.21/24 rd br2
for ns in client client2; do inns $ns ip route add default via 10.30.1.1; done
for ns in web db; do inns $ns ip route add default via 10.30.2.1; done
ip link add eth1 netns $P-web type veth peer name eth0 netns $P-cache
inns web ip addr add 10.30.3.11/24 dev eth1
inns web ip link set eth1 up
inns cache ip addr add 10.30.3.31/24 dev eth0
inns cache ip link set eth0 up
# Loss and shaping make the run messier; a kernel without the modules
# still runs the system, plainly.
inns router iptables -A FORWARD -p tcp -m length --length 200:65535 -m statistic --mode random --probability 0.05 -j DROP ||
	echo "make.sh: no iptables statistic match: no loss" >&2
inns router tc qdisc add dev rc1 root tbf rate 20mbit burst 16kb latency 200ms ||
	echo "make.sh: no tbf qdisc: no shaping" >&2

mkdir -p "$work/traces"
trace() { # host: the environment of a traced program
	echo env LD_PRELOAD=$lib WIREPATH_PRELOAD_DIR=$work/traces WIREPATH_PRELOAD_HOST=$1
}

echo "starting sniffers"
bgns router dumpcap -q -i rc1 -i rc2 -w "$work/clientside.pcapng"
dump=$!
# --immediate-mode: without it the packets of tcpdump's last unfinished
# ring block are lost when it is stopped.
bgns web tcpdump -q --immediate-mode -i eth0 -w "$work/web.pcap"
tcpd=$!
sleep 2

echo "starting services"
bgns db "$work/db" -listen 10.30.2.21:7000
bgns cache $(trace cache) "$work/cache" 10.30.3.31 7100
sock=$work/log.sock
bgns web $(trace web) "$work/logger" "$sock"
nreq=9
inns web $(trace web) "$work/web" 10.30.2.11 8080 10.30.2.21 7000 10.30.3.31 7100 "$sock" $nreq >"$work/web.log" &
webpid=$!
sleep 1

echo "driving requests"
u=http://10.30.2.11:8080
w='%{local_ip}:%{local_port} %{url_effective} %{http_code}\n'
curl_run() { # ns traced-host|- url...
	local ns=$1 host=$2; shift 2
	local env=() outs=()
	[ "$host" != - ] && env=($(trace "$host"))
	for _ in "$@"; do outs+=(-o /dev/null); done
	ip netns exec $P-$ns "${env[@]}" curl -s --http1.1 -w "$w" "${outs[@]}" "$@" >"$work/curl.out" &
	local cp=$!
	wait $cp
	sed "s/^/curl $ns $cp /" "$work/curl.out" >>"$work/curl.log"
}
curl_run client client $u/item/1 $u/item/2 $u/big/120000 $u/item/3
curl_run client client $u/item/4 $u/item/5
curl_run client2 - $u/item/6 $u/big/40000 $u/item/7
wait $webpid
sleep 1.5
kill -INT $dump $tcpd
wait $dump $tcpd 2>/dev/null || true

echo "shifting clocks and writing $out"
mkdir -p "$out/traces"
rm -f "$out"/traces/*.jsonl
editcap -t 1.5 "$work/clientside.pcapng" "$out/clientside.pcapng"
editcap -t -0.75 "$work/web.pcap" "$out/web.pcap"
cp "$work"/traces/*.jsonl "$out/traces/"
{
	echo "shift clientside.pcapng +1.5s"
	echo "shift web.pcap -0.75s"
	sed 's/^/web /' "$work/web.log"
	cat "$work/curl.log"
} >"$out/truth.txt"
chmod 644 "$out"/*.pcap* "$out"/truth.txt "$out"/traces/*
ls -l "$out" "$out/traces"
cat "$out/truth.txt"
