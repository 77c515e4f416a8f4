#!/usr/bin/env bash
# make.sh builds the wirepath demo system in network namespaces, drives load
# through it and records it with three sniffers, writing the captures that
# `make demo` analyses. Run it as root from the repository root:
#
#     testdata/demo/make.sh
#
# Needs: ip (iproute2) with tc u32/mirred, iptables, nginx, redis-server,
# tcpdump, dumpcap and editcap (wireshark-common), gzip and Go.
#
# The system (every box a network namespace):
#
#   client 10.10.0.2 ──► lb: VIP 10.10.0.100:80 ──► web1 10.20.0.11:80 (nginx) ─┐
#                        DNAT round robin           web2 10.20.0.12:80 (nginx) ─┤
#                        + SNAT to 10.20.0.1                                     ▼
#                                                  app 10.20.0.21:8080 (Go) ──► db   10.20.0.31:6379 (Redis)
#                                                                          └──► auth 10.20.0.41:9000 (Go, 20 ms)
#
# The load balancer routes between the outside link and an inside bridge.
# Requests: /item/N (nginx → app → Redis GET), /cart (nginx → app → auth,
# then Redis LRANGE and INCR) and /static/logo.txt (nginx alone).
#
# The sniffers, as an enterprise LAN would have them:
#   outside.pcapng     switch port mirror (SPAN) of the LB's outside port, by
#                      dumpcap: Ethernet, pcapng. The reference clock.
#   inside.pcapng.gz   SPAN of every inside bridge port, by dumpcap; its
#                      clock is shifted by +83.25 s (editcap -t), then gzipped.
#   lb-any.pcap.gz     tcpdump -i any on the load balancer itself (Linux SLL2;
#                      it sees both sides of the NAT, and bridged packets
#                      twice); its clock is shifted by -12.5 s.
# ground-truth.tsv logs every request the client made.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here}
requests=${REQUESTS:-50}   # per client worker
workers=${WORKERS:-3}
P=wpd
hosts=(web1:10.20.0.11 web2:10.20.0.12 app:10.20.0.21 db:10.20.0.31 auth:10.20.0.41)
work=$(mktemp -d /tmp/wpdemo.XXXXXX)
chmod 755 "$work" # nginx workers (nobody) read the static files
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 0.5
	for ns in client lb sniff web1 web2 app db auth; do ip netns del $P-$ns 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

inns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@"; }
# bgns starts a command in a namespace in the background; $! is the
# command's own pid (ip netns exec execs it), so it can be signalled.
bgns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@" & pids+=($!); }

echo "building the programs"
(cd "$here/../.." && go build -o "$work/app" ./testdata/demo/app && go build -o "$work/auth" ./testdata/demo/auth && go build -o "$work/load" ./testdata/demo/load)

echo "creating namespaces"
for ns in client lb sniff web1 web2 app db auth; do
	ip netns del $P-$ns 2>/dev/null || true
	ip netns add $P-$ns
	inns $ns ip link set lo up
done

# Outside link: client <-> lb.
ip link add cl0 netns $P-client type veth peer name out0 netns $P-lb
inns client ip addr add 10.10.0.2/24 dev cl0
inns client ip link set cl0 up
inns client ip route add default via 10.10.0.1
inns lb ip addr add 10.10.0.1/24 dev out0
inns lb ip addr add 10.10.0.100/32 dev out0
inns lb ip link set out0 up

