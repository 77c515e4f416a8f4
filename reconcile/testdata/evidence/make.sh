#!/usr/bin/env bash
# make.sh runs the evidence test system in network namespaces and writes the
# capture, nginx's syscall traces and the ground truth that
# reconcile/evidence_system_test.go checks. Run it as root from anywhere:
#
#     reconcile/testdata/evidence/make.sh [OUTDIR]
#
# (OUTDIR defaults to this directory.) Needs: ip (iproute2), nginx, curl,
# tcpdump, gcc and make (for the LD_PRELOAD library).
#
# The system (every box a network namespace, one bridge between them):
#
#   client 10.40.0.2 (curl) ──► web 10.40.0.10:80 (nginx, traced) ──► app 10.40.0.20:8080 (nginx)
#                                  an upstream pool of keep-alive connections
#
# Each request carries X-Request-ID and traceparent, which nginx passes on
# to the app, and secrets that must never reach a trace: an Authorization
# header, a cookie, and for the POST a form body with a password. The app
# answers /item/N with JSON and /login with "ok".
#
# The sniffer: tcpdump -i eth0 on the web host (both of its connections).
# truth.txt: one line per request: "req N METHOD PATH TRACE_ID X_REQUEST_ID
# SECRET", then "secret S" for every secret sent.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$here}
P=wpev$$
work=$(mktemp -d /tmp/wpev.XXXXXX)
chmod 755 "$work"
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 0.3
	for ns in sw client web app; do ip netns del $P-$ns 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

inns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@"; }
bgns() { local ns=$1; shift; ip netns exec "$P-$ns" "$@" & pids+=($!); }

echo "building"
make -s -C "$root" preload
lib=$root/bin/libwpcap.so

echo "creating namespaces"
for ns in sw client web app; do
	ip netns add $P-$ns
	inns $ns ip link set lo up
done
inns sw ip link add br0 type bridge
inns sw ip link set br0 up
port() { # ns addr bridge-port
	ip link add eth0 netns $P-$1 type veth peer name $3 netns $P-sw
	inns $1 ip addr add $2 dev eth0
	inns $1 ip link set eth0 up
	inns sw ip link set $3 master br0
	inns sw ip link set $3 up
}
port client 10.40.0.2/24 pc
port web 10.40.0.10/24 pw
port app 10.40.0.20/24 pa

mkdir -p "$work/traces" "$work/web" "$work/app"
cat >"$work/web/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $work/web/nginx.pid;
error_log $work/web/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $work/web;
	proxy_temp_path $work/web;
	upstream app { server 10.40.0.20:8080; keepalive 4; }
	server {
		listen 10.40.0.10:80;
		location / {
			proxy_pass http://app;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
EOF
cat >"$work/app/nginx.conf" <<EOF
daemon off;
master_process off;
pid $work/app/nginx.pid;
error_log $work/app/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $work/app;
	server {
		listen 10.40.0.20:8080;
		location /item/ { default_type application/json; return 200 '{"item":"\$uri","for":"\$http_x_request_id"}'; }
		location /login { default_type text/plain; return 200 'ok'; }
	}
}
EOF

echo "starting sniffer and services"
# --immediate-mode: without it the packets of tcpdump's last unfinished
# ring block are lost when it is stopped.
bgns web tcpdump -q --immediate-mode -i eth0 -w "$work/http.pcap"
tcpd=$!
sleep 1.5
bgns app nginx -c "$work/app/nginx.conf" -e "$work/app/error.log"
bgns web env LD_PRELOAD=$lib WIREPATH_PRELOAD_DIR=$work/traces WIREPATH_PRELOAD_HOST=web nginx -c "$work/web/nginx.conf" -e "$work/web/error.log"
webpid=$!
sleep 1

echo "driving requests"
: >"$work/truth.txt"
n=0
request() { # method path [body]
	n=$((n + 1))
	local tid rid secret
	tid=$(printf '%08x%08x%08x%08x' $((RANDOM * 65536 + RANDOM + 1)) $((RANDOM * 65536 + RANDOM)) $((RANDOM * 65536 + RANDOM)) $n)
	rid=req-$n-$(printf '%04x%04x' $RANDOM $RANDOM)
	secret=SECRET$n$(printf '%04x%04x' $RANDOM $RANDOM)
	local args=(-s --http1.1 -o /dev/null -X "$1"
		-H "X-Request-ID: $rid"
		-H "traceparent: 00-$tid-$(printf '%016x' $((n * 7919)))-01"
		-H "Authorization: Bearer $secret"
		-H "Cookie: session=$secret")
	[ $# -ge 3 ] && args+=(--data "$3")
	inns client curl "${args[@]}" "http://10.40.0.10$2"
	echo "req $n $1 $2 $tid $rid $secret" >>"$work/truth.txt"
	echo "secret $secret" >>"$work/truth.txt"
	sleep 0.05
}
for i in 1 2 3 4 5; do request GET "/item/$((i * 11))"; done
request POST /login "user=alice&password=hunter2pass"
echo "secret hunter2pass" >>"$work/truth.txt"
request GET "/item/77?color=red"
sleep 0.5
kill -QUIT $webpid
wait $webpid 2>/dev/null || true
sleep 1
kill -INT $tcpd
wait $tcpd 2>/dev/null || true

echo "writing $out"
mkdir -p "$out/traces"
rm -f "$out"/traces/*.jsonl
cp "$work/http.pcap" "$work/truth.txt" "$out/"
cp "$work"/traces/*.jsonl "$out/traces/"
chmod 644 "$out"/http.pcap "$out"/truth.txt "$out"/traces/*
ls -l "$out" "$out/traces"
cat "$out/truth.txt"
