#!/usr/bin/env bash
# testbed.sh builds the wirepath testbed in network namespaces, drives load
# through it, records it with three or four sniffers and the services' own
# logs, and writes the captures and the ground truth (docs/testbed.md).
# Run as root from anywhere; every namespace and process it starts is
# removed on exit, even on failure, and traffic never leaves them.
#
#   testbed/testbed.sh OUT_DIR
#
# Settings (environment):
#   VARIANT=ids|opaque        ids: X-Request-ID/traceparent propagated and
#                             readable cache keys; opaque: neither (default ids)
#   TRACING=sniffed|preload   preload: the application runs under
#                             bin/libwpcap.so and its links to memcached and
#                             Redis are seen by no sniffer (default sniffed)
#   RPC=grpc|http             grpc: tier2 calls the backends as gRPC over one
#                             multiplexed HTTP/2 connection each; http: over
#                             HTTP/1.1 keep-alive pools (default grpc)
#   INFLIGHT=16 REQUESTS=150 DURATION=60s SEED=1
#   RATE=R                    open loop: requests arrive at R per second
#                             (Poisson) whatever the latency, each taken by the
#                             first free of INFLIGHT workers (default 64)
#   RATE_HIGH=R2 RATE_TOGGLE=DUR  the open loop's rate is R2 in the odd windows
#                             of DUR of the wall clock: one run, both loads
#   SHIM=HOST                 put the delaying forwarder tbdelay (a namespace
#                             $P-shim) between HOST's interface and the rest:
#                             client (its link to the LB), web1, web2, app,
#                             dns, tier2, b1, b2, b3, db (their bridge ports) or
#                             store (the app's private link)
#   SHIM_DELAY=DUR            one-way delay it adds each way (default 0: the
#                             base run, which pays its cost too)
#   SHIM_DIR=both|in|out      in: the delay only on frames toward HOST, out:
#                             only on those from it (default both ways)
#   SHIM_TOGGLE=DUR           the delay and rate only in alternate windows of DUR of
#                             the wall clock (Unix time / DUR odd): one run
#                             with and without it under the same machine load
#   SHIM_RATE=RATE            it serialises frames each way at RATE (10mbit)
#   SHIM_MATCH=ADDR,ADDR      it holds only frames between these two addresses
#                             (one link of a host that has several)
#   TBF=NS:DEV:RATE[,...]     a tbf qdisc (rate RATE, burst 1600 bytes) on
#                             device DEV of namespace NS (lb, client, app, ...)
#   TBBIN=DIR                 prebuilt tbload, tbtier, tbpcap, tbtruth, tbdelay (else built)
#   WIREPATH_ROOT=DIR         the repository (default: this script's parent)
#
# The system (each box a namespace $P-NAME, P=wptb<pid>):
#
#   client 198.51.100.2 ──► lb: VIP 198.51.100.100:443 (TLS; :80 for the
#                           warm-up), DNAT round robin + MASQUERADE to
#                           203.0.113.1 on the inside bridge
#     ──► web1 .11 / web2 .12 (nginx, TLS, upstream keep-alive pool)
#     ──► app .21:8080 (Python ThreadingHTTPServer, sequential calls)
#           ├─► store 192.0.2.2: memcached :11211, Redis :6379 (shared
#           │   pools; a private link app 192.0.2.1 ↔ store, off the bridge)
#           ├─► dns .31:53 (dnsmasq, UDP)
#           └─► tier2 .41:8081 (Go, parallel fan-out: gRPC over one HTTP/2
#               connection per backend) ──► b1 .51, b2 .52, b3 .53 :9000
#                 └─► db .61:5432 (PostgreSQL, a pool of 2 per backend)
#   (inside addresses 203.0.113.0/24)
#
# Sniffers (clocks and losses applied afterwards by tbpcap):
#   outside.pcapng  dumpcap on a SPAN of the LB's outside port: the reference
#   inside.pcapng   dumpcap on a SPAN of every inside bridge port: +750 ms, 40 ppm drift
#   lb-any.pcap     tcpdump -i any on the LB: -300 ms, 0.5 % of packets lost
#   app-any.pcap    tcpdump -i any on the app host (TRACING=sniffed only): +1.2 s
#   preload/        libwpcap traces of the app (TRACING=preload only)
set -euo pipefail

