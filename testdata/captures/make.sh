#!/usr/bin/env bash
# Makes the small real captures in testdata/captures/ with real tools, and
# expected.txt, the counts the tests check, computed with tshark (not with
# wirepath). Run as root: it creates network namespaces (wpc-*) and removes
# them when done. Needs ip, tcpdump, dumpcap, editcap, tshark, zstd, gzip, go.
#
# Topology (one kernel, so every sniffer shares one clock):
#
#   wpc-cli            wpc-rtr (forwarding)            wpc-srv
#   cli0 10.77.1.2 --- rtr-in 10.77.1.1 | rtr-out 10.77.2.1 --- srv0 10.77.2.2
#        fd77:1::2        fd77:1::1     |    fd77:2::1              fd77:2::2
#
# Traffic (traffic/main.go): two TCP connections of five requests each and
# three UDP queries to the server over IPv4 and IPv6, three ICMP and three
# ICMPv6 echoes.
#
# Captures (two sniffers on one path, one router between them):
#   client.pcap          tcpdump -i cli0 in wpc-cli: pcap, microseconds, Ethernet
#   server.pcapng        dumpcap -i srv0 in wpc-srv, then `editcap -t 137.25`:
#                        its clock looks 137.25 s ahead of the others
#   router-any.pcap.zst  tcpdump -i any --time-stamp-precision=nano in wpc-rtr
#                        (LINUX_SLL2; sees every forwarded packet twice, on
#                        rtr-in and on rtr-out), compressed with zstd
#   router-sll1.pcap     tcpdump -i any -y LINUX_SLL -c 40 in wpc-rtr (cooked v1)
#   router-multi.pcapng.gz
#                        dumpcap -i rtr-in -i any in wpc-rtr: one pcapng with an
#                        Ethernet and a LINUX_SLL2 interface, gzip-compressed
#   vlan.pcap            tcpdump -i v2 in wpc-v2 while wpc-v1 sends UDP in
#                        802.1Q (VLAN 100) and QinQ (802.1ad 200 + 802.1Q 300)
#                        frames over a veth. The kernel that made these had no
#                        8021q module, so traffic/main.go injects the tagged
#                        frames with a packet socket; tcpdump captures them
#                        as any NIC's tagged frames are captured.
set -euo pipefail
cd "$(dirname "$0")"
[ "$(id -u)" = 0 ] || { echo "make.sh: run as root (it creates network namespaces)" >&2; exit 1; }
TMP=$(mktemp -d)
NS="wpc-cli wpc-rtr wpc-srv wpc-v1 wpc-v2"
PIDS=()
SERVER=
cleanup() {
	for p in "${PIDS[@]}" $SERVER; do kill "$p" 2>/dev/null || true; done
	for n in $NS; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
go build -o "$TMP/traffic" ./traffic
T="$TMP/traffic"
nsx() { local n=$1; shift; ip netns exec "$n" "$@"; }

for n in $NS; do
	ip netns add "$n"
	nsx "$n" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.all.router_solicitations=0 net.ipv6.conf.default.router_solicitations=0
	nsx "$n" ip link set lo up
done
ip link add cli0 netns wpc-cli address 02:77:00:00:01:02 type veth peer name rtr-in netns wpc-rtr address 02:77:00:00:01:01
ip link add srv0 netns wpc-srv address 02:77:00:00:02:02 type veth peer name rtr-out netns wpc-rtr address 02:77:00:00:02:01
ip link add v1 netns wpc-v1 address 02:77:00:00:00:01 type veth peer name v2 netns wpc-v2 address 02:77:00:00:00:02
nsx wpc-cli ip addr add 10.77.1.2/24 dev cli0
nsx wpc-cli ip addr add fd77:1::2/64 dev cli0 nodad
nsx wpc-rtr ip addr add 10.77.1.1/24 dev rtr-in
nsx wpc-rtr ip addr add fd77:1::1/64 dev rtr-in nodad
nsx wpc-rtr ip addr add 10.77.2.1/24 dev rtr-out
nsx wpc-rtr ip addr add fd77:2::1/64 dev rtr-out nodad
nsx wpc-srv ip addr add 10.77.2.2/24 dev srv0
nsx wpc-srv ip addr add fd77:2::2/64 dev srv0 nodad
for l in "wpc-cli cli0" "wpc-rtr rtr-in" "wpc-rtr rtr-out" "wpc-srv srv0" "wpc-v1 v1" "wpc-v2 v2"; do
	set -- $l
	nsx "$1" ip link set "$2" up
done
nsx wpc-rtr sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
nsx wpc-cli ip route add default via 10.77.1.1
nsx wpc-cli ip -6 route add default via fd77:1::1
nsx wpc-srv ip route add default via 10.77.2.1
nsx wpc-srv ip -6 route add default via fd77:2::1
sleep 2 # let link-up chatter (MLD reports) pass before the sniffers start

# Background processes run under `ip netns exec` directly (it execs the
# program), so that $! is the sniffer itself and SIGINT makes it flush.
ip netns exec wpc-cli tcpdump -q -U -i cli0 -w "$TMP/client.pcap" 2>/dev/null & PIDS+=($!)
ip netns exec wpc-srv dumpcap -q -i srv0 -w "$TMP/server-raw.pcapng" 2>/dev/null & PIDS+=($!)
ip netns exec wpc-rtr tcpdump -q -U -i any --time-stamp-precision=nano -w "$TMP/router-any.pcap" 2>/dev/null & PIDS+=($!)
ip netns exec wpc-rtr tcpdump -q -U -i any -y LINUX_SLL -c 40 -w "$TMP/router-sll1.pcap" 2>/dev/null & PIDS+=($!)
ip netns exec wpc-rtr dumpcap -q -i rtr-in -i any -w "$TMP/router-multi.pcapng" 2>/dev/null & PIDS+=($!)
ip netns exec wpc-v2 tcpdump -q -U -i v2 -w "$TMP/vlan.pcap" 2>/dev/null & PIDS+=($!)
sleep 2

ip netns exec wpc-srv "$T" server 10.77.2.2:8080 '[fd77:2::2]:8080' >/dev/null & SERVER=$!
sleep 0.5
nsx wpc-cli "$T" client 10.77.2.2:8080 '[fd77:2::2]:8080'
nsx wpc-cli "$T" ping 10.77.2.2 fd77:2::2
nsx wpc-v1 "$T" vlan v1
kill "$SERVER"
sleep 1
for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

cp "$TMP/client.pcap" "$TMP/router-sll1.pcap" "$TMP/vlan.pcap" .
editcap -t 137.25 "$TMP/server-raw.pcapng" server.pcapng
zstd -q -f -19 "$TMP/router-any.pcap" -o router-any.pcap.zst
gzip -n -9 -c "$TMP/router-multi.pcapng" > router-multi.pcapng.gz

# Expected counts, from tshark.
count() { tshark -r "$1" ${2:+-Y "$2"} 2>/dev/null | wc -l; }
# Routed: between the two subnets (not NDP with the router on one link).
routed='(ip.src==10.77.1.0/24 && ip.dst==10.77.2.0/24) || (ip.src==10.77.2.0/24 && ip.dst==10.77.1.0/24) || (ipv6.src==fd77:1::/64 && ipv6.dst==fd77:2::/64) || (ipv6.src==fd77:2::/64 && ipv6.dst==fd77:1::/64)'
rtr_in=$(nsx wpc-rtr cat /sys/class/net/rtr-in/ifindex 2>/dev/null || echo 0)
client_frames=$(count client.pcap)
server_frames=$(count server.pcapng)
routed_client=$(count client.pcap "$routed")
routed_server=$(count server.pcapng "$routed")
any_frames=$(count "$TMP/router-any.pcap")
any_routed=$(count "$TMP/router-any.pcap" "$routed")
multi_in=$(count "$TMP/router-multi.pcapng" 'frame.interface_name=="rtr-in"')
multi_any=$(count "$TMP/router-multi.pcapng" 'frame.interface_name=="any"')
multi_any_routed=$(count "$TMP/router-multi.pcapng" "frame.interface_name==\"any\" && ($routed)")
vlan_frames=$(count vlan.pcap)
vlan_qinq=$(count vlan.pcap 'ieee8021ad.id==200 && vlan.id==300')
cat > expected.txt <<EOF
# Counts computed by make.sh with tshark; see make.sh for how each file was made.
shift_ns=137250000000
client_frames=$client_frames
server_frames=$server_frames
routed_client=$routed_client
routed_server=$routed_server
any_frames=$any_frames
any_routed=$any_routed
multi_in=$multi_in
multi_any=$multi_any
multi_any_routed=$multi_any_routed
vlan_frames=$vlan_frames
vlan_qinq=$vlan_qinq
EOF
cat expected.txt
# The tests rely on these equalities (every frame both sniffers of a link
# could see was seen by both); rerun if link chatter broke one.
[ "$routed_client" = "$routed_server" ] || { echo "client and server saw different routed packets" >&2; exit 1; }
[ "$any_routed" = $((2 * routed_client)) ] || { echo "router -i any did not see every routed packet twice" >&2; exit 1; }
[ "$multi_in" = "$client_frames" ] || { echo "dumpcap on rtr-in and tcpdump on cli0 saw different frames" >&2; exit 1; }
ls -l client.pcap server.pcapng router-any.pcap.zst router-sll1.pcap router-multi.pcapng.gz vlan.pcap
