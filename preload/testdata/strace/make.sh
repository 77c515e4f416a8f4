#!/usr/bin/env bash
# Regenerates the strace fixtures of the strace converter's tests: runs the
# test programs of ../progs (and curl against the HTTP one) under
# `strace -f -ttt -yy` and keeps their output. Needs gcc, strace, curl.
# Run from anywhere; writes next to this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in httpsrv udpx unixsock nonblock; do
	gcc -Wall -Wextra -O2 -o "$tmp/$p" "$here/../progs/$p.c"
done
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }

# UDP echo, 3 datagrams each way (sendto, sendmsg, recvfrom, recvmsg).
strace -f -ttt -yy -o "$here/udp.strace" "$tmp/udpx" "$(port)" 3 >"$here/udp.out"

# HTTP: the forking server and curl, each under its own strace.
p=$(port)
strace -f -ttt -yy -o "$here/httpsrv.strace" "$tmp/httpsrv" "$p" 1 5000 >"$here/httpsrv.out" &
srv=$!
for _ in $(seq 100); do grep -q listening "$here/httpsrv.out" 2>/dev/null && break; sleep 0.05; done
strace -f -ttt -yy -o "$here/curl.strace" curl -s -o /dev/null -w '%{size_request} %{size_header} %{size_download} %{local_port}\n' "http://127.0.0.1:$p/" >"$here/curl.out"
wait $srv

# UNIX sockets: socketpair across fork and a path socket.
strace -f -ttt -yy -o "$here/unix.strace" "$tmp/unixsock" "$tmp/u.sock" >"$here/unix.out"

# Non-blocking sends with EAGAIN and partial writes (200 kB).
strace -f -ttt -yy -o "$here/nonblock.strace" "$tmp/nonblock" "$(port)" 200000 >"$here/nonblock.out"

echo "fixtures written to $here"
