package pcapio

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// checkReader reads data to the end and checks what must hold for any
// input: no panic, termination, records inside the input in increasing
// offset order, captured length within the wire length, errors positioned
// inside the input. It returns the records and whether the read was clean.
func checkReader(t *testing.T, data []byte) (recs []Record, clean bool) {
	r, err := NewReader(bytes.NewReader(data), "fuzz")
	if err != nil {
		checkErrPos(t, err, data)
		return nil, false
	}
	defer r.Close()
	compressed := r.Compression() != CompressionNone
	clean = true
	last := int64(-1)
	for i := 0; ; i++ {
		if i > len(data)+10 {
			t.Fatalf("more records than bytes: the reader loops")
		}
		var rec Record
		err := r.ReadRecord(&rec)
		if err == io.EOF {
			return recs, clean
		}
		if err != nil {
			if !compressed {
				checkErrPos(t, err, data)
			}
			clean = false
			if IsFatal(err) {
				if err2 := r.ReadRecord(&rec); err2 != err {
					t.Fatalf("fatal error not sticky: %v then %v", err, err2)
				}
				return recs, false
			}
			continue
		}
		if rec.Offset <= last || !compressed && (rec.Offset < 0 || rec.Offset+int64(len(rec.Data)) > int64(len(data))) {
			t.Fatalf("record at %d (after %d) with %d bytes outside an input of %d", rec.Offset, last, len(rec.Data), len(data))
		}
		last = rec.Offset
		if len(rec.Data) > rec.WireLen || len(rec.Data) > maxRecordLen {
			t.Fatalf("record of %d bytes, wire length %d", len(rec.Data), rec.WireLen)
		}
		if rec.Interface < 0 || rec.Interface >= len(r.Interfaces()) || r.Interfaces()[rec.Interface].LinkType != rec.LinkType {
			t.Fatalf("record on interface %d of %d", rec.Interface, len(r.Interfaces()))
		}
		rec.Data = bytes.Clone(rec.Data)
		recs = append(recs, rec)
	}
}

func checkErrPos(t *testing.T, err error, data []byte) {
	t.Helper()
	pe, ok := err.(*ParseError)
	if !ok {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	if pe.Offset < 0 || pe.Offset > int64(len(data)) || pe.File != "fuzz" {
		t.Fatalf("error %v outside an input of %d bytes", err, len(data))
	}
}

func addReaderSeeds(f *testing.F) {
	ng, _ := multiSectionNg(binary.LittleEndian)
	ngBE, _ := multiSectionNg(binary.BigEndian)
	good := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, threePackets())
	f.Add(good)                                                                        // pcap, µs, little-endian
	f.Add(pcapFile(binary.BigEndian, true, LinkTypeRaw, 96, threePackets()))           // pcap, ns, big-endian, small snaplen
	f.Add(pcapFile(binary.LittleEndian, false, 4242, 65535, threePackets()))           // unknown link type
	f.Add(good[:len(good)-3])                                                          // cut last record
	f.Add(ng)                                                                          // pcapng: sections, SPB, PB, tsresol, tsoffset
	f.Add(ngBE)                                                                        // same, byte orders swapped
	f.Add(ng[:len(ng)/2])                                                              // cut inside a block
	f.Add([]byte{})                                                                    // empty
	f.Add([]byte("GET / HTTP/1.1\r\n"))                                                // not a capture
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})                               // gzip header, no data
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0})                                     // zstd magic, garbage
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0}) // SHB cut short
	for _, name := range []string{"client.pcap", "server.pcapng", "vlan.pcap"} {
		if b, err := os.ReadFile(capPath(name)); err == nil {
			f.Add(b[:min(len(b), 4096)]) // real captures' first records
		}
	}
}

