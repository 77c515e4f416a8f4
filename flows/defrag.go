package flows

import (
	"encoding/binary"
	"net/netip"

	"github.com/wirepath/wirepath/pcapio"
)

// maxDatagram is the largest IP datagram a fragment offset can describe.
const maxDatagram = 65535

// maxFragsPerDatagram bounds the fragments of one datagram (duplicates
// included) so that a flood of tiny overlapping fragments stays cheap.
const maxFragsPerDatagram = 1024

// fragKey names one fragmented datagram (RFC 791: source, destination,
// protocol and identification; the same for IPv6's fragment header).
type fragKey struct {
	src, dst netip.Addr
	id       uint32
	proto    uint8
}

// ival is the half-open byte range [lo, hi) of a datagram.
type ival struct{ lo, hi int }

// ivals is a sorted set of disjoint, non-adjacent ranges.
type ivals []ival

// add inserts [lo, hi) and returns the set.
func (s ivals) add(lo, hi int) ivals {
	if lo >= hi {
		return s
	}
	i := 0
	for i < len(s) && s[i].hi < lo {
		i++
	}
	j := i
	for j < len(s) && s[j].lo <= hi {
		lo, hi = min(lo, s[j].lo), max(hi, s[j].hi)
		j++
	}
	if i == j {
		s = append(s, ival{})
		copy(s[i+1:], s[i:])
	} else {
		s = append(s[:i+1], s[j:]...)
	}
	s[i] = ival{lo, hi}
	return s
}

// covers reports whether s holds all of [0, n).
func (s ivals) covers(n int) bool { return len(s) == 1 && s[0].lo == 0 && s[0].hi >= n }

// prefix returns how many bytes from 0 s holds without a hole.
func (s ivals) prefix() int {
	if len(s) == 0 || s[0].lo != 0 {
		return 0
	}
	return s[0].hi
}

// dgram is a datagram being reassembled from fragments.
type dgram struct {
	key   fragKey
	start int64 // stage time of its first fragment
	data  []byte
	have  ivals // bytes received (wire)
	capt  ivals // bytes whose content was captured
	total int   // datagram payload length, -1 until the last fragment
	frags int
	obs   []segObs
	next  *dgram // age order, oldest first
	prev  *dgram
}

// defragmenter reassembles IPv4 and IPv6 fragments. It works on pcapio's
// decoded packets (so gopacket's ip4defrag, which takes *layers.IPv4,
// does not fit), keeps the first copy of overlapping bytes, counts
// conflicting overlaps, and bounds memory by time and total bytes.
type defragmenter struct {
	cfg          *Config
	m            map[fragKey]*dgram
	oldest       *dgram
	newest       *dgram
	bytes        int
	pendingFrags int64
	free         []*dgram
	done         *dgram // the datagram last returned, until release
}

func (f *defragmenter) init(cfg *Config) {
	f.cfg = cfg
	f.m = make(map[fragKey]*dgram)
}

// add takes one fragment. When it completes a datagram, add fills pk with
// the datagram's transport view and returns it (valid until release);
// otherwise it returns nil.
func (f *defragmenter) add(p *pcapio.Packet, obs []segObs, now int64, st *Stats, pk *pkt) *pkt {
	off := int(p.FragOffset)
	content, n, ok := fragmentContent(p)
	if !ok || off+n > maxDatagram || (p.MoreFragments && (n%8 != 0 || n == 0)) {
		st.FragDroppedBad++
		return nil
	}
	d := f.dgramOf(fragKey{src: p.Src, dst: p.Dst, id: p.IPID, proto: p.Proto}, now, st)
	end := off + n
	if !f.accept(d, end, p.MoreFragments, st) {
		return nil
	}
	d.frags++
	f.pendingFrags++
	if len(d.data) < end {
		f.bytes += end - len(d.data)
		d.data = append(d.data, make([]byte, end-len(d.data))...)
	}
	if d.write(off, content) {
		st.FragConflicts++
	}
	d.capt = d.capt.add(off, off+len(content))
	d.have = d.have.add(off, end)
	d.mergeObs(obs)
	if d.total < 0 || !d.have.covers(d.total) {
		return nil
	}
	return f.complete(d, st, pk)
}

