#!/usr/bin/env python3
"""The application tier of the wirepath testbed (testbed/README.md).

A threaded HTTP server (http.server.ThreadingHTTPServer: one thread per
connection, libc sockets, so the LD_PRELOAD library bin/libwpcap.so can trace
it) that serves nginx's proxied requests with *sequential* calls:

  /item/N       memcached get item:N; on a miss Redis GET item:N over the
                shared pool, then memcached set (expiring) of the value
  /cart?user=U  memcached get cart:U; on a miss Redis LRANGE cart:U and
                memcached set (expiring); then a
                DNS lookup (UDP) of pricing.svc.tb and an HTTP call to tier2
                at the address it resolved to (/price)
  /search?q=Q   DNS lookup of search.svc.tb, HTTP call to tier2 (/search)
  anything else 400 at once, no calls (the early failure)

Redis and memcached are reached over shared pools of persistent connections:
a thread borrows a connection for one command and returns it, so requests
from different threads share connections. Background threads, caused by no
request, refresh a Redis key and read a memcached key over the same pools.

Every request and background call is logged as one JSON line with what
identifies each message exactly (the connection's endpoints as this process
sees them and the call's ordinal on it) and its times (time.time_ns, the
host's CLOCK_REALTIME). Python 3 standard library only.
"""

import argparse
import hashlib
import http.client
import http.server
import json
import os
import random
import socket
import struct
import sys
import threading
import time
import urllib.parse

ARGS = None
LOG_LOCK = threading.Lock()
LOG = None
STOP = threading.Event()


def log(rec):
    line = json.dumps(rec, separators=(",", ":")) + "\n"
    with LOG_LOCK:
        LOG.write(line)


def ep(addr):
    return "%s:%d" % (addr[0], addr[1])


def key(name):
    """The cache key of name: readable in the ids variant, hashed otherwise."""
    if ARGS.variant == "ids":
        return name
    return "k" + hashlib.sha1(name.encode()).hexdigest()[:20]


