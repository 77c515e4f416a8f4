#!/usr/bin/env bash
# make demo: runs wirepath on the captures shipped in testdata/.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "wirepath demo: no pipeline stage is built yet"
bin/wirepath version
echo
echo "== wirepath merge: three sniffers (client, server with its clock 137.25 s off, router -i any)"
bin/wirepath merge testdata/captures/client.pcap testdata/captures/server.pcapng testdata/captures/router-any.pcap.zst -o /tmp/wirepath-demo-merged.pcapng