# Inside bridge on the lb with one port per inside host.
inns lb ip link add br0 type bridge
inns lb ip addr add 10.20.0.1/24 dev br0
inns lb ip link set br0 up
for h in "${hosts[@]}"; do
	name=${h%%:*} addr=${h##*:}
	ip link add eth0 netns $P-$name type veth peer name p-$name netns $P-lb
	inns $name ip addr add $addr/24 dev eth0
	inns $name ip link set eth0 up
	inns $name ip route add default via 10.20.0.1
	inns lb ip link set p-$name master br0
	inns lb ip link set p-$name up
done
inns lb sysctl -qw net.ipv4.ip_forward=1

# NAT: round-robin DNAT of the VIP onto web1/web2, SNAT of clients.
inns lb iptables -t nat -A PREROUTING -d 10.10.0.100 -p tcp --dport 80 -m statistic --mode nth --every 2 --packet 0 -j DNAT --to-destination 10.20.0.11:80
inns lb iptables -t nat -A PREROUTING -d 10.10.0.100 -p tcp --dport 80 -j DNAT --to-destination 10.20.0.12:80
inns lb iptables -t nat -A POSTROUTING -o br0 -s 10.10.0.0/24 -j MASQUERADE

# SPAN ports: tc mirred copies frames onto a veth whose far end is in the
# sniffer namespace. Outside: both directions of out0. Inside: every frame
# entering the bridge (each port's ingress, and br0's egress for the lb's
# own routed traffic), so each inside frame is mirrored exactly once.
ip link add spo netns $P-lb type veth peer name spo-rx netns $P-sniff
ip link add spi netns $P-lb type veth peer name spi-rx netns $P-sniff
for d in spo spi; do inns lb ip link set $d up; inns sniff ip link set $d-rx up; done
mirror() { # dev direction target
	inns lb tc qdisc add dev "$1" clsact 2>/dev/null || true
	inns lb tc filter add dev "$1" "$2" u32 match u32 0 0 action mirred egress mirror dev "$3"
}
mirror out0 ingress spo
mirror out0 egress spo
for h in "${hosts[@]}"; do mirror p-${h%%:*} ingress spi; done
mirror br0 egress spi

echo "starting services"
for w in web1 web2; do
	mkdir -p "$work/$w/static"
	echo "wirepath demo logo served by $w" >"$work/$w/static/logo.txt"
	cat >"$work/$w/nginx.conf" <<CONF
worker_processes 1;
pid $work/$w/nginx.pid;
error_log $work/$w/error.log;
daemon off;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $work/$w;
	proxy_temp_path $work/$w;
	fastcgi_temp_path $work/$w;
	uwsgi_temp_path $work/$w;
	scgi_temp_path $work/$w;
	server {
		listen 80;
		location /static/ { root $work/$w; }
		location / { proxy_pass http://10.20.0.21:8080; }
	}
}
CONF
	bgns $w nginx -c "$work/$w/nginx.conf"
done
bgns db redis-server --bind 10.20.0.31 --port 6379 --save '' --appendonly no --protected-mode no --daemonize no --logfile "$work/redis.log"
bgns app "$work/app" -listen 10.20.0.21:8080
bgns auth "$work/auth" -listen 10.20.0.41:9000
sleep 1
inns db redis-cli -h 10.20.0.31 MSET item:1 lamp item:2 chair item:3 desk >/dev/null
inns db redis-cli -h 10.20.0.31 RPUSH cart lamp desk >/dev/null

echo "starting sniffers"
bgns sniff dumpcap -q -i spo-rx -w "$work/outside.pcapng"; dumpo=$!
bgns sniff dumpcap -q -i spi-rx -w "$work/inside.pcapng"; dumpi=$!
skip=$(inns lb cat /sys/class/net/spo/ifindex) skip2=$(inns lb cat /sys/class/net/spi/ifindex)
bgns lb tcpdump -q -i any -w "$work/lb-any.pcap" "not ifindex $skip and not ifindex $skip2"; tcpd=$!
sleep 2

echo "driving load: $workers clients x $requests requests"
inns client "$work/load" -target http://10.10.0.100 -n "$requests" -workers "$workers" >"$work/ground-truth.tsv"
sleep 1
kill -INT $dumpo $dumpi $tcpd
wait $dumpo $dumpi $tcpd 2>/dev/null || true

echo "shifting clocks and writing $out"
cp "$work/outside.pcapng" "$out/outside.pcapng"
editcap -t 83.25 "$work/inside.pcapng" "$work/inside-shifted.pcapng"
gzip -9n <"$work/inside-shifted.pcapng" >"$out/inside.pcapng.gz"
editcap -F pcap -t -12.5 "$work/lb-any.pcap" "$work/lb-any-shifted.pcap"
gzip -9n <"$work/lb-any-shifted.pcap" >"$out/lb-any.pcap.gz"
{ printf 'start_ns\tclient\tpath\tstatus\tduration\n'; sort -n "$work/ground-truth.tsv"; } >"$out/ground-truth.tsv"
for f in outside.pcapng inside.pcapng.gz lb-any.pcap.gz; do
	printf '%-18s %8d bytes  ' "$f" "$(stat -c %s "$out/$f")"
	capinfos -c -M "$out/$f" | awk -F: '/Number of packets/{print $2" packets"}'
done
awk -F'\t' 'NR>1{n[$3~/item/?"item":($3~/cart/?"cart":"static")]++; if($4!=200)bad++} END{for(k in n)printf "%s=%d ",k,n[k]; printf "failed=%d\n",bad+0}' "$out/ground-truth.tsv"