class Conn:
    """One persistent TCP connection of a pool, with its call counter."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rd = self.sock.makefile("rb")
        self.local = ep(self.sock.getsockname())
        self.remote = ep(self.sock.getpeername())
        self.calls = 0  # commands sent so far: the next one's ordinal

    def close(self):
        try:
            self.rd.close()
            self.sock.close()
        except OSError:
            pass


class Pool:
    """A shared pool: FIFO, so consecutive borrowers get different
    connections; it grows to max when every connection is busy."""

    def __init__(self, host, port, size, maxsize):
        self.host, self.port, self.max = host, port, maxsize
        self.lock = threading.Condition()
        self.idle = [Conn(host, port) for _ in range(size)]
        self.n = size

    def get(self):
        with self.lock:
            while not self.idle and self.n >= self.max:
                self.lock.wait()
            if self.idle:
                return self.idle.pop(0)
            self.n += 1
        return Conn(self.host, self.port)

    def put(self, c):
        with self.lock:
            self.idle.append(c)
            self.lock.notify()


def call_rec(svc, op, k, c, ordinal, t0, t1, **extra):
    r = {"svc": svc, "op": op, "key": k, "proto": "tcp", "local": c.local,
         "remote": c.remote, "ord": ordinal, "send_ns": t0, "recv_ns": t1}
    r.update(extra)
    return r


def pooled(pool, svc, op, k, payload, reader, **extra):
    """Sends one command on a borrowed connection and reads its reply."""
    c = pool.get()
    try:
        ordinal = c.calls
        c.calls += 1
        t0 = time.time_ns()
        c.sock.sendall(payload)
        val = reader(c.rd)
        t1 = time.time_ns()
    finally:
        pool.put(c)
    return val, call_rec(svc, op, k, c, ordinal, t0, t1, **extra)


def resp_cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def resp_read(rd):
    line = rd.readline()
    if not line:
        raise IOError("redis closed the connection")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-", b":"):
        return rest.decode()
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = rd.read(n + 2)
        return data[:-2].decode()
    if t == b"*":
        return [resp_read(rd) for _ in range(int(rest))]
    raise IOError("bad RESP reply %r" % line)


def mc_get_read(rd):
    line = rd.readline()
    if line.startswith(b"VALUE"):
        n = int(line.split()[3])
        data = rd.read(n + 2)[:-2]
        if rd.readline() != b"END\r\n":
            raise IOError("bad memcached reply")
        return data.decode()
    if line == b"END\r\n":
        return None
    raise IOError("bad memcached reply %r" % line)


def mc_line_read(rd):
    return rd.readline().decode().strip()


def mc_get(k):
    return pooled(MC, "memcached", "get", k, b"get %s\r\n" % k.encode(), mc_get_read)


def mc_set(k, v, ttl):
    b = v.encode()
    payload = b"set %s 0 %d %d\r\n%s\r\n" % (k.encode(), ttl, len(b), b)
    return pooled(MC, "memcached", "set", k, payload, mc_line_read)


def dns_lookup(name):
    """One A query over a fresh UDP socket, as a stub resolver does."""
    qid = random.getrandbits(16)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\x00" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.connect((ARGS.dns, 53))
        local, remote = ep(s.getsockname()), ep(s.getpeername())
        t0 = time.time_ns()
        s.send(q)
        ans = s.recv(512)
        t1 = time.time_ns()
    finally:
        s.close()
    addr = None
    if len(ans) >= 12 and struct.unpack(">H", ans[:2])[0] == qid:
        an = struct.unpack(">H", ans[6:8])[0]
        if an and len(ans) >= 4:
            addr = socket.inet_ntoa(ans[-4:])
    rec = {"svc": "dns", "op": "A", "key": name, "proto": "udp", "local": local,
           "remote": remote, "ord": 0, "send_ns": t0, "recv_ns": t1, "qid": qid}
    return addr, rec


def tier2_call(addr, path, hdrs):
    """One HTTP call to tier2 on a fresh connection."""
    c = http.client.HTTPConnection(addr, ARGS.tier2_port, timeout=5)
    try:
        c.connect()
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local, remote = ep(c.sock.getsockname()), ep(c.sock.getpeername())
        hop = "%016x" % random.getrandbits(64)
        h = {"X-Hop-Id": hop}
        h.update(hdrs)
        t0 = time.time_ns()
        c.request("GET", path, headers=h)
        r = c.getresponse()
        r.read()
        t1 = time.time_ns()
        status = r.status
    finally:
        c.close()
    return status, {"svc": "tier2", "op": "GET", "key": path, "proto": "tcp",
                    "local": local, "remote": remote, "ord": 0, "send_ns": t0,
                    "recv_ns": t1, "hop": hop, "status": status}


def work(ms):
    time.sleep(ms / 1000.0 * (0.5 + random.random()))


def item(n, calls):
    k = key("item:%s" % n)
    v, r = mc_get(k)
    r["hit"] = v is not None
    calls.append(r)
    if v is None:
        work(0.3)
        v, r = pooled(RD, "redis", "GET", k, resp_cmd("GET", k), resp_read)
        calls.append(r)
        _, r = mc_set(k, v or "-", 2)
        calls.append(r)
    return 200, "item %s: %s\n" % (n, v)


def cart(user, calls, fwd):
    k = key("cart:%s" % user)
    v, r = mc_get(k)
    r["hit"] = v is not None
    calls.append(r)
    if v is None:
        lst, r = pooled(RD, "redis", "LRANGE", k, resp_cmd("LRANGE", k, "0", "-1"), resp_read)
        calls.append(r)
        v = ",".join(lst or [])
        _, r = mc_set(k, v or "-", 1)
        calls.append(r)
    work(0.5)
    addr, r = dns_lookup("pricing.svc.tb")
    calls.append(r)
    status, r = tier2_call(addr or ARGS.tier2, "/price?items=%d" % len(v), fwd)
    calls.append(r)
    return (200 if status == 200 else 502), "cart %s: %s\n" % (user, v)


def search(q, calls, fwd):
    addr, r = dns_lookup("search.svc.tb")
    calls.append(r)
    work(0.3)
    status, r = tier2_call(addr or ARGS.tier2, "/search?q=" + urllib.parse.quote(q), fwd)
    calls.append(r)
    return (200 if status == 200 else 502), "search %s\n" % q


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.ordinal = 0
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.local = ep(self.connection.getsockname())
        self.peer = ep(self.connection.getpeername())

    def log_message(self, *a):
        pass

    def do_GET(self):
        t_recv = time.time_ns()
        ordinal = self.ordinal
        self.ordinal += 1
        u = urllib.parse.urlsplit(self.path)
        qs = urllib.parse.parse_qs(u.query)
        fwd = {}
        rid = self.headers.get("X-Request-ID")
        tp = self.headers.get("traceparent")
        if ARGS.variant == "ids":
            if rid:
                fwd["X-Request-ID"] = rid
            if tp and len(tp) == 55:
                fwd["traceparent"] = tp[:36] + "%016x" % random.getrandbits(64) + tp[52:]
        calls = []
        try:
            parts = u.path.split("/")
            if len(parts) == 3 and parts[1] == "item" and parts[2].isdigit():
                status, body = item(parts[2], calls)
            elif u.path == "/cart" and qs.get("user", [""])[0].startswith("u"):
                status, body = cart(qs["user"][0], calls, fwd)
            elif u.path == "/search" and qs.get("q"):
                status, body = search(qs["q"][0], calls, fwd)
            else:
                status, body = 400, "bad request\n"
        except Exception as e:  # a failed call: answer 502 and log it
            status, body = 502, "error: %s\n" % e
        work(0.2)
        b = (body + "." * random.randrange(0, 200)).encode()
        head = "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n" % (
            status, "OK" if status == 200 else "ERR", len(b))
        if rid and ARGS.variant == "ids":
            head += "X-Request-ID: %s\r\n" % rid
        t_send = time.time_ns()
        self.wfile.write(head.encode() + b"\r\n" + b)
        log({"t": "req", "tid": threading.get_native_id(), "local": self.local,
             "peer": self.peer, "ord": ordinal, "recv_ns": t_recv, "send_ns": t_send,
             "hop": self.headers.get("X-Hop-Id"), "rid": rid, "path": self.path,
             "status": status, "calls": calls})


class Server(http.server.ThreadingHTTPServer):
    # listen()'s backlog is taken from the class when the server is made:
    # the default of 5 drops nginx's connections when it opens dozens at once.
    request_queue_size = 1024
    daemon_threads = True


def background(name, period, fn):
    """Runs fn every period (jittered) until STOP, logging its one call."""
    rng = random.Random(name)
    while not STOP.wait(period * (0.5 + rng.random())):
        try:
            _, r = fn()
            log({"t": "bg", "job": name, "tid": threading.get_native_id(), "calls": [r]})
        except Exception as e:
            log({"t": "bgerr", "job": name, "err": str(e)})


def main():
    global ARGS, LOG, MC, RD
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--listen", default="0.0.0.0:8080")
    p.add_argument("--memcached", default="127.0.0.1:11211")
    p.add_argument("--redis", default="127.0.0.1:6379")
    p.add_argument("--dns", default="127.0.0.1")
    p.add_argument("--tier2", default="127.0.0.1", help="tier2's address when DNS fails")
    p.add_argument("--tier2-port", type=int, default=8081)
    p.add_argument("--pool", type=int, default=3, help="connections opened per pool at start")
    p.add_argument("--pool-max", type=int, default=6)
    p.add_argument("--variant", choices=["ids", "opaque"], default="ids")
    p.add_argument("--refresh", type=float, default=0.3, help="background period, seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", required=True)
    ARGS = p.parse_args()
    random.seed(ARGS.seed)
    LOG = open(ARGS.log, "a", buffering=1)
    mh, mp = ARGS.memcached.rsplit(":", 1)
    rh, rp = ARGS.redis.rsplit(":", 1)
    # Seed the database over a connection of its own, before the pools open.
    seed = Conn(rh, int(rp))
    rng = random.Random(ARGS.seed)
    for i in range(200):
        seed.sock.sendall(resp_cmd("SET", key("item:%d" % i), "v%d-" % i + "x" * rng.randrange(1, 120)))
        resp_read(seed.rd)
    for u in range(40):
        k = key("cart:u%d" % u)
        seed.sock.sendall(resp_cmd("DEL", k))
        resp_read(seed.rd)
        seed.sock.sendall(resp_cmd("RPUSH", k, *["sku%d" % rng.randrange(1000) for _ in range(1 + u % 5)]))
        resp_read(seed.rd)
    seed.sock.sendall(resp_cmd("SET", key("config:flags"), "on"))
    resp_read(seed.rd)
    seed.close()
    MC = Pool(mh, int(mp), ARGS.pool, ARGS.pool_max)
    RD = Pool(rh, int(rp), ARGS.pool, ARGS.pool_max)
    host, port = ARGS.listen.rsplit(":", 1)
    srv = Server((host, int(port)), Handler)
    ck = key("config:flags")
    for name, period, fn in (
        ("refresh", ARGS.refresh, lambda: pooled(RD, "redis", "GET", ck, resp_cmd("GET", ck), resp_read)),
        ("flags", ARGS.refresh * 1.7, lambda: mc_get(ck)),
    ):
        threading.Thread(target=background, args=(name, period, fn), daemon=True).start()
    print("app: listening on %s" % ARGS.listen, file=sys.stderr, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    STOP.set()


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    sys.setswitchinterval(0.0005)  # threads log their times closer to their system calls
    main()
