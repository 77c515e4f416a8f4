#!/usr/bin/env python3
"""tw-ceiling.py TRUTH [--res US] [--samples N] [--seed S] [--pairs OUT.json]
[--engine RESULT.json]: how many requests of a generated trace (wirepath gen;
TRUTH is its NAME.truth.tsv) no method reading the timing alone could get
right, whatever its search: the Bayes decision between the truth and every
swap of two overlapping requests' calls (docs/accuracy.md, "What the
TraceWeaver-shaped traces allow").

At each node, every pair of requests open together (the later arrived
before the earlier replied) is scored as the truth has it and with the
calls of each set of kinds both make exchanged (each request's calls in
their send order). An assignment's likelihood is the product of the
generator's own delay laws at the node: a call `delay` after the arrival
or the previous call's return, the reply `reply` after the last return
(the configurations' defaults; serial calls only, so not media). With
--res 0 the true times are read; with --res US each message's times are
only known as the trace states them, ticks of US microseconds of each
host's clock, and the likelihood is integrated over the times the ticks
allow: each message's send uniform in its send tick, its receipt the send
plus the network delay `net`, kept when in its receive tick; one host's
sends in one tick in their true order (the trace lists them so). The
clocks' offsets are the truth's (an advantage no engine has).

A request counts as lost when some swap with another is likelier than the
truth: the Bayes decision between the two takes the swap. Swaps of three
requests and optional calls moved between requests are not scored, so the
count is a lower bound on what is lost and 1 - lost/requests an upper
bound on requests exactly right, up to the Monte Carlo noise at --res >
0 (node at 1 ms, 500 samples: 45 and 57 requests lost with seeds 1 and
2). --engine RESULT.json (wirepath assemble --format json --instances
-1) also counts, per node, the pairs the engine swapped (gave a call of
one to the other) by the Bayes log likelihood ratio of the truth over the
likeliest swap.
"""
import argparse
import collections
import itertools
import json
import math
import random

DELAY = (150.0, 50.0, 150.0)  # µs: normal mean, sd, exponential tail mean
REPLY = (200.0, 60.0, 200.0)
NET = (120.0, 30.0)


def log_exgauss(x, law):
    """Log density of a normal plus an exponential tail at x > 0."""
    mu, sd, tau = law
    if x <= 0:
        return -1e9
    lam = 1 / tau
    z = (x - mu) / sd - sd * lam
    tail = max(0.5 * math.erfc(-z / math.sqrt(2)), 1e-300)
    return math.log(lam) + lam * (mu + lam * sd * sd / 2 - x) + math.log(tail)


def read_truth(path):
    lines = open(path).readlines()
    meta = json.loads(lines[1][len('#truth '):])
    skew = {k: v / 1000 for k, v in meta['skew_ns'].items()}
    rows = [l.rstrip('\n').split('\t') for l in lines if l[0] != '#']
    ix = {h: i for i, h in enumerate(rows[0])}
    msgs, calls = [], collections.defaultdict(dict)
    for r in rows[1:]:
        msgs.append((r[ix['src_node']], r[ix['dst_node']],
                     int(r[ix['send_ts']]) / 1000, int(r[ix['recv_ts']]) / 1000,
                     int(r[ix['observed']])))
        calls[(r[ix['instance']], r[ix['call_id']])][r[ix['kind']]] = len(msgs) - 1
    return skew, msgs, calls


def requests_by_node(msgs, calls):
    """node -> [(instance, incoming CALL, its RETURN, [(kind, CALL, RETURN)])]."""
    spans, kids = {}, collections.defaultdict(list)
    for (inst, _), m in calls.items():
        c, rt = m['CALL'], m['RETURN']
        spans[(inst, msgs[c][1])] = (c, rt)
        kids[(inst, msgs[c][0])].append((msgs[c][1], c, rt))
    by = collections.defaultdict(list)
    for (inst, node), (c, rt) in spans.items():
        ch = sorted(kids.get((inst, node), []), key=lambda x: msgs[x[1]][2])
        if ch:
            by[node].append((inst, c, rt, ch))
    return by, len({k[0] for k in spans})


def score(a, e, chain):
    """Log likelihood of one request's calls at its node."""
    prev, t = a, 0.0
    for _, s, back in sorted(chain, key=lambda x: x[1]):
        if s <= prev:
            return -1e9
        t += log_exgauss(s - prev, DELAY)
        prev = back
    if e <= prev:
        return -1e9
    return t + log_exgauss(e - prev, REPLY)


def logsumexp(xs):
    m = max(xs)
    if m <= -1e8:
        return -1e9
    return m + math.log(sum(math.exp(x - m) for x in xs))


class Sampler:
    """True times of messages as their ticks allow (res 0: the true ones)."""

    def __init__(self, skew, msgs, res):
        self.skew, self.msgs, self.res = skew, msgs, res

    def tick(self, node, t):
        return math.floor((t + self.skew[node]) / self.res)

    def one(self, m):
        src, dst, s, v, _ = self.msgs[m]
        if self.res == 0:
            return s, v
        ts, tr = self.tick(src, s), self.tick(dst, v)
        lo = ts * self.res - self.skew[src]
        for _ in range(500):
            s2 = lo + random.random() * self.res
            v2 = s2 + max(1.0, random.gauss(*NET))
            if self.tick(dst, v2) == tr:
                return s2, v2
        return None

    def ordered(self, T, sends):
        """One host's sends in one tick keep their true order."""
        if self.res == 0:
            return True
        for a, b in zip(sends, sends[1:]):
            sa, sb = self.msgs[a], self.msgs[b]
            if sa[0] == sb[0] and self.tick(sa[0], sa[2]) == self.tick(sb[0], sb[2]) and T[a][0] >= T[b][0]:
                return False
        return True


