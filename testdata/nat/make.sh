#!/usr/bin/env bash
# make.sh builds a small network of namespaces with a real NAT load balancer,
# runs real traffic through it with sniffers on both sides and writes the
# captures next to this script. The nat tests read the committed captures;
# run this again (as root) only to regenerate them, and update the expected
# mapping table in the tests (nat/realnat_test.go) if the topology changes.
# OUT=DIR writes the captures to DIR instead; ROUNDS=N repeats the load
# balanced HTTP traffic N times (for benchmarks; the tests use 1).
#
#   outside LAN 192.0.2.0/24, 2001:db8:1::/64 (bridge "brout" in wpn-lb)
#     wpn-c1  192.0.2.11  2001:db8:1::11   client
#     wpn-c2  192.0.2.12  2001:db8:1::12   client
#     wpn-ext 192.0.2.50  2001:db8:1::50   "internet" server (HTTP :80, UDP echo :7)
#     wpn-lb  192.0.2.1   2001:db8:1::1    router + NAT; VIPs 192.0.2.100, 2001:db8:1::100
#   inside LAN 10.1.0.0/24, fd00:1::/64 (bridge "brin" in wpn-lb)
#     wpn-s1  10.1.0.11  fd00:1::11        real server (HTTP :8080, UDP echo :5353)
#     wpn-s2  10.1.0.12  fd00:1::12        real server
#     wpn-s3  10.1.0.13  fd00:1::13        real server
#
# NAT rules in wpn-lb (iptables, nf_tables backend):
#   tcp 192.0.2.100:80   DNAT round robin -> 10.1.0.11/12/13:8080
#   tcp 192.0.2.100:81   DNAT -> 10.1.0.13:8080 and SNAT -> 10.1.0.1 (full NAT)
#   udp 192.0.2.100:53   DNAT -> 10.1.0.11:5353
#   tcp 10.1.0.12:8888   DNAT port only -> 10.1.0.12:8080
#   10.1.0.0/24 -> outside          MASQUERADE (-> 192.0.2.1)
#   tcp [2001:db8:1::100]:80 DNAT round robin -> [fd00:1::11/12]:8080
#   fd00:1::/64 -> outside          MASQUERADE (-> 2001:db8:1::1)
#
# Sniffers (one file each):
#   outside.pcap   tcpdump on brout in wpn-lb (nanosecond pcap): the outside LAN
#   inside.pcap    tcpdump on brin in wpn-lb (nanosecond pcap): the inside LAN
#   c1.pcapng      dumpcap on eth0 in wpn-c1: a host sniffer on client 1
#   s1.pcap        tcpdump on eth0 in wpn-s1 (microsecond pcap): a host sniffer on server 1
#
# Bridge netfilter: where the br_netfilter module is loaded, iptables also
# sees bridged frames, so DNAT happens as a frame enters the bridge and the
# sniffer on the bridge records the translated packet with the TTL not yet
# decremented. By default the script turns that off in wpn-lb (the bridges
# are plain L2 switches and each sniffer sees its own side); BRNF=1 turns it
# on, as testdata/nat/brnf/ was made: there the pre-translation copy of
# client->VIP packets exists only in the client's own capture.
#
# Every namespace and process this script starts is removed on exit, even on
# failure. Needs root, ip, iptables/ip6tables, tcpdump, dumpcap, curl, go.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here}
work=$(mktemp -d)
pids=()
# P prefixes the namespaces, unique per run so that concurrent runs on one
# machine (two CI jobs, a test beside a manual run) do not collide.
P=${NSPREFIX:-wpn$$-}
nss=(${P}lb ${P}c1 ${P}c2 ${P}ext ${P}s1 ${P}s2 ${P}s3)

cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	for ns in "${nss[@]}"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT INT TERM

