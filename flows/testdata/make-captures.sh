#!/bin/sh
# Makes the real loopback captures the flows tests read, with their ground
# truth, in a network namespace of its own (so no other traffic gets in).
# Needs root, tcpdump, dumpcap (wireshark-common), curl and Go. Run from
# anywhere:  sudo flows/testdata/make-captures.sh [OUTDIR]
# (OUTDIR defaults to this directory; the tests pass a temporary one to
# check a fresh capture made on the machine they run on.)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
ns=wpflows-cap-$$
bin=$(mktemp -d)
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -rf "$bin"; }
trap cleanup EXIT
(cd "$here/capture" && go build -o "$bin/capture" .)
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up mtu 1500
# Segments of at most one MTU, as on a real LAN (no offload super-packets).
ip netns exec "$ns" ip link set lo gso_max_size 1500 2>/dev/null || true
ip netns exec "$ns" "$bin/capture" -out "$out"
chmod 644 "$out"/loopback*
ls -l "$out"/loopback*