out=${1:?usage: testbed.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=${WIREPATH_ROOT:-$(cd "$here/.." && pwd)}
variant=${VARIANT:-ids}
tracing=${TRACING:-sniffed}
rate=${RATE:-0}
rate_high=${RATE_HIGH:-0}
rate_toggle=${RATE_TOGGLE:-0s}
inflight=${INFLIGHT:-16}
[ "$rate" = 0 ] || inflight=${INFLIGHT:-64}
requests=${REQUESTS:-150}
duration=${DURATION:-60s}
seed=${SEED:-1}
shim=${SHIM:-}
shim_delay=${SHIM_DELAY:-0}
shim_dir=${SHIM_DIR:-both}
shim_toggle=${SHIM_TOGGLE:-}
shim_rate=${SHIM_RATE:-}
shim_match=${SHIM_MATCH:-}
tbf=${TBF:-}
rpc=${RPC:-grpc}
P=wptb$$
nss=(client lb sniff web1 web2 app store dns tier2 b1 b2 b3 db)
case $shim in
'' | client | web1 | web2 | app | dns | tier2 | b1 | b2 | b3 | db | store) ;;
*) echo "testbed.sh: SHIM must be one of client web1 web2 app dns tier2 b1 b2 b3 db store" >&2; exit 2 ;;
esac
case $shim_dir in both | in | out) ;; *) echo "testbed.sh: SHIM_DIR must be both, in or out" >&2; exit 2 ;; esac
[ -z "$shim" ] || nss+=(shim)
work=$(mktemp -d /tmp/wptb.XXXXXX)
chmod 755 "$work" # nginx workers (nobody) read the static files
pids=()

case $variant in ids | opaque) ;; *) echo "testbed.sh: VARIANT must be ids or opaque" >&2; exit 2 ;; esac
case $tracing in sniffed | preload) ;; *) echo "testbed.sh: TRACING must be sniffed or preload" >&2; exit 2 ;; esac
case $rpc in grpc | http) ;; *) echo "testbed.sh: RPC must be grpc or http" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "testbed.sh: must run as root" >&2; exit 1; }
# (a program that "writes" an output to /dev/null by renaming a file over
# it leaves a regular file there, and dnsmasq then reads it as its
# configuration)
[ -c /dev/null ] || { echo "testbed.sh: /dev/null is not a character device (something replaced it)" >&2; exit 1; }
tools=(ip iptables tc nginx redis-server memcached dnsmasq tcpdump dumpcap /usr/bin/python3 curl openssl psql setpriv)
[ -z "$shim" ] || tools+=(ethtool chrt)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null || { echo "testbed.sh: $tool is missing (run make deps)" >&2; exit 1; }
done
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1)
[ -x "$pgbin/postgres" ] || { echo "testbed.sh: PostgreSQL is missing (run make deps)" >&2; exit 1; }

cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for ns in "${nss[@]}"; do ip netns del "$P-$ns" 2>/dev/null || true; done
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT INT TERM

inns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@"; }
# bgns starts a command in a namespace in the background and remembers its
# pid (ip netns exec execs the command, so the pid is the command's).
bgns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@" & pids+=($!); }
now() { date +%s%N; }

bin=${TBBIN:-}
if [ -z "$bin" ]; then
	bin=$work/bin
	(cd "$root" && for c in tbload tbtier tbpcap tbtruth tbdelay; do go build -o "$bin/$c" ./testbed/cmd/$c; done)
fi
if [ "$tracing" = preload ]; then
	[ -f "$root/bin/libwpcap.so" ] || (cd "$root" && make -s preload)
fi