for tool in ip iptables ip6tables tcpdump dumpcap curl go; do
	command -v "$tool" >/dev/null || { echo "make.sh: $tool is missing (run make deps)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "make.sh: must run as root" >&2; exit 1; }
for ns in "${nss[@]}"; do
	if ip netns list | grep -qw "$ns"; then
		echo "make.sh: namespace $ns already exists (another run?)" >&2
		exit 1
	fi
done

go build -o "$work/natsrv" "$here/natsrv"

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
bg() { # bg NS CMD...: start CMD in NS in the background and remember its pid
	local ns=$1; shift
	ip netns exec "$ns" "$@" &
	pids+=($!)
}

for ns in "${nss[@]}"; do
	ip netns add "$ns"
	nsx "$ns" ip link set lo up
	nsx "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done
nsx ${P}lb sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
brnf=${BRNF:-0}
if [ "$brnf" = 1 ]; then
	modprobe br_netfilter 2>/dev/null || true
fi
if nsx ${P}lb test -e /proc/sys/net/bridge/bridge-nf-call-iptables; then
	nsx ${P}lb sysctl -qw net.bridge.bridge-nf-call-iptables="$brnf" net.bridge.bridge-nf-call-ip6tables="$brnf"
elif [ "$brnf" = 1 ]; then
	echo "make.sh: BRNF=1 needs the br_netfilter module" >&2
	exit 1
fi
nsx ${P}lb ip link add name brout type bridge
nsx ${P}lb ip link add name brin type bridge
nsx ${P}lb ip link set brout up
nsx ${P}lb ip link set brin up
nsx ${P}lb ip addr add 192.0.2.1/24 dev brout
nsx ${P}lb ip addr add 192.0.2.100/32 dev brout
nsx ${P}lb ip addr add 2001:db8:1::1/64 dev brout nodad
nsx ${P}lb ip addr add 2001:db8:1::100/128 dev brout nodad preferred_lft 0
nsx ${P}lb ip addr add 10.1.0.1/24 dev brin
nsx ${P}lb ip addr add fd00:1::1/64 dev brin nodad

# host NS BRIDGE V4 V6 GW4 GW6: connect NS to a bridge in wpn-lb.
host() {
	local ns=$1 br=$2 v4=$3 v6=$4 gw4=$5 gw6=$6 port=p-${1#"$P"}
	ip link add eth0 netns "$ns" type veth peer name "$port" netns ${P}lb
	nsx ${P}lb ip link set "$port" master "$br" up
	nsx "$ns" ip addr add "$v4" dev eth0
	nsx "$ns" ip addr add "$v6" dev eth0 nodad
	nsx "$ns" ip link set eth0 up
	nsx "$ns" ip route add default via "$gw4"
	nsx "$ns" ip -6 route add default via "$gw6"
}
host ${P}c1 brout 192.0.2.11/24 2001:db8:1::11/64 192.0.2.1 2001:db8:1::1
host ${P}c2 brout 192.0.2.12/24 2001:db8:1::12/64 192.0.2.1 2001:db8:1::1
host ${P}ext brout 192.0.2.50/24 2001:db8:1::50/64 192.0.2.1 2001:db8:1::1
host ${P}s1 brin 10.1.0.11/24 fd00:1::11/64 10.1.0.1 fd00:1::1
host ${P}s2 brin 10.1.0.12/24 fd00:1::12/64 10.1.0.1 fd00:1::1
host ${P}s3 brin 10.1.0.13/24 fd00:1::13/64 10.1.0.1 fd00:1::1

ipt() { nsx ${P}lb iptables -t nat "$@"; }
ip6t() { nsx ${P}lb ip6tables -t nat "$@"; }
vip=192.0.2.100
ipt -A PREROUTING -d $vip -p tcp --dport 80 -m statistic --mode nth --every 3 --packet 0 -j DNAT --to-destination 10.1.0.11:8080
ipt -A PREROUTING -d $vip -p tcp --dport 80 -m statistic --mode nth --every 2 --packet 0 -j DNAT --to-destination 10.1.0.12:8080
ipt -A PREROUTING -d $vip -p tcp --dport 80 -j DNAT --to-destination 10.1.0.13:8080
ipt -A PREROUTING -d $vip -p tcp --dport 81 -j DNAT --to-destination 10.1.0.13:8080
ipt -A PREROUTING -d $vip -p udp --dport 53 -j DNAT --to-destination 10.1.0.11:5353
ipt -A PREROUTING -d 10.1.0.12 -p tcp --dport 8888 -j DNAT --to-destination :8080
ipt -A POSTROUTING -o brin -p tcp -d 10.1.0.13 --dport 8080 -m conntrack --ctorigdstport 81 -j SNAT --to-source 10.1.0.1
ipt -A POSTROUTING -s 10.1.0.0/24 -o brout -j MASQUERADE
ip6t -A PREROUTING -d 2001:db8:1::100 -p tcp --dport 80 -m statistic --mode nth --every 2 --packet 0 -j DNAT --to-destination '[fd00:1::11]:8080'
ip6t -A PREROUTING -d 2001:db8:1::100 -p tcp --dport 80 -j DNAT --to-destination '[fd00:1::12]:8080'
ip6t -A POSTROUTING -s fd00:1::/64 -o brout -j MASQUERADE

# Servers.
for s in 1 2 3; do
	bg ${P}s$s "$work/natsrv" -name s$s -http :8080 -udp :5353
done
bg ${P}ext "$work/natsrv" -name ext -http :80 -udp :7

# Sniffers.
bg ${P}lb tcpdump -q -U -s 0 -i brout --time-stamp-precision=nano -w "$work/outside.pcap"
bg ${P}lb tcpdump -q -U -s 0 -i brin --time-stamp-precision=nano -w "$work/inside.pcap"
bg ${P}s1 tcpdump -q -U -s 0 -i eth0 -w "$work/s1.pcap"
bg ${P}c1 dumpcap -q -i eth0 -w "$work/c1.pcapng"

# Wait for the servers and sniffers to come up.
for i in $(seq 50); do
	if nsx ${P}c1 curl -s -o /dev/null --max-time 1 http://192.0.2.50/ready 2>/dev/null &&
		[ -s "$work/c1.pcapng" ]; then
		break
	fi
	sleep 0.2
done
sleep 1

get() { # get NS URL: one HTTP request
	nsx "$1" curl -s -S --max-time 5 -o /dev/null -g "$2"
	[ "${ROUNDS:-1}" != 1 ] || sleep 0.05
}

# 1. Load-balanced HTTP: six connections, round robin over s1, s2, s3
# (ROUNDS times six for a larger capture to benchmark with).
for i in $(seq $((3 * ${ROUNDS:-1}))); do
	get ${P}c1 "http://$vip/c1/$i"
	get ${P}c2 "http://$vip/c2/$i"
done
# 2. IPv6 load-balanced HTTP: two connections, to s1 and s2.
get ${P}c1 "http://[2001:db8:1::100]/v6/1"
get ${P}c2 "http://[2001:db8:1::100]/v6/2"
# 3. UDP through DNAT: one socket, five datagrams and their echoes.
nsx ${P}c2 "$work/natsrv" -to $vip:53 -n 5 -name c2
# 4. Port-only translation: 10.1.0.12:8888 -> 10.1.0.12:8080.
get ${P}c1 "http://10.1.0.12:8888/port/1"
get ${P}c1 "http://10.1.0.12:8888/port/2"
# 5. Full NAT: 192.0.2.100:81 -> 10.1.0.13:8080 with source 10.1.0.1.
get ${P}c2 "http://$vip:81/full/1"
get ${P}c2 "http://$vip:81/full/2"
# 6. Masquerade of outbound traffic.
get ${P}s2 "http://192.0.2.50/out/1"
get ${P}s2 "http://192.0.2.50/out/2"
nsx ${P}s3 "$work/natsrv" -to 192.0.2.50:7 -n 5 -name s3
get ${P}s3 "http://[2001:db8:1::50]/out6/1"

sleep 1
# Stop everything. SIGTERM, not SIGINT: a non-interactive shell starts
# background jobs with SIGINT ignored. tcpdump and dumpcap flush on SIGTERM.
for pid in "${pids[@]}"; do
	kill "$pid" 2>/dev/null || true
done
for pid in "${pids[@]}"; do
	wait "$pid" 2>/dev/null || true
done
pids=()

for f in outside.pcap inside.pcap s1.pcap c1.pcapng; do
	cp "$work/$f" "$out/$f"
	chmod 644 "$out/$f"
done
ls -l "${out}"/{outside.pcap,inside.pcap,s1.pcap,c1.pcapng}
