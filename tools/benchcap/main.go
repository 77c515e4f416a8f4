// Command benchcap generates the large three-sniffer capture set that
// scripts/bench-merge.sh merges: TCP request/response traffic between
// many clients and servers seen by a client-edge sniffer (a.pcap: pcap,
// microseconds, Ethernet), a server-edge sniffer one router further
// (b.pcapng: pcapng, nanoseconds, Linux SLL2, clock 90 s ahead, TTL one
// less) and a tcpdump -i any on that router (c.pcap: pcap, nanoseconds,
// SLL2, clock 2.5 s behind, every packet it sees twice: on the way in and
// on the way out). Each sniffer misses some packets.
//
//	go run ./tools/benchcap -n 450000 -out /tmp/wirepath-bench
package main

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/wirepath/wirepath/pcapio"
)

func main() {
	n := flag.Int("n", 450000, "distinct wire packets to generate")
	out := flag.String("out", "/tmp/wirepath-bench", "directory for a.pcap, b.pcapng and c.pcap")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	log.SetFlags(0)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := generate(*n, *out, *seed); err != nil {
		log.Fatal(err)
	}
}

// record is one frame for one sniffer, held until it can be written in
// timestamp order.
type record struct {
	ts   int64
	seq  int64
	data []byte
}

type recHeap []record

func (h recHeap) Len() int { return len(h) }
func (h recHeap) Less(i, j int) bool {
	if h[i].ts != h[j].ts {
		return h[i].ts < h[j].ts
	}
	return h[i].seq < h[j].seq
}
func (h recHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recHeap) Push(x any)   { *h = append(*h, x.(record)) }
func (h *recHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// sink writes one sniffer's records in timestamp order.
type sink struct {
	pending recHeap
	seq     int64
	write   func(ts int64, data []byte) error
	count   int
}

func (s *sink) add(ts int64, data []byte) {
	s.seq++
	heap.Push(&s.pending, record{ts, s.seq, data})
}

// flush writes every record older than before (no later record can be).
func (s *sink) flush(before int64) error {
	for len(s.pending) > 0 && s.pending[0].ts < before {
		r := heap.Pop(&s.pending).(record)
		if err := s.write(r.ts, r.data); err != nil {
			return err
		}
		s.count++
	}
	return nil
}

func pcapWriter(path string, linkType uint32, nano bool) (*bufio.Writer, *os.File, func(int64, []byte) error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	h := binary.LittleEndian.AppendUint32(nil, magic)
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 4)
	h = append(h, make([]byte, 8)...)
	h = binary.LittleEndian.AppendUint32(h, 262144)
	h = binary.LittleEndian.AppendUint32(h, linkType)
	w.Write(h)
	var rh [16]byte
	return w, f, func(ts int64, data []byte) error {
		binary.LittleEndian.PutUint32(rh[0:], uint32(ts/1e9))
		if nano {
			binary.LittleEndian.PutUint32(rh[4:], uint32(ts%1e9))
		} else {
			binary.LittleEndian.PutUint32(rh[4:], uint32(ts%1e9/1000))
		}
		binary.LittleEndian.PutUint32(rh[8:], uint32(len(data)))
		binary.LittleEndian.PutUint32(rh[12:], uint32(len(data)))
		w.Write(rh[:])
		_, err := w.Write(data)
		return err
	}, nil
}

// Clock offsets and the path delay of the three sniffers.
const (
	offB  = 90_000_000_000
	offC  = -2_500_000_000
	delay = 150_000 // ns between a's and b's capture points
)

// flow is one TCP connection between a client and a server.
type flow struct {
	client, server [4]byte
	cport          uint16
	seqC, seqS     uint32
	ipid           uint16
}

// captures is the three sniffers' output: their sinks and the writers
// and files behind them.
type captures struct {
	a, b, c *sink
	bufs    []*bufio.Writer
	nw      *pcapio.Writer
	files   []*os.File
}

// openCaptures creates a.pcap, b.pcapng and c.pcap in dir.
func openCaptures(dir string) (*captures, error) {
	cs := &captures{}
	wa, fa, writeA, err := pcapWriter(filepath.Join(dir, "a.pcap"), pcapio.LinkTypeEthernet, false)
	if err != nil {
		return nil, err
	}
	wc, fc, writeC, err := pcapWriter(filepath.Join(dir, "c.pcap"), pcapio.LinkTypeSLL2, true)
	if err != nil {
		return nil, err
	}
	fb, err := os.Create(filepath.Join(dir, "b.pcapng"))
	if err != nil {
		return nil, err
	}
	if cs.nw, err = pcapio.NewWriter(fb); err != nil {
		return nil, err
	}
	ifb, _ := cs.nw.AddInterface(pcapio.Interface{LinkType: pcapio.LinkTypeSLL2, SnapLen: 262144, Name: "any"})
	nw := cs.nw
	cs.a = &sink{write: writeA}
	cs.b = &sink{write: func(ts int64, d []byte) error { return nw.WritePacket(ifb, ts, d, len(d), nil) }}
	cs.c = &sink{write: writeC}
	cs.bufs = []*bufio.Writer{wa, wc}
	cs.files = []*os.File{fa, fb, fc}
	return cs, nil
}

// flush writes every record each sniffer captured before now (on the
// reference clock): none it has yet to receive can be older.
func (cs *captures) flush(now int64) error {
	for _, s := range []struct {
		s   *sink
		off int64
	}{{cs.a, 0}, {cs.b, offB}, {cs.c, offC}} {
		if err := s.s.flush(now + s.off - 1); err != nil {
			return err
		}
	}
	return nil
}

