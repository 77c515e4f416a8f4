#!/usr/bin/env bash
# make demo: runs wirepath on the captures shipped in testdata/.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "wirepath demo: no pipeline stage is built yet"
bin/wirepath version
