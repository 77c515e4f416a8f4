#!/usr/bin/env python3
"""Writes the crafted captures and traces of scripts/hostile.sh into DIR.

Each file is one hostile-input case of issue 13's audit, reconstructed:
broken pcap and pcapng headers and blocks, records that claim huge
lengths, timestamps that overflow, floods of identical frames, deep VLAN
stacks, DNS compression loops, huge trace lines. Usage: hostile-gen.py DIR
"""
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def pcap_header(snap=65535, link=1, magic=0xA1B2C3D4, major=2):
    return struct.pack("<IHHiIII", magic, major, 4, 0, 0, snap, link)


def record(data, ts=1_700_000_000, usec=0, caplen=None, origlen=None):
    caplen = len(data) if caplen is None else caplen
    origlen = len(data) if origlen is None else origlen
    return struct.pack("<IIII", ts, usec, caplen, origlen) + data


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4(proto, payload, src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", total=None, ident=1, frag=0):
    total = 20 + len(payload) if total is None else total
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, frag, 64, proto, 0, src, dst)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def tcp(sport, dport, seq, flags, data=b"", ack=0):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0) + data


def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def eth(payload, ethertype=0x0800):
    return b"\x00\x01\x02\x03\x04\x05\x00\x01\x02\x03\x04\x06" + struct.pack("!H", ethertype) + payload


def syn_frame(i):
    return eth(ipv4(6, tcp(1024 + i % 60000, 80, i * 7919, 0x02)))


def pcapng_block(btype, body, total=None, trail=None):
    n = 12 + len(body)
    pad = (-len(body)) % 4
    n += pad
    total = n if total is None else total
    trail = total if trail is None else trail
    return struct.pack("<II", btype, total) + body + b"\0" * pad + struct.pack("<I", trail)


def shb():
    return pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(link=1, snap=65535, options=b""):
    return pcapng_block(1, struct.pack("<HHI", link, 0, snap) + options)


def epb(data, iface=0, ts=1_700_000_000_000_000, caplen=None):
    caplen = len(data) if caplen is None else caplen
    pad = (-len(data)) % 4
    body = struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, caplen, len(data)) + data + b"\0" * pad
    return pcapng_block(6, body)


good = syn_frame(1)

# pcap: headers and records
write("pcap-bad-magic.pcap", b"\xde\xad\xbe\xef" + pcap_header()[4:] + record(good))
write("pcap-version-99.pcap", pcap_header(major=99) + record(good))
write("pcap-snap-4g.pcap", pcap_header(snap=0xFFFFFFFF) + record(good))
write("pcap-snap-0.pcap", pcap_header(snap=0) + record(good))
write("pcap-caplen-4g.pcap", pcap_header() + record(good, caplen=0xFFFFFFFF))
write("pcap-caplen-2g-short.pcap", pcap_header(snap=0x7FFFFFFF) + record(good, caplen=0x7FFFFFFF))
write("pcap-caplen-over-snap.pcap", pcap_header(snap=64) + record(good + b"\0" * 100))
write("pcap-caplen-over-orig.pcap", pcap_header() + record(good, origlen=10))
write("pcap-zero-records.pcap", pcap_header() + record(b"") * 10000)
write("pcap-unknown-link.pcap", pcap_header(link=147) + record(good))
write("pcap-usec-overflow.pcap", pcap_header() + record(good, usec=4_000_000_000))
write("pcap-header-only.pcap", pcap_header())
write("pcap-garbage-frames.pcap", pcap_header() + b"".join(record(bytes((i * 37 + j) & 0xFF for j in range(i % 200))) for i in range(2000)))
big = eth(ipv4(6, tcp(1000, 80, 1, 0x18, b"x" * (8 << 20)), total=0xFFFF))
write("pcap-8mb-record.pcap", pcap_header(snap=16 << 20) + record(big))
write("pcap-snap-32m-300k-record.pcap", pcap_header(snap=32 << 20) + record(big[:300000]))
write("pcap-forged-total-length.pcap", pcap_header() + record(eth(ipv4(6, tcp(1000, 80, 1, 0x18, b"GET / HTTP/1.1\r\n\r\n"), total=65535))))
# floods: identical frames with one timestamp, SYN flood, fragments, teardrop
write("pcap-identical-flood.pcap", pcap_header() + record(eth(ipv4(17, udp(53, 53, b"same")))) * 200000)
write("pcap-syn-flood.pcap", pcap_header() + b"".join(record(syn_frame(i), usec=i % 1000000) for i in range(100000)))
frags = b"".join(record(eth(ipv4(17, b"A" * 64, ident=i, frag=0x2000 | (i % 100)))) for i in range(50000))
write("pcap-fragment-flood.pcap", pcap_header() + frags)
tear = record(eth(ipv4(17, udp(1, 2, b"B" * 40), ident=7, frag=0x2000))) + record(eth(ipv4(17, b"C" * 40, ident=7, frag=1)))
write("pcap-teardrop.pcap", pcap_header() + tear * 1000)
# deep stacks and loops
vlan = b"".join(struct.pack("!HH", 0x8100, 1) for _ in range(2000))
write("pcap-deep-vlan.pcap", pcap_header() + record(b"\x00" * 12 + vlan + b"\x08\x00" + ipv4(6, tcp(1, 2, 3, 2))))
v6 = b"\x60\0\0\0" + struct.pack("!HBB", 8 * 500, 0, 64) + b"\0" * 32  # hop-by-hop chain
v6 += b"".join(b"\0\0" + b"\0" * 6 for _ in range(500))
write("pcap-deep-ipv6.pcap", pcap_header() + record(eth(v6, 0x86DD)))
dns = struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c" + b"\x00\x01\x00\x01"
write("pcap-dns-loop.pcap", pcap_header() + record(eth(ipv4(17, udp(5353, 53, dns)))) * 100)
write("pcap-retransmit-100mb.pcap", pcap_header() + record(eth(ipv4(6, tcp(1000, 80, 5, 0x18, b"R" * 1400)))) * 70000)

