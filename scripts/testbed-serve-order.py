#!/usr/bin/env python3
"""testbed-serve-order.py RUN [BACKEND...]: in which order a testbed run's
backends served the part requests that waited together for their
PostgreSQL pool, against the order the requests reached the wire
(docs/accuracy.md, "The order of requests on different connections").

For each pair of part requests both waiting (the later arrived before the
earlier's query left), by the gap between their arrivals in the trace:
how many pairs, and how many the backend served the other way round (the
later arrival's query first). Requests are matched to the trace by their
X-Hop-Id (HTTP/1.1) or by tier2's logged connection and stream (gRPC),
queries by their connection and ordinal. Also the delay from a request's
arrival on the wire to its handler's start (the backend's log).
"""
import collections
import json
import sys

BINS = [50, 100, 200, 400, 800, 1600, float('inf')]  # µs


def backend(run, be):
    calls, bystream, pgsend = {}, {}, {}
    for line in open(run + '/trace.tsv'):
        if line[0] == '#':
            continue
        f = line.rstrip('\n').split('\t')
        if f[4] == 'tier2' and f[5] == be and f[7] == 'CALL':
            hop = [x for x in f[12].split(',') if x.startswith('header:x-hop-id:')]
            if hop:
                calls[hop[0].split(':')[2]] = int(f[1])
            elif f[12] != '-':
                bystream[(f[2], f[12])] = int(f[1])
        if f[4] == be and f[5] == 'db' and f[7] == 'CALL':
            pgsend[(f[2], int(f[11]))] = int(f[0])
    for line in open(run + '/logs/tier2.jsonl'):
        for c in json.loads(line).get('calls') or []:
            w = bystream.get((c['local'], str(c.get('stream'))))
            if w:
                calls[c['hop']] = w
    recs = []
    for line in open(run + '/logs/%s.jsonl' % be):
        d = json.loads(line)
        if d.get('t') != 'req' or not d['calls'] or d['hop'] not in calls:
            continue
        c = d['calls'][0]
        # the trace counts a connection's messages from 1, the log from 0
        q = pgsend.get((c['local'], c['ord'] + 1))
        if q:
            recs.append((calls[d['hop']], q, d['recv_ns']))
    recs.sort()
    lag = sorted((h - w) / 1e3 for w, _, h in recs)
    n = len(recs)
    print('%s %s: %d part requests; handler start after the wire, µs, 5/25/50/75/95 %%: %s' % (
        run, be, n, ' '.join('%.0f' % lag[int(n * p)] for p in (.05, .25, .5, .75, .95))))
    pairs, swapped = collections.Counter(), collections.Counter()
    for i in range(n):
        for j in range(i + 1, n):
            if recs[j][0] > recs[i][1]:
                break
            if recs[j][0] > recs[j][1]:
                continue
            g = (recs[j][0] - recs[i][0]) / 1e3
            b = next(k for k, x in enumerate(BINS) if g < x)
            pairs[b] += 1
            if recs[j][1] < recs[i][1]:
                swapped[b] += 1
    lo = 0
    for k, x in enumerate(BINS):
        print('  gap %s–%s µs: %d pairs waiting together, %d served the other way round' % (lo, x, pairs[k], swapped[k]))
        lo = x


def main():
    run = sys.argv[1]
    for be in sys.argv[2:] or ['b1', 'b2', 'b3']:
        backend(run, be)


if __name__ == '__main__':
    main()