// dgramOf returns the datagram of key, starting one (after dropping the
// oldest while the byte budget is exceeded) if it is new.
func (f *defragmenter) dgramOf(key fragKey, now int64, st *Stats) *dgram {
	if d := f.m[key]; d != nil {
		return d
	}
	for f.bytes+maxDatagram > f.cfg.MaxFragBytes && f.oldest != nil {
		f.drop(f.oldest, &st.FragDroppedLimit)
	}
	return f.newDgram(key, now)
}

// accept checks a fragment ending at end (the last one unless more)
// against d's fragment count and length, which the last fragment sets. A
// fragment that contradicts them drops d, and counts as bad itself.
func (f *defragmenter) accept(d *dgram, end int, more bool, st *Stats) bool {
	bad := d.frags >= maxFragsPerDatagram
	if !bad && !more {
		if bad = d.total >= 0 && d.total != end; !bad {
			d.total = end
		}
	}
	if bad = bad || d.total >= 0 && end > d.total; bad {
		f.drop(d, &st.FragDroppedBad)
		st.FragDroppedBad++
	}
	return !bad
}

// write copies the captured content of a fragment at off into d; the
// first copy of a byte wins. It reports whether content disagrees with
// bytes captured before.
func (d *dgram) write(off int, content []byte) bool {
	conflict := false
	pos := off
	for _, iv := range d.capt {
		if iv.hi <= off || iv.lo >= off+len(content) {
			continue
		}
		lo, hi := max(iv.lo, off), min(iv.hi, off+len(content))
		if pos < lo {
			copy(d.data[pos:lo], content[pos-off:lo-off])
		}
		if string(d.data[lo:hi]) != string(content[lo-off:hi-off]) {
			conflict = true
		}
		pos = max(pos, hi)
	}
	if pos < off+len(content) {
		copy(d.data[pos:off+len(content)], content[pos-off:])
	}
	return conflict
}

// mergeObs adds a fragment's sightings to d's, one per capture point.
func (d *dgram) mergeObs(obs []segObs) {
	for _, o := range obs {
		merged := false
		for i := range d.obs {
			if d.obs[i].pt == o.pt {
				d.obs[i].first = min(d.obs[i].first, o.first)
				d.obs[i].last = max(d.obs[i].last, o.last)
				merged = true
			}
		}
		if !merged {
			d.obs = append(d.obs, o)
		}
	}
}

// complete hands over a datagram whose every byte arrived: it fills pk
// with its transport view and returns it, or nil when the datagram is not
// a TCP segment or UDP datagram with a whole header.
func (f *defragmenter) complete(d *dgram, st *Stats, pk *pkt) *pkt {
	st.FragUsed += int64(d.frags)
	f.pendingFrags -= int64(d.frags)
	st.FragDatagrams++
	f.unlink(d)
	f.done = d
	b := d.data[:min(d.capt.prefix(), d.total)]
	*pk = pkt{src: d.key.src, dst: d.key.dst, proto: d.key.proto, obs: d.obs, ts: d.obs[0].first}
	for _, o := range d.obs {
		pk.ts = min(pk.ts, o.first)
	}
	if !transportView(pk, b, d.total, st) {
		st.FragOtherDatagram++
		return nil
	}
	return pk
}

// transportView reads the ports (and for TCP the sequence numbers and
// flags) of pk, whose payload is the datagram b (total bytes on the wire),
// and counts it. It reports false when b holds no whole header of a
// protocol it knows.
func transportView(pk *pkt, b []byte, total int, st *Stats) bool {
	switch pk.proto {
	case pcapio.ProtoTCP:
		if len(b) < 20 || int(b[12]>>4)*4 < 20 || int(b[12]>>4)*4 > len(b) {
			return false
		}
		hl := int(b[12]>>4) * 4
		pk.sport, pk.dport = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
		pk.seq, pk.ack = binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
		pk.flags = b[13]
		pk.payload, pk.n = b[hl:], total-hl
		st.FragTCPDatagrams++
	case pcapio.ProtoUDP:
		if len(b) < 8 {
			return false
		}
		pk.sport, pk.dport = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
		pk.payload, pk.n = b[8:], total-8
		st.FragUDPDatagrams++
	default:
		return false
	}
	return true
}