# pcapng: blocks
write("ng-block-len-0.pcapng", shb() + idb() + struct.pack("<II", 6, 0) + b"\0" * 40)
write("ng-block-len-12.pcapng", shb() + idb() + pcapng_block(6, b"", total=12))
write("ng-block-len-huge.pcapng", shb() + idb() + struct.pack("<II", 6, 0xFFFFFFF0) + b"\0" * 64)
write("ng-block-len-odd.pcapng", shb() + idb() + pcapng_block(6, b"\0" * 24, total=37))
write("ng-trailer-mismatch.pcapng", shb() + idb() + pcapng_block(6, b"\0" * 20 + good, trail=12345))
write("ng-bad-bom.pcapng", pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x12345678, 1, 0, -1)) + idb() + epb(good))
write("ng-no-idb.pcapng", shb() + epb(good))
write("ng-iface-5.pcapng", shb() + idb() + epb(good, iface=5))
tsresol = struct.pack("<HHB3x", 9, 1, 0x7F) + struct.pack("<HH", 0, 0)
write("ng-tsresol-overflow.pcapng", shb() + idb(options=tsresol) + epb(good, ts=(1 << 63) + 12345))
write("ng-ts-overflow.pcapng", shb() + idb() + epb(good, ts=0xFFFFFFFFFFFFFFFF))
write("ng-unknown-block.pcapng", shb() + idb() + pcapng_block(0x0BAD, b"\0" * 16) + epb(good))
write("ng-two-sections.pcapng", shb() + idb() + epb(good) + shb() + idb(link=101) + epb(good[14:]))
write("ng-epb-caplen-huge.pcapng", shb() + idb() + epb(good, caplen=0xFFFFFF00))
write("ng-option-len-huge.pcapng", shb() + idb(options=struct.pack("<HH", 2, 0xFFFF) + b"abcd") + epb(good))
write("ng-10k-idbs.pcapng", shb() + idb() * 10000 + epb(good, iface=9999))

# traces and results
write("trace-huge-line.tsv", b"# wirepath-trace v2\n" + b"A" * (20 << 20) + b"\n")
write("trace-binary.tsv", bytes(range(256)) * 4096)
write("result-garbage.json", b'{"version": 2, "engine": "nesting", "patterns": [' + b"[" * 100000 + b"]" * 100000 + b"]}")
write("roles-huge.txt", b"10.0.0.1 " + b"n" * (8 << 20) + b"\n")