def pair_llr(smp, I, J, samples):
    """Log likelihood ratio of the truth over the likeliest swap of I and J."""
    ki = {c[0]: c for c in I[3]}
    kj = {c[0]: c for c in J[3]}
    common = sorted(set(ki) & set(kj))
    subs = [s for n in range(1, len(common) + 1) for s in itertools.combinations(common, n)]
    if not subs:
        return None
    ms = sorted({I[1], I[2], J[1], J[2]} | {x for c in I[3] + J[3] for x in c[1:]})
    sends = sorted(ms, key=lambda m: (smp.msgs[m][0], smp.msgs[m][2]))
    acc = [[] for _ in range(len(subs) + 1)]
    tries = 1 if smp.res == 0 else samples * 20
    for _ in range(tries):
        T = {m: smp.one(m) for m in ms}
        if any(v is None for v in T.values()) or not smp.ordered(T, sends):
            continue

        def view(req, chain):
            return T[req[1]][1], T[req[2]][0], [(k, T[c][0], T[rt][1]) for k, c, rt in chain]
        a, e, ci = view(I, I[3])
        b, g, cj = view(J, J[3])
        acc[0].append(score(a, e, ci) + score(b, g, cj))
        for si, sub in enumerate(subs):
            _, _, xi = view(I, [kj[k] if k in sub else c for k, c in ki.items()])
            _, _, xj = view(J, [ki[k] if k in sub else c for k, c in kj.items()])
            acc[si + 1].append(score(a, e, xi) + score(b, g, xj))
        if len(acc[0]) >= samples:
            break
    if not acc[0]:
        return None
    L = [logsumexp(v) for v in acc]
    return L[0] - max(L[1:])


def engine_wrong(msgs, calls, path):
    """node -> instances the engine gave a wrong call at that node or took
    one from, and the pairs of instances one's call went to the other in."""
    inst_of, truep, node_of = {}, {}, {}
    into = collections.defaultdict(dict)
    for (inst, _), m in calls.items():
        into[inst][msgs[m['CALL']][1]] = msgs[m['CALL']][4]
    for (inst, _), m in calls.items():
        c = msgs[m['CALL']]
        inst_of[c[4]] = inst
        truep[c[4]] = into[inst].get(c[0], -1)
        node_of[c[4]] = c[0]
    engp = {}
    for q in json.load(open(path))['requests']:
        cm = {x['call']: x['msg'] for x in q['messages'] if x['kind'] == 'CALL'}
        for x in q['messages']:
            if x['kind'] == 'CALL':
                engp[x['msg']] = cm.get(x['call_parent'], -1)
    wrong, swapped = collections.defaultdict(set), collections.defaultdict(set)
    for m, p in truep.items():
        if engp.get(m) != p:
            wrong[node_of[m]].add(inst_of[m])
            if engp.get(m, -1) >= 0:
                wrong[node_of[m]].add(inst_of[engp[m]])
                swapped[node_of[m]].add(frozenset((inst_of[m], inst_of[engp[m]])))
    return wrong, swapped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('truth')
    ap.add_argument('--res', type=float, default=1000, help='tick in µs (0: true times)')
    ap.add_argument('--samples', type=int, default=200)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--pairs', help='write every pair and its log likelihood ratio here')
    ap.add_argument('--engine', help="an engine's JSON result on the trace")
    args = ap.parse_args()
    random.seed(args.seed)
    skew, msgs, calls = read_truth(args.truth)
    by, total = requests_by_node(msgs, calls)
    smp = Sampler(skew, msgs, args.res)
    wrong, swapped = engine_wrong(msgs, calls, args.engine) if args.engine else (None, None)
    lost, pairs = set(), []
    for node, reqs in sorted(by.items()):
        reqs.sort(key=lambda x: msgs[x[1]][3])
        bad, n = set(), 0
        bins = collections.Counter()
        for x, I in enumerate(reqs):
            for J in reqs[x + 1:x + 8]:
                if msgs[J[1]][3] > msgs[I[2]][2]:
                    break
                n += 1
                llr = pair_llr(smp, I, J, args.samples)
                if llr is None:
                    continue
                pairs.append((node, I[0], J[0], llr))
                if llr < 0:
                    bad |= {I[0], J[0]}
                if wrong is not None and frozenset((I[0], J[0])) in swapped[node]:
                    bins['swap likelier' if llr < 0 else 'truth by <2' if llr < 2 else 'truth by <4' if llr < 4 else 'truth by >=4'] += 1
        line = f'{node:15s} requests {len(reqs):5d}  open pairs {n:5d}  lost {len(bad):4d}'
        if wrong is not None:
            line += f'  engine: wrong {len(wrong[node]):4d}, pairs it swapped by Bayes log LR {dict(sorted(bins.items()))}'
        print(line, flush=True)
        lost |= bad
    print(f'requests lost {len(lost)} of {total}: at most {100 * (1 - len(lost) / total):.1f} % exactly right')
    if args.pairs:
        json.dump(pairs, open(args.pairs, 'w'))


if __name__ == '__main__':
    main()