// release frees the datagram add last returned.
func (f *defragmenter) release() {
	if f.done != nil {
		f.recycle(f.done)
		f.done = nil
	}
}

func (f *defragmenter) newDgram(key fragKey, now int64) *dgram {
	var d *dgram
	if n := len(f.free); n > 0 {
		d = f.free[n-1]
		f.free = f.free[:n-1]
		data, have, capt, obs := d.data[:0], d.have[:0], d.capt[:0], d.obs[:0]
		*d = dgram{data: data, have: have, capt: capt, obs: obs}
	} else {
		d = &dgram{}
	}
	d.key, d.start, d.total = key, now, -1
	f.m[key] = d
	d.prev = f.newest
	if f.newest != nil {
		f.newest.next = d
	} else {
		f.oldest = d
	}
	f.newest = d
	return d
}

// unlink removes d from the map and the age list.
func (f *defragmenter) unlink(d *dgram) {
	if f.m[d.key] == d {
		delete(f.m, d.key)
	}
	if d.prev != nil {
		d.prev.next = d.next
	} else if f.oldest == d {
		f.oldest = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	} else if f.newest == d {
		f.newest = d.prev
	}
	d.prev, d.next = nil, nil
	f.bytes -= len(d.data)
}

// drop discards an incomplete datagram, counting its fragments in counter.
func (f *defragmenter) drop(d *dgram, counter *int64) {
	*counter += int64(d.frags)
	f.pendingFrags -= int64(d.frags)
	f.unlink(d)
	f.recycle(d)
}

func (f *defragmenter) recycle(d *dgram) {
	if cap(d.data) <= maxDatagram+1 && len(f.free) < 256 {
		f.free = append(f.free, d)
	}
}

// expire drops datagrams older than the fragment timeout.
func (f *defragmenter) expire(now int64, st *Stats) {
	for f.oldest != nil && now-f.oldest.start > int64(f.cfg.FragTimeout) {
		f.drop(f.oldest, &st.FragDroppedTime)
	}
}

// flush drops every incomplete datagram at the end of input.
func (f *defragmenter) flush(st *Stats) {
	for f.oldest != nil {
		f.drop(f.oldest, &st.FragDroppedEOF)
	}
}

// fragmentContent returns a fragment's part of the IP payload (captured
// bytes) and its length on the wire. pcapio decodes the TCP or UDP header
// of a first fragment and leaves Payload after it; that header is taken
// back from the frame, where Payload points.
func fragmentContent(p *pcapio.Packet) ([]byte, int, bool) {
	n := max(p.PayloadLen, len(p.Payload))
	if p.FragOffset != 0 || (p.Proto != pcapio.ProtoTCP && p.Proto != pcapio.ProtoUDP) {
		return p.Payload, n, true
	}
	at, ok := offsetIn(p.Frame, p.Payload)
	if !ok {
		return nil, 0, false
	}
	hl := 8
	if p.Proto == pcapio.ProtoTCP {
		// The TCP header ends where Payload begins; find its length from
		// the data offset nibble, checked against the decoded ports and
		// sequence number.
		hl = 0
		for doff := 20; doff <= 60 && doff <= at; doff += 4 {
			h := p.Frame[at-doff : at]
			if int(h[12]>>4)*4 == doff && binary.BigEndian.Uint16(h) == p.SrcPort &&
				binary.BigEndian.Uint16(h[2:]) == p.DstPort && binary.BigEndian.Uint32(h[4:]) == p.Seq {
				hl = doff
				break
			}
		}
		if hl == 0 {
			return nil, 0, false
		}
	}
	if at < hl {
		return nil, 0, false
	}
	return p.Frame[at-hl : at+len(p.Payload)], n + hl, true
}

// offsetIn returns where sub starts within buf. An empty sub is placed at
// the end of buf's captured bytes when it points there.
func offsetIn(buf, sub []byte) (int, bool) {
	if cap(sub) == 0 || len(buf) == 0 {
		return 0, false
	}
	full := buf[:cap(buf)]
	s := sub[:1:1]
	for i := range full {
		if &full[i] == &s[0] {
			return i, i <= len(buf)
		}
	}
	return 0, false
}