// FuzzReader feeds arbitrary bytes to the reader. Besides the invariants
// of checkReader, classic pcap input that pcapgo also reads must give the
// same records as pcapgo up to where either stops.
func FuzzReader(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "testdata/captures/*.pcap*", "testdata/nat/*.pcap*", "flows/testdata/*.pcap*")
	addReaderSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _ := checkReader(t, data)
		if len(data) < 24 {
			return
		}
		m := binary.LittleEndian.Uint32(data)
		if m != magicPcapMicro && m != magicPcapNano && binary.BigEndian.Uint32(data) != magicPcapMicro && binary.BigEndian.Uint32(data) != magicPcapNano {
			return
		}
		pr, err := pcapgo.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		nano := pr.Resolution() == gopacket.TimestampResolutionNanosecond
		var order binary.ByteOrder = binary.LittleEndian
		if m != magicPcapMicro && m != magicPcapNano {
			order = binary.BigEndian
		}
		for i, rec := range recs {
			d, ci, err := pr.ReadPacketData()
			if err != nil {
				return
			}
			if !bytes.Equal(d, rec.Data) || ci.Length != rec.WireLen {
				t.Fatalf("record %d differs from pcapgo", i)
			}
			frac := order.Uint32(data[rec.Offset+4:])
			if (nano && frac < 1e9 || frac < 1e6) && ci.Timestamp.UnixNano() != rec.TS {
				// pcapgo multiplies the µs field in 32 bits and
				// normalises out-of-range fractions; compare where the
				// field is valid.
				t.Fatalf("record %d: ts %d, pcapgo %d", i, rec.TS, ci.Timestamp.UnixNano())
			}
		}
	})
}

// FuzzPcapNgBuilt builds a valid pcapng from fuzzed parameters and checks
// the reader returns exactly what was written, and agrees with pcapgo.
func FuzzPcapNgBuilt(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, d := range fuzzseed.Read(f, "testdata/captures/client.pcap") {
		f.Add(uint8(2), uint8(9), int64(0), d[:min(len(d), 300)], uint16(12), false)
	}
	f.Add(uint8(0), uint8(6), int64(0), []byte("a packet"), uint16(3), false)           // µs, one interface
	f.Add(uint8(1), uint8(9), int64(100), []byte{1, 2, 3}, uint16(7), true)             // ns, tsoffset, big-endian
	f.Add(uint8(2), uint8(0x80|20), int64(-5), []byte{}, uint16(1), false)              // 2^-20, negative offset, empty packet
	f.Add(uint8(3), uint8(3), int64(0), bytes.Repeat([]byte{9}, 300), uint16(40), true) // ms
	f.Fuzz(func(t *testing.T, nIf uint8, resol uint8, tsoff int64, payload []byte, nPkts uint16, bigEndian bool) {
		if resol&0x80 == 0 && resol > 9 || resol&0x80 != 0 && resol&0x7f > 40 || nPkts > 200 || len(payload) > 2000 {
			return
		}
		tsoff %= 1 << 30
		var order byteOrder = binary.LittleEndian
		if bigEndian {
			order = binary.BigEndian
		}
		n := &ngBuilder{order: order}
		n.shb()
		ifs := int(nIf%4) + 1
		lts := []uint16{LinkTypeEthernet, LinkTypeRaw, LinkTypeSLL2, LinkTypeNull}
		for i := range ifs {
			n.idb(lts[i], 0, "if", int(resol), tsoff)
		}
		conv, ok := newTSConv(resol, tsoff)
		if !ok {
			t.Fatalf("resolution %#x rejected", resol)
		}
		type w struct {
			ifc  int
			ts   int64
			data []byte
		}
		var want []w
		for i := range int(nPkts) {
			d := payload[:i%(len(payload)+1)]
			raw := uint64(i) * 1_000_003
			ns, ok := conv.ns(raw)
			if !ok {
				t.Skip("the timestamps overflow (TestTimestampOverflow)")
			}
			n.epb(uint32(i%ifs), raw, d, len(d)+i%3)
			want = append(want, w{i % ifs, ns, d})
		}
		data := n.bytes()
		recs, clean := checkReader(t, data)
		if !clean || len(recs) != len(want) {
			t.Fatalf("%d records (clean %v), want %d", len(recs), clean, len(want))
		}
		pr, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			if rec.Interface != want[i].ifc || rec.TS != want[i].ts || !bytes.Equal(rec.Data, want[i].data) {
				t.Fatalf("record %d: if %d ts %d, want if %d ts %d", i, rec.Interface, rec.TS, want[i].ifc, want[i].ts)
			}
			d, ci, err := pr.ReadPacketData()
			if err != nil {
				t.Fatal(err)
			}
			if resol == 0 {
				continue // pcapgo reads if_tsresol 0 as the default 6; the spec (and Wireshark) say 10^0 s
			}
			tol := int64(0)
			if resol&0x80 != 0 {
				tol = int64(1) << (resol & 0x7f) // pcapgo's integer scaling, see TestReadPcapNgAgreesWithPcapgo
			}
			if !bytes.Equal(d, rec.Data) || ci.InterfaceIndex != rec.Interface || absDiff(ci.Timestamp.UnixNano(), rec.TS) > tol {
				t.Fatalf("record %d differs from pcapgo: ts %d vs %d", i, ci.Timestamp.UnixNano(), rec.TS)
			}
		}
	})
}