mkdir -p "$out"
rm -rf "$out"/logs "$out"/preload "$out"/*.pcap "$out"/*.pcapng "$out"/truth.jsonl "$out"/keylog.txt "$out"/shim.json
mkdir -p "$out/logs"
logs=$out/logs

for ns in "${nss[@]}"; do
	ip netns add "$P-$ns"
	inns "$ns" ip link set lo up
done

# wire NAME NS_A DEV_A NS_B DEV_B joins DEV_A in NS_A and DEV_B in NS_B by
# a veth pair; for the host the shim is in front of (NAME), by two pairs
# through the shim's namespace (sa on A's side, sb on B's), offloads off
# so that every frame the forwarder copies is a real, checksummed one.
wire() {
	local name=$1 nsa=$2 deva=$3 nsb=$4 devb=$5
	if [ "$name" != "$shim" ]; then
		ip link add "$deva" netns "$P-$nsa" type veth peer name "$devb" netns "$P-$nsb"
		return
	fi
	ip link add "$deva" netns "$P-$nsa" type veth peer name sa netns "$P-shim"
	ip link add sb netns "$P-shim" type veth peer name "$devb" netns "$P-$nsb"
	for d in sa sb; do inns shim ip link set "$d" up; done
}

# offloads turns segmentation and checksum offloads off on every interface
# of the namespaces (with a shim: frames cross it as they would a wire).
offloads() {
	[ -n "$shim" ] || return 0
	for ns in "${nss[@]}"; do
		for dev in $(inns "$ns" ls /sys/class/net); do
			[ "$dev" = lo ] || inns "$ns" ethtool -K "$dev" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
		done
	done
}

# Outside link: client <-> lb.
wire client client cl0 lb out0
inns client ip addr add 198.51.100.2/24 dev cl0
inns client ip link set cl0 up
inns client ip route add default via 198.51.100.1
inns lb ip addr add 198.51.100.1/24 dev out0
inns lb ip addr add 198.51.100.100/32 dev out0
inns lb ip link set out0 up

# Inside bridge on the lb, one port per inside host.
inns lb ip link add br0 type bridge
inns lb ip addr add 203.0.113.1/24 dev br0
inns lb ip link set br0 up
hosts=(web1:203.0.113.11 web2:203.0.113.12 app:203.0.113.21 dns:203.0.113.31 tier2:203.0.113.41 b1:203.0.113.51 b2:203.0.113.52 b3:203.0.113.53 db:203.0.113.61)
for h in "${hosts[@]}"; do
	name=${h%%:*} addr=${h##*:}
	wire "$name" "$name" eth0 lb "p-$name"
	inns "$name" ip addr add "$addr/24" dev eth0
	inns "$name" ip link set eth0 up
	inns "$name" ip route add default via 203.0.113.1
	inns lb ip link set "p-$name" master br0
	inns lb ip link set "p-$name" up
done
inns lb sysctl -qw net.ipv4.ip_forward=1
if inns lb test -e /proc/sys/net/bridge/bridge-nf-call-iptables; then
	inns lb sysctl -qw net.bridge.bridge-nf-call-iptables=0
fi

# The app's private link to the store: no bridge, no SPAN.
wire store app be0 store be0
inns app ip addr add 192.0.2.1/24 dev be0
inns store ip addr add 192.0.2.2/24 dev be0
inns app ip link set be0 up
inns store ip link set be0 up

# NAT: round-robin DNAT of the VIP onto web1/web2, masquerading of clients.
for port in 80 443; do
	inns lb iptables -t nat -A PREROUTING -d 198.51.100.100 -p tcp --dport $port -m statistic --mode nth --every 2 --packet 0 -j DNAT --to-destination 203.0.113.11:$port
	inns lb iptables -t nat -A PREROUTING -d 198.51.100.100 -p tcp --dport $port -j DNAT --to-destination 203.0.113.12:$port
done
inns lb iptables -t nat -A POSTROUTING -o br0 -s 198.51.100.0/24 -j MASQUERADE

# SPAN ports (tc mirred onto a veth whose far end is in the sniffer
# namespace): outside, both directions of out0; inside, every frame entering
# the bridge and br0's egress, so each inside frame is mirrored once.
ip link add spo netns "$P-lb" type veth peer name spo-rx netns "$P-sniff"
ip link add spi netns "$P-lb" type veth peer name spi-rx netns "$P-sniff"
for d in spo spi; do inns lb ip link set $d up; inns sniff ip link set $d-rx up; done
mirror() { # dev direction target
	inns lb tc qdisc add dev "$1" clsact 2>/dev/null || true
	inns lb tc filter add dev "$1" "$2" u32 match u32 0 0 action mirred egress mirror dev "$3"
}
mirror out0 ingress spo
mirror out0 egress spo
for h in "${hosts[@]}"; do mirror "p-${h%%:*}" ingress spi; done
mirror br0 egress spi

echo "testbed: $P variant=$variant tracing=$tracing rpc=$rpc inflight=$inflight rate=$rate requests=$requests seed=$seed shim=$shim delay=$shim_delay dir=$shim_dir toggle=$shim_toggle rate=$shim_rate match=$shim_match tbf=$tbf" >&2

# The shim: the delaying forwarder between the host and the rest, at a
# real-time priority (it is the wire, not the system under test).
offloads
if [ -n "$shim" ]; then
	# sa is on the host's side: frames from -a to -b leave the host.
	dab=$shim_delay dba=$shim_delay
	[ "$shim_dir" != in ] || dab=0
	[ "$shim_dir" != out ] || dba=0
	shimargs=(-a sa -b sb -delay-ab "$dab" -delay-ba "$dba" -log "$out/shim.json")
	[ -z "$shim_rate" ] || shimargs+=(-rate-ab "$shim_rate" -rate-ba "$shim_rate")
	[ -z "$shim_match" ] || shimargs+=(-match "$shim_match")
	[ -z "$shim_toggle" ] || shimargs+=(-toggle "$shim_toggle")
	bgns shim chrt -f 20 "$bin/tbdelay" "${shimargs[@]}"
fi
# Rate limits: tbf on the devices named.
for spec in ${tbf//,/ }; do
	IFS=: read -r tns tdev trate <<<"$spec"
	inns "$tns" tc qdisc replace dev "$tdev" root tbf rate "$trate" burst 1600 latency 400ms
done

# PostgreSQL, as nobody, with a table of prices the backends look up.
mkdir -p "$work/pg"
chown nobody "$work/pg"
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$pgbin/initdb" -D "$work/pg/data" -A trust -U postgres --no-sync -E UTF8 >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; exit 1; }
echo "host all all 0.0.0.0/0 trust" >"$work/pg/data/pg_hba.conf"
bgns db sh -c "exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- '$pgbin/postgres' -D '$work/pg/data' -k '$work/pg' \
	-c listen_addresses=203.0.113.61 -c fsync=off -c shared_buffers=16MB -c max_connections=40 2>>'$work/postgres.log'"
for i in $(seq 100); do
	inns db psql -X -q -h 203.0.113.61 -U postgres -c 'SELECT 1' >/dev/null 2>&1 && break
	sleep 0.2
done
inns db psql -X -q -h 203.0.113.61 -U postgres -c "CREATE TABLE prices (k text PRIMARY KEY, price int);
	INSERT INTO prices SELECT 'p' || i, 100 + i FROM generate_series(0, 999) i;" >/dev/null

# A self-signed certificate for the web tier's TLS.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=web.tb \
	-addext subjectAltName=DNS:web.tb -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null

# Services.
bgns store memcached -l 192.0.2.2 -p 11211 -U 0 -u nobody -m 64 -t 2
bgns store redis-server --bind 192.0.2.2 --port 6379 --save '' --appendonly no --protected-mode no --daemonize no --logfile "$work/redis.log"
: >"$work/dnsmasq.conf" # an empty configuration (not /dev/null: a broken one would be read)
bgns dns dnsmasq --keep-in-foreground --conf-file="$work/dnsmasq.conf" --no-resolv --no-hosts --user=root \
	--listen-address=203.0.113.31 --bind-interfaces --port=53 --cache-size=0 \
	--address=/pricing.svc.tb/203.0.113.41 --address=/search.svc.tb/203.0.113.41 \
	--pid-file="$work/dnsmasq.pid" --log-facility="$work/dnsmasq.log"
for i in 1 2 3; do
	bgns b$i "$bin/tbtier" -mode backend -listen 203.0.113.5$i:9000 -seed $((seed * 10 + i)) -log "$logs/b$i.jsonl" \
		-variant "$variant" -pg 203.0.113.61:5432 -pgpool 2
done
bgns tier2 "$bin/tbtier" -mode front -listen 203.0.113.41:8081 -variant "$variant" -rpc "$rpc" -seed "$seed" \
	-backends 203.0.113.51:9000,203.0.113.52:9000,203.0.113.53:9000 -log "$logs/tier2.jsonl"
tiers=("${pids[@]: -4}") # b1 b2 b3 tier2
sleep 0.5
appenv=()
if [ "$tracing" = preload ]; then
	mkdir -p "$out/preload"
	appenv=(env LD_PRELOAD="$root/bin/libwpcap.so" WIREPATH_PRELOAD_DIR="$out/preload" WIREPATH_PRELOAD_HOST=app)
fi
bgns app "${appenv[@]}" /usr/bin/python3 "$here/app/app.py" --listen 203.0.113.21:8080 \
	--memcached 192.0.2.2:11211 --redis 192.0.2.2:6379 --dns 203.0.113.31 --tier2 203.0.113.41 \
	--variant "$variant" --seed "$seed" --log "$logs/app.jsonl"
for w in web1 web2; do
	addr=203.0.113.1${w#web}
	mkdir -p "$work/$w/static"
	echo "wirepath testbed logo served by $w" >"$work/$w/static/logo.txt"
	cat >"$work/$w/nginx.conf" <<CONF
worker_processes 1;
pid $work/$w/nginx.pid;
error_log $work/$w/error.log;
daemon off;
events { worker_connections 1024; }
http {
	log_format tb escape=json '{"msec":"\$msec","rid":"\$request_id","hop":"\$http_x_hop_id","remote":"\$remote_addr:\$remote_port","server":"\$server_addr:\$server_port","conn":"\$connection","conn_req":"\$connection_requests","uri":"\$request_uri","status":"\$status","upstream":"\$upstream_addr","rt":"\$request_time"}';
	access_log $logs/$w.jsonl tb;
	client_body_temp_path $work/$w;
	proxy_temp_path $work/$w;
	fastcgi_temp_path $work/$w;
	uwsgi_temp_path $work/$w;
	scgi_temp_path $work/$w;
	upstream app {
		server 203.0.113.21:8080;
		keepalive 8;
	}
	server {
		listen $addr:80;
		listen $addr:443 ssl;
		ssl_certificate $work/tls.crt;
		ssl_certificate_key $work/tls.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		keepalive_requests 10000;
		location /static/ { root $work/$w; }
		location / {
			proxy_pass http://app;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			# a per-hop nonce of nginx's own, in place of the client's
			proxy_set_header X-Hop-Id \$request_id;
		}
	}
}
CONF
	bgns "$w" nginx -c "$work/$w/nginx.conf"
done

# Wait for the app, then warm the pools up (before the capture and the logs).
for i in $(seq 100); do
	inns client curl -sf -o /dev/null --max-time 1 "http://198.51.100.100/item/1" && break
	sleep 0.2
done
for i in $(seq 6); do inns client curl -s -o /dev/null --max-time 2 "http://198.51.100.100/search?q=warm" || true; done
for f in "$logs"/*.jsonl; do : >"$f"; done
[ "$tracing" = preload ] || true

# Sniffers.
bgns sniff dumpcap -q -B 64 -i spo-rx -w "$work/outside.pcapng"
bgns sniff dumpcap -q -B 64 -i spi-rx -w "$work/inside.pcapng"
skip1=$(inns lb cat /sys/class/net/spo/ifindex) skip2=$(inns lb cat /sys/class/net/spi/ifindex)
bgns lb tcpdump -q -B 65536 -i any -w "$work/lb-any.pcap" "not ifindex $skip1 and not ifindex $skip2"
if [ "$tracing" = sniffed ]; then
	bgns app tcpdump -q -B 65536 -i any -w "$work/app-any.pcap"
fi
sniffers=("${pids[@]: -3}")
[ "$tracing" = sniffed ] && sniffers=("${pids[@]: -4}")
sleep 2 # the sniffers are capturing by now
# tier2's HTTP/2 connections and the backends' PostgreSQL pools start
# again, so that the captures see them begin (their protocols are told
# by their first bytes); the other pools stay open from the warm-up.
kill -USR1 "${tiers[@]}"
sleep 0.5
start=$(now)
sleep 0.3

echo "testbed: load: $requests requests, $inflight in flight" >&2
inns client "$bin/tbload" -target https://198.51.100.100 -keylog "$out/keylog.txt" -sni web.tb -n "$requests" -inflight "$inflight" -rate "$rate" \
	-rate-high "$rate_high" -toggle "$rate_toggle" \
	-duration "$duration" -seed "$seed" -variant "$variant" -log "$logs/client.jsonl"
# Background calls go on: the truth has every call between start and end,
# and the sniffers run from before start until well after end: libpcap
# hands over a partly filled block only on a one-second timeout, and what
# it holds when the sniffer stops is lost.
sleep 0.5
end=$(now)
sleep 1.5
kill -TERM "${sniffers[@]}"
for p in "${sniffers[@]}"; do wait "$p" 2>/dev/null || true; done
# Stop the services so that they flush their logs.
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
for w in web1 web2; do cp "$work/$w/error.log" "$out/$w-error.log" 2>/dev/null || true; done
cp "$work/dnsmasq.log" "$out/dnsmasq.log" 2>/dev/null || true

# Clocks and losses.
{
	cp "$work/outside.pcapng" "$out/outside.pcapng"
	echo '{"in":"outside.pcapng","out":"outside.pcapng","offset_ns":0,"drift_ppm":0,"loss":0}'
	"$bin/tbpcap" -offset 750ms -drift-ppm 40 -anchor "$start" "$work/inside.pcapng" "$out/inside.pcapng"
	"$bin/tbpcap" -offset -300ms -loss 0.005 -seed "$seed" "$work/lb-any.pcap" "$out/lb-any.pcap"
	if [ "$tracing" = sniffed ]; then
		"$bin/tbpcap" -offset 1200ms "$work/app-any.pcap" "$out/app-any.pcap"
	fi
} >"$out/sniffers.jsonl"

cat >"$out/testbed.json" <<JSON
{"variant":"$variant","tracing":"$tracing","rpc":"$rpc","inflight":$inflight,"rate":$rate,"rate_high":$rate_high,"rate_toggle":"$rate_toggle","requests":$requests,"seed":$seed,
 "shim":"$shim","shim_delay":"$shim_delay","shim_dir":"$shim_dir","shim_toggle":"$shim_toggle","shim_rate":"$shim_rate","shim_match":"$shim_match","tbf":"$tbf",
 "window_start_ns":$start,"window_end_ns":$end,"vip":"198.51.100.100:443",
 "tiers":{"198.51.100.2":"client","203.0.113.11":"web","203.0.113.12":"web","203.0.113.21":"app",
  "192.0.2.1":"app","192.0.2.2:11211":"memcached","192.0.2.2:6379":"redis","203.0.113.31":"dns",
  "203.0.113.41":"tier2","203.0.113.51":"backend","203.0.113.52":"backend","203.0.113.53":"backend",
  "203.0.113.61":"postgres"},
 "hosts":{"198.51.100.2":"client","203.0.113.11":"web1","203.0.113.12":"web2","203.0.113.21":"app",
  "192.0.2.1":"app","192.0.2.2":"store","203.0.113.31":"dns","203.0.113.41":"tier2",
  "203.0.113.51":"b1","203.0.113.52":"b2","203.0.113.53":"b3","203.0.113.61":"db"}}
JSON
# Host names for wirepath analyze --roles: the app has two addresses (its
# front on the bridge, its back on the store link), one host.
cat >"$out/roles.txt" <<ROLES
# testbed hosts (testbed/testbed.sh), roles-map format of docs/formats.md
198.51.100.2 client
203.0.113.11 web1
203.0.113.12 web2
203.0.113.21 app
192.0.2.1 app
192.0.2.2 store
203.0.113.31 dns
203.0.113.41 tier2
203.0.113.51 b1
203.0.113.52 b2
203.0.113.53 b3
203.0.113.61 db
ROLES
"$bin/tbtruth" -config "$out/testbed.json" -logs "$logs" -sniffers "$out/sniffers.jsonl" -o "$out/truth.jsonl"
ls -l "$out" >&2
