#!/usr/bin/env bash
# make demo: runs wirepath analyze on the captures of the demo system shipped
# in testdata/demo (recorded by testdata/demo/make.sh) and writes the HTML
# report. Needs only bin/wirepath (make builds it): no root, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=testdata/demo
out=${DEMO_OUT:-bin/demo}
mkdir -p "$out"
captures=("$demo/outside.pcapng" "$demo/inside.pcapng.gz" "$demo/lb-any.pcap.gz")
flags=(--roles "$demo/roles.txt" --no-aggregate-clients)

cat <<'EOF'
wirepath demo: 150 HTTP requests through a small web system, seen only by sniffers.

  client ─► load balancer (NAT) ─► web1|web2 (nginx) ─► app (Go) ─► redis
                                                                 └─► auth (answers after 20 ms)

  Captures: outside.pcapng (the balancer's outside port), inside.pcapng.gz (its
  inside ports, clock +83.25 s off) and lb-any.pcap.gz (tcpdump -i any on the
  balancer, clock -12.5 s off). testdata/demo/roles.txt names the hosts.

$ wirepath analyze outside.pcapng inside.pcapng.gz lb-any.pcap.gz --roles roles.txt --no-aggregate-clients --top 5
EOF
bin/wirepath analyze "${captures[@]}" "${flags[@]}" --top 5
bin/wirepath analyze "${captures[@]}" "${flags[@]}" -q --histograms --format html \
	--title "wirepath demo: the captures of testdata/demo" -o "$out/report.html" --pcap-out "$out/merged.pcapng"
cat <<EOF

How to read it: first the three request types of the demo system (from
the HTTP labels in the captures) with their counts and latencies, and
where each type's time goes (per node and network hop). Then the
patterns, grouped by request type: a pattern is a tree of messages (a
hop's parent is the message whose arrival caused it), counted over the
requests that took it;
"at sender" is the time the sender spent before sending (in #3, auth, which
waits 20 ms before it answers, took 24.7 ms on the recording machine),
"network" the time on the wire. /item requests go web → app → redis, /cart
ones also call auth, static files stay at nginx. The assembly engine (the
default on such traffic) builds each request's tree and says how sure it
is ("confidence": timing alone cannot always tell whose Redis call is
whose when requests overlap at app). All 150 requests get the right kind
of path, the two calls that came late included (web2's first forward,
1.9 ms after its request; a Redis GET 63 ms after its /item request:
"0 background trees" in the accounting). Then: the
sniffers' clock offsets found, the NAT the balancer did (undone before
the engines ran) and every stage's accounting.

HTML report (request types, where the time goes, service map, a waterfall of a
typical and a slow request per type, the slowest requests with the Wireshark
filter of their frames in $out/merged.pcapng, then every pattern, searchable):
  $out/report.html
More: wirepath analyze --help (--engine all compares the engines side by side), docs/analyze.md
EOF

# Back to the packets: every request with its latency and the Wireshark
# filter of its frames in the merged capture (docs/report.md#requests).
bin/wirepath analyze "${captures[@]}" "${flags[@]}" -q --instances -1 --format json -o "$out/result.json" \
	--save-trace "$out/trace.tsv" --pcap-out "$out/merged.pcapng"
cat <<'EOF'

The slowest /cart requests, and the frames of each in the merged capture:
$ wirepath analyze ... --instances -1 --format json -o result.json --save-trace trace.tsv --pcap-out merged.pcapng
$ wirepath requests result.json --trace trace.tsv --pcap merged.pcapng --label '^GET /cart' --slowest --limit 3
EOF
bin/wirepath requests -q "$out/result.json" --trace "$out/trace.tsv" --pcap "$out/merged.pcapng" --label '^GET /cart' --slowest --limit 3
cat <<EOF

Open $out/merged.pcapng in Wireshark and paste a filter into its display
filter bar (or: tshark -r $out/merged.pcapng -Y 'FILTER'). The requests as
OpenTelemetry traces, a CLIENT and a SERVER span per call, for Jaeger:
  wirepath report $out/result.json --trace $out/trace.tsv --format otlp -o traces.json
  (or --otlp-endpoint http://localhost:4318 to send them)
EOF