// FuzzDecode decodes arbitrary frames of every supported link type. It
// must not panic, must keep Payload inside Frame, must be deterministic,
// must give the same WireKey after a router changed the TTL, and must
// agree with gopacket on addresses and ports of TCP/UDP packets gopacket
// decodes without error.
func FuzzDecode(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	addCaptureFrames(f, 64, "testdata/captures/*.pcap*", "testdata/nat/*.pcap*")
	f.Add(uint16(LinkTypeEthernet), eth(etherTypeIPv4, tcp4))                                                                   // TCP over IPv4
	f.Add(uint16(LinkTypeEthernet), eth(etherTypeIPv6, udp6, [2]uint16{etherTypeQinQ, 1}, [2]uint16{etherTypeVLAN, 2}))         // QinQ IPv6 UDP
	f.Add(uint16(LinkTypeSLL2), sll2(etherTypeIPv4, 1, tcp4))                                                                   // SLL2
	f.Add(uint16(LinkTypeLinuxSLL), sll(etherTypeIPv6, udp6))                                                                   // SLL
	f.Add(uint16(LinkTypeNull), null(binary.BigEndian, afInet6Darw, udp6))                                                      // BSD loopback
	f.Add(uint16(LinkTypeRaw), ipv6(v6{src: "::1", dst: "::2", proto: ProtoTCP, exts: []ext6{fragExt(0, true, 1)}}, tcp4[20:])) // IPv6 fragment
	f.Add(uint16(LinkTypeRaw), tcp4[:30])                                                                                       // cut TCP header
	f.Add(uint16(LinkTypeIPv4), []byte{0x4f})                                                                                   // one byte
	f.Fuzz(func(t *testing.T, lt uint16, frame []byte) {
		var p, q Packet
		wire := len(frame)
		Decode(&p, lt, frame, wire)
		Decode(&q, lt, frame, wire)
		if p.WireKey != q.WireKey || p.BodyKey != q.BodyKey || p.Status != q.Status {
			t.Fatal("decode is not deterministic")
		}
		if len(p.Obs) != 1 || len(p.Frame) != len(frame) {
			t.Fatal("bad observation or frame")
		}
		if len(p.Payload) > 0 {
			if _, ok := subsliceOffset(frame, p.Payload); !ok {
				t.Fatal("payload outside the frame")
			}
		}
		if p.Status == StatusOK && (p.PayloadLen < len(p.Payload) || p.Truncated != (len(p.Payload) < p.PayloadLen)) {
			t.Fatalf("payload %d of %d, truncated %v", len(p.Payload), p.PayloadLen, p.Truncated)
		}
		if p.Status != StatusOK {
			return
		}
		// A router decrements the TTL (and fixes the header checksum):
		// the wire key must not change.
		if p.IPVersion == 4 && !p.Truncated {
			g := bytes.Clone(frame)
			ipOff := ipHeaderOffset(&p, frame)
			if ipOff >= 0 && ipOff+12 <= len(g) {
				g[ipOff+8]--
				g[ipOff+10] ^= 0xff
				var r Packet
				Decode(&r, lt, g, wire)
				if r.WireKey != p.WireKey || r.BodyKey != p.BodyKey {
					t.Fatal("TTL or header checksum changed the keys")
				}
			}
		}
		if p.Proto != ProtoTCP && p.Proto != ProtoUDP || p.IsFragment() || p.Truncated {
			return
		}
		gp := gopacket.NewPacket(frame, layers.LinkType(lt), gopacket.DecodeOptions{NoCopy: true})
		if gp.ErrorLayer() != nil || gp.NetworkLayer() == nil || gp.TransportLayer() == nil {
			return
		}
		if _, ok := gp.NetworkLayer().(*layers.IPv6); ok && p.IPVersion == 6 {
			// gopacket stops at extension headers it does not know.
			for _, l := range gp.Layers() {
				if l.LayerType() == layers.LayerTypeIPv6Fragment {
					return
				}
			}
		}
		checkAgainstGopacket(t, &p, lt, frame)
	})
}