// close writes what is left and closes the files.
func (cs *captures) close() error {
	for _, s := range []*sink{cs.a, cs.b, cs.c} {
		if err := s.flush(1 << 62); err != nil {
			return err
		}
	}
	for _, w := range cs.bufs {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if err := cs.nw.Flush(); err != nil {
		return err
	}
	for _, f := range cs.files {
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// newFlows makes the connections packets are drawn from.
func newFlows(rng *rand.Rand) []flow {
	flows := make([]flow, 2000)
	for i := range flows {
		flows[i] = flow{
			client: [4]byte{10, 1, byte(i / 250), byte(i%250 + 1)},
			server: [4]byte{10, 2, 0, byte(i%20 + 1)},
			cport:  uint16(30000 + i),
			seqC:   rng.Uint32(),
			seqS:   rng.Uint32(),
			ipid:   uint16(rng.Uint32()),
		}
	}
	return flows
}

// packet draws the next wire packet of flow f at time now (its size and
// direction) and returns its IP bytes and whether it goes to the server.
func packet(rng *rand.Rand, f *flow, now int64, payload []byte) ([]byte, bool) {
	toServer := rng.IntN(2) == 0
	size := 0
	if rng.IntN(10) < 6 {
		size = 1 + rng.IntN(400)
		if rng.IntN(10) == 0 {
			size = 1 + rng.IntN(1460)
		}
	}
	f.ipid++
	src, dst, sport, dport, seq, ack := f.client, f.server, f.cport, uint16(80), f.seqC, f.seqS
	if !toServer {
		src, dst, sport, dport, seq, ack = f.server, f.client, 80, f.cport, f.seqS, f.seqC
	}
	off := rng.IntN(1460 - size + 1)
	ip := ipv4TCP(src, dst, f.ipid, 64, sport, dport, seq, ack, uint32(now/1e6), payload[off:off+size])
	if toServer {
		f.seqC += uint32(size)
	} else {
		f.seqS += uint32(size)
	}
	return ip, toServer
}

// capture hands one wire packet to the sniffers that see it: a (client
// edge) and b (server edge, one router further) miss one in twenty; c
// (tcpdump -i any on the router) sees four in ten, twice.
func (cs *captures) capture(rng *rand.Rand, ip []byte, toServer bool, now int64) {
	jitter := int64(rng.IntN(40_000))
	ta, tb := now, now+delay+jitter
	if !toServer {
		ta, tb = now+delay+jitter, now
	}
	tc := (ta+tb)/2 + offC
	if rng.IntN(20) != 0 {
		cs.a.add(ta, ethernet(ip))
	}
	routed := withTTL(ip, 63)
	if rng.IntN(20) != 0 {
		cs.b.add(tb+offB, sll2(routed, 2))
	}
	if rng.IntN(10) < 4 {
		in, out := ip, routed
		if !toServer {
			in, out = out, in
		}
		cs.c.add(tc, sll2(in, 3))
		cs.c.add(tc+3000, sll2(out, 4))
	}
}

func generate(n int, dir string, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 99))
	cs, err := openCaptures(dir)
	if err != nil {
		return err
	}
	flows := newFlows(rng)
	now := int64(1_700_000_000_000_000_000)
	payload := make([]byte, 1460)
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	for i := range n {
		now += 2000 + int64(rng.IntN(16000)) // ~100k packets/s
		ip, toServer := packet(rng, &flows[rng.IntN(len(flows))], now, payload)
		cs.capture(rng, ip, toServer, now)
		if i%1024 == 0 {
			if err := cs.flush(now); err != nil {
				return err
			}
		}
	}
	if err := cs.close(); err != nil {
		return err
	}
	fmt.Printf("%d wire packets; a.pcap %d, b.pcapng %d, c.pcap %d records (%d in all)\n", n, cs.a.count, cs.b.count, cs.c.count, cs.a.count+cs.b.count+cs.c.count)
	return nil
}

func ipv4TCP(src, dst [4]byte, id uint16, ttl uint8, sport, dport uint16, seq, ack, tsval uint32, payload []byte) []byte {
	b := make([]byte, 20+32+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:], id)
	b[6] = 0x40 // DF
	b[8] = ttl
	b[9] = 6
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	binary.BigEndian.PutUint16(b[10:], ipChecksum(b[:20]))
	t := b[20:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], ack)
	t[12] = 8 << 4
	t[13] = 0x18 // PSH ACK
	binary.BigEndian.PutUint16(t[14:], 502)
	copy(t[20:], []byte{1, 1, 8, 10})
	binary.BigEndian.PutUint32(t[24:], tsval)
	binary.BigEndian.PutUint32(t[28:], tsval-7)
	copy(t[32:], payload)
	return b
}

func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func withTTL(ip []byte, ttl uint8) []byte {
	c := append([]byte{}, ip...)
	c[8] = ttl
	c[10], c[11] = 0, 0
	binary.BigEndian.PutUint16(c[10:], ipChecksum(c[:20]))
	return c
}

func ethernet(ip []byte) []byte {
	f := make([]byte, 14, 14+len(ip))
	copy(f, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0})
	return append(f, ip...)
}

func sll2(ip []byte, ifindex uint32) []byte {
	f := make([]byte, 20, 20+len(ip))
	f[0], f[1] = 8, 0
	binary.BigEndian.PutUint32(f[4:], ifindex)
	f[8], f[9] = 0, 1 // ARPHRD_ETHER
	f[11] = 6
	return append(f, ip...)
}