// ipHeaderOffset returns where the IP header starts in frame, as the
// decoder found it.
func ipHeaderOffset(p *Packet, frame []byte) int {
	q := Packet{LinkType: p.LinkType, Frame: frame, WireLen: len(frame), keyBuf: new(keyScratch)}
	d := decoder{p: &q}
	d.decode()
	return d.linkLen
}

// FuzzMerge merges two fuzzed captures: whatever they hold, every
// delivered record comes out in exactly one packet, in time order.
func FuzzMerge(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	caps := fuzzseed.Read(f, "testdata/nat/*.pcap")
	for i := range caps {
		f.Add(caps[i], caps[(i+1)%len(caps)])
	}
	ng, _ := multiSectionNg(binary.LittleEndian)
	good := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, threePackets())
	f.Add(good, ng)
	f.Add(good, good)
	f.Add(good[:50], []byte("junk"))
	dir := f.TempDir() // one per process, reused by every input
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(pa, a, 0o644)
		os.WriteFile(pb, b, 0o644)
		m, err := Open([]string{pa, pb}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		var n int64
		var obs int64
		last := int64(-1 << 63)
		for {
			p, err := m.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Stats().OutOfOrder == 0 && p.TS() < last {
				t.Fatal("out of order")
			}
			last = p.TS()
			n++
			obs += int64(len(p.Obs))
		}
		st := m.Stats()
		if st.Packets != n || st.Total.Records != obs || st.Total.Records != st.Packets+st.Duplicates {
			t.Fatalf("accounting: %d packets (%d returned), %d records, %d observations, %d duplicates", st.Packets, n, st.Total.Records, obs, st.Duplicates)
		}
	})
}

// addCaptureFrames adds the first n records of each capture matching the
// patterns (relative to the module root) as (link type, frame) seeds.
func addCaptureFrames(f *testing.F, n int, patterns ...string) {
	f.Helper()
	root := fuzzseed.Root(f)
	for _, p := range patterns {
		names, _ := filepath.Glob(filepath.Join(root, p))
		for _, name := range names {
			r, err := OpenFile(name)
			if err != nil {
				f.Fatal(err)
			}
			var rec Record
			for i := 0; i < n && r.ReadRecord(&rec) == nil; i++ {
				f.Add(rec.LinkType, bytes.Clone(rec.Data))
			}
			r.Close()
		}
	}
}
