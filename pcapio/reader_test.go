package pcapio

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/zstd"
)

var orders = []byteOrder{binary.LittleEndian, binary.BigEndian}

func threePackets() []testPkt {
	return []testPkt{
		{ts: 1700000000_123456000, data: sampleTCP4(1, "hello")},
		{ts: 1700000000_123457000, data: sampleTCP4(2, "world!"), wire: 1500},
		{ts: 1700000001_000001000, data: sampleTCP4(3, "")},
	}
}

func TestReadPcapVariants(t *testing.T) {
	for _, order := range orders {
		for _, nano := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/nano=%v", order, nano), func(t *testing.T) {
				want := threePackets()
				if nano {
					want[0].ts += 789
				}
				data := pcapFile(order, nano, LinkTypeEthernet, 65535, want)
				recs, soft, final := readAll(t, data)
				if final != io.EOF || len(soft) > 0 {
					t.Fatalf("final %v, soft %v", final, soft)
				}
				if len(recs) != len(want) {
					t.Fatalf("%d records, want %d", len(recs), len(want))
				}
				off := int64(24)
				for i, r := range recs {
					w := want[i]
					if r.TS != w.ts || !bytes.Equal(r.Data, w.data) || r.WireLen != w.wireLen() ||
						r.LinkType != LinkTypeEthernet || r.Number != int64(i+1) || r.Offset != off {
						t.Errorf("record %d = %+v, want ts %d wire %d offset %d", i, r, w.ts, w.wireLen(), off)
					}
					off += 16 + int64(len(w.data))
				}
				// pcapgo is the oracle for the timestamps and bytes.
				pr, err := pcapgo.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				for i := range recs {
					d, ci, err := pr.ReadPacketData()
					if err != nil {
						t.Fatal(err)
					}
					if ci.Timestamp.UnixNano() != recs[i].TS || !bytes.Equal(d, recs[i].Data) || ci.Length != recs[i].WireLen {
						t.Errorf("record %d disagrees with pcapgo: %v %d", i, ci.Timestamp.UnixNano(), ci.Length)
					}
				}
			})
		}
	}
}

func TestReadPcapModifiedFormat(t *testing.T) {
	// Kuznetzov's modified pcap: 24-byte record headers.
	var b bytes.Buffer
	le := binary.LittleEndian
	for _, v := range []any{uint32(magicPcapModified), uint16(2), uint16(4), int32(0), uint32(0), uint32(65535), uint32(LinkTypeEthernet)} {
		binary.Write(&b, le, v)
	}
	frame := sampleTCP4(9, "x")
	for _, v := range []any{uint32(10), uint32(20), uint32(len(frame)), uint32(len(frame)), uint32(3), uint16(0x800), uint8(0), uint8(0)} {
		binary.Write(&b, le, v)
	}
	b.Write(frame)
	recs, _, final := readAll(t, b.Bytes())
	if final != io.EOF || len(recs) != 1 || recs[0].TS != 10e9+20e3 || !bytes.Equal(recs[0].Data, frame) {
		t.Fatalf("got %+v, %v", recs, final)
	}
}

// multiSectionNg builds a pcapng file with two sections of opposite byte
// order, interfaces of several link types and timestamp resolutions, an
// if_tsoffset, unknown blocks and all three packet block types. It
// returns the records a reader must deliver.
func multiSectionNg(first byteOrder) ([]byte, []Record) {
	second := byteOrder(binary.BigEndian)
	if first == binary.BigEndian {
		second = binary.LittleEndian
	}
	f1 := sampleTCP4(1, "one")
	f2 := ipv4(v4{src: "192.0.2.1", dst: "192.0.2.2", ttl: 5, proto: ProtoUDP}, udpDgram(53, 5353, []byte("two")))
	f3 := sampleTCP4(3, "three")
	f4 := sll2(etherTypeIPv4, 7, ipv4(v4{src: "10.1.1.1", dst: "10.1.1.2", ttl: 9, proto: ProtoUDP}, udpDgram(1, 2, []byte("four"))))
	f5 := sampleTCP4(5, "five")
	n := &ngBuilder{order: first}
	n.shb()
	n.idb(LinkTypeEthernet, 0, "eth0", -1, 0) // default resolution: µs
	n.block(0x0bad0bad, []byte("an unknown block type"))
	n.idb(LinkTypeRaw, 128, "tun0", 9, 100) // ns, +100 s
	n.epb(0, 1700000000_000001, f1, len(f1))
	n.epb(1, 1700000000_000000002, f2, len(f2)+10)
	n.block(0x00000005, make([]byte, 16)) // an interface statistics block
	n.spb(f3, len(f3))
	n.pb(0, 1700000000_000004, f1, len(f1))
	o1 := n.b.Len()
	n2 := &ngBuilder{order: second}
	n2.shb()
	n2.idb(LinkTypeSLL2, 65535, "any", 0x80|20, 0) // 2^-20 s
	n2.idb(LinkTypeEthernet, 65535, "", 3, 0)      // ms
	n2.epb(0, 5<<20|1<<19, f4, len(f4))            // 5.5 s
	n2.epb(1, 1700000000_007, f5, len(f5))
	data := append(n.bytes(), n2.bytes()...)
	_ = o1
	want := []Record{
		{Data: f1, TS: 1700000000_000001000, WireLen: len(f1), LinkType: LinkTypeEthernet, Interface: 0},
		{Data: f2, TS: 1700000100_000000002, WireLen: len(f2) + 10, LinkType: LinkTypeRaw, Interface: 1},
		{Data: f3, TS: 0, WireLen: len(f3), LinkType: LinkTypeEthernet, Interface: 0},
		{Data: f1, TS: 1700000000_000004000, WireLen: len(f1), LinkType: LinkTypeEthernet, Interface: 0},
		{Data: f4, TS: 5_500000000, WireLen: len(f4), LinkType: LinkTypeSLL2, Interface: 2},
		{Data: f5, TS: 1700000000_007000000, WireLen: len(f5), LinkType: LinkTypeEthernet, Interface: 3},
	}
	for i := range want {
		want[i].Number = int64(i + 1)
	}
	return data, want
}

func TestReadPcapNg(t *testing.T) {
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			data, want := multiSectionNg(order)
			recs, soft, final := readAll(t, data)
			if final != io.EOF || len(soft) > 0 {
				t.Fatalf("final %v, soft %v", final, soft)
			}
			if len(recs) != len(want) {
				t.Fatalf("%d records, want %d", len(recs), len(want))
			}
			for i, r := range recs {
				w := want[i]
				if r.TS != w.TS || !bytes.Equal(r.Data, w.Data) || r.WireLen != w.WireLen || r.LinkType != w.LinkType ||
					r.Interface != w.Interface || r.Number != w.Number {
					t.Errorf("record %d = ts %d wire %d lt %d if %d n %d, want ts %d wire %d lt %d if %d n %d", i,
						r.TS, r.WireLen, r.LinkType, r.Interface, r.Number, w.TS, w.WireLen, w.LinkType, w.Interface, w.Number)
				}
				if r.Offset <= 0 || r.Offset >= int64(len(data)) {
					t.Errorf("record %d offset %d outside the file", i, r.Offset)
				}
			}
			r, _ := NewReader(bytes.NewReader(data), "x")
			for r.ReadRecord(&Record{}) == nil {
			}
			ifs := r.Interfaces()
			if len(ifs) != 4 || ifs[0].Name != "eth0" || ifs[1].TSOffset != 100 || ifs[2].TSResol != 0x80|20 || ifs[2].Section != 1 || ifs[3].Index != 3 {
				t.Errorf("interfaces %+v", ifs)
			}
		})
	}
}

// TestReadPcapNgAgreesWithPcapgo checks Enhanced Packet Blocks against
// pcapgo's NgReader (which needs WantMixedLinkType for this file).
func TestReadPcapNgAgreesWithPcapgo(t *testing.T) {
	n := &ngBuilder{order: binary.LittleEndian}
	n.shb()
	n.idb(LinkTypeEthernet, 0, "a", -1, 0)
	n.idb(LinkTypeRaw, 0, "b", 9, 0)
	n.idb(LinkTypeSLL2, 0, "c", 0x80|10, 0)
	for i := range 30 {
		f := sampleTCP4(uint32(i), "payload")
		ts := uint64(1700000000_000000 + i*997) // µs on a
		switch i % 3 {
		case 1:
			ts *= 1000 // ns on b
		case 2:
			ts = (1700000000+uint64(i))<<10 | uint64(i*31) // 2^-10 s on c
		}
		n.epb(uint32(i%3), ts, f, len(f)+i)
	}
	data := n.bytes()
	recs, _, final := readAll(t, data)
	if final != io.EOF || len(recs) != 30 {
		t.Fatalf("%d records, %v", len(recs), final)
	}
	pr, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		d, ci, err := pr.ReadPacketData()
		if err != nil {
			t.Fatal(err)
		}
		tol := int64(0)
		if i%3 == 2 {
			// pcapgo scales 2^-n fractions by the integer 1e9/2^n and so
			// loses up to a nanosecond per unit; ours must be exact.
			tol = 1 << 10
			exact := (1700000000+int64(i))*1e9 + int64(i*31)*1e9/1024
			if rec.TS != exact {
				t.Errorf("record %d: ts %d, want %d", i, rec.TS, exact)
			}
		}
		if absDiff(ci.Timestamp.UnixNano(), rec.TS) > tol || !bytes.Equal(d, rec.Data) || ci.Length != rec.WireLen || ci.InterfaceIndex != rec.Interface {
			t.Errorf("record %d: pcapgo ts %d len %d if %d; ours ts %d len %d if %d", i,
				ci.Timestamp.UnixNano(), ci.Length, ci.InterfaceIndex, rec.TS, rec.WireLen, rec.Interface)
		}
	}
}

func TestReadCompressed(t *testing.T) {
	plain := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, threePackets())
	ng, _ := multiSectionNg(binary.LittleEndian)
	for _, c := range []struct {
		name string
		comp Compression
		enc  func([]byte) []byte
	}{
		{"gzip", CompressionGzip, func(b []byte) []byte {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			w.Write(b)
			w.Close()
			return buf.Bytes()
		}},
		{"zstd", CompressionZstd, func(b []byte) []byte {
			w, _ := zstd.NewWriter(nil)
			return w.EncodeAll(b, nil)
		}},
	} {
		for _, orig := range [][]byte{plain, ng} {
			want, _, _ := readAll(t, orig)
			data := c.enc(orig)
			r, err := NewReader(bytes.NewReader(data), "capture.pcap") // the name says nothing
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if r.Compression() != c.comp {
				t.Errorf("%s: compression %v", c.name, r.Compression())
			}
			r.Close()
			got, soft, final := readAll(t, data)
			if final != io.EOF || len(soft) > 0 || len(got) != len(want) {
				t.Fatalf("%s: %d records, %v %v", c.name, len(got), soft, final)
			}
			for i := range got {
				if got[i].TS != want[i].TS || !bytes.Equal(got[i].Data, want[i].Data) || got[i].Offset != want[i].Offset {
					t.Errorf("%s: record %d differs", c.name, i)
				}
			}
		}
	}
}

func TestReadBadInput(t *testing.T) {
	good := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, threePackets())
	rec2 := int64(24 + 16 + len(threePackets()[0].data)) // offset of record 2

	corruptLen := bytes.Clone(good)
	binary.LittleEndian.PutUint32(corruptLen[rec2+8:], 0x7fffffff)
	capOverWire := bytes.Clone(good)
	binary.LittleEndian.PutUint32(capOverWire[rec2+12:], 10)
	unknownLT := pcapFile(binary.LittleEndian, false, 4242, 65535, threePackets())

	ngGood, _ := multiSectionNg(binary.LittleEndian)
	ngRecs, _, _ := readAll(t, ngGood)
	ngLastOff := ngRecs[len(ngRecs)-1].Offset
	ngBadTrailer := bytes.Clone(ngGood)
	ngBadTrailer[len(ngBadTrailer)-1] ^= 0x40 // last block's trailing length

	var epbTooLong ngBuilder
	epbTooLong.order = binary.LittleEndian
	epbTooLong.shb().idb(LinkTypeEthernet, 0, "", -1, 0)
	f := sampleTCP4(1, "x")
	epbTooLong.epb(0, 1, f, len(f))
	badAt := int64(epbTooLong.b.Len())
	epbTooLong.epb(0, 2, f, len(f))
	binary.LittleEndian.PutUint32(epbTooLong.b.Bytes()[badAt+20:], 5000) // caplen past the block
	epbTooLong.epb(7, 3, f, len(f))                                      // undefined interface
	epbTooLong.epb(0, 4, f, len(f))

	var ngUnknownLT ngBuilder
	ngUnknownLT.order = binary.BigEndian
	ngUnknownLT.shb().idb(999, 0, "weird", -1, 0).epb(0, 1, f, len(f))

	var garbageBlockLen ngBuilder
	garbageBlockLen.order = binary.LittleEndian
	garbageBlockLen.shb().idb(LinkTypeEthernet, 0, "", -1, 0).epb(0, 1, f, len(f))
	glAt := int64(garbageBlockLen.b.Len())
	garbageBlockLen.b.Write([]byte{0xde, 0xad, 0xbe, 0xef, 0x07, 0, 0, 0}) // length 7: not a multiple of 4

	cases := []struct {
		name      string
		data      []byte
		openErr   error // NewReader fails with this
		records   int   // records delivered before the end
		soft      []error
		final     error // io.EOF for a clean end
		finalOff  int64
		finalPkts int64
	}{
		{name: "empty", data: nil, openErr: ErrEmpty},
		{name: "text file", data: []byte("hello, this is not a capture\n"), openErr: ErrBadMagic},
		{name: "short", data: []byte{0xd4, 0xc3}, openErr: ErrBadMagic},
		{name: "header cut", data: good[:20], openErr: io.ErrUnexpectedEOF},
		{name: "pcap 3.0", data: append([]byte{0xd4, 0xc3, 0xb2, 0xa1, 3, 0}, good[6:]...), openErr: ErrBadVersion},
		{name: "truncated last record", data: good[:len(good)-3], records: 2, final: io.ErrUnexpectedEOF, finalOff: int64(len(good) - 16 - len(threePackets()[2].data)), finalPkts: 3},
		{name: "truncated record header", data: good[:rec2+5], records: 1, final: io.ErrUnexpectedEOF, finalOff: rec2, finalPkts: 2},
		{name: "corrupt caplen", data: corruptLen, records: 1, final: ErrBadLength, finalOff: rec2, finalPkts: 2},
		{name: "caplen over wire length", data: capOverWire, records: 1, final: ErrBadLength, finalOff: rec2, finalPkts: 2},
		{name: "unknown link type", data: unknownLT, records: 3, soft: []error{ErrUnknownLinkType}, final: io.EOF},
		{name: "pcapng bad trailing length", data: ngBadTrailer, records: 5, final: ErrBadLength, finalOff: ngLastOff},
		{name: "pcapng malformed blocks", data: epbTooLong.bytes(), records: 2, soft: []error{ErrBadBlock, ErrUnknownInterface}, final: io.EOF},
		{name: "pcapng unknown link type", data: ngUnknownLT.bytes(), records: 1, soft: []error{ErrUnknownLinkType}, final: io.EOF},
		{name: "pcapng garbage block length", data: garbageBlockLen.bytes(), records: 1, final: ErrBadLength, finalOff: glAt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, soft, final := readAll(t, c.data)
			if c.openErr != nil {
				if !errors.Is(final, c.openErr) {
					t.Fatalf("open error %v, want %v", final, c.openErr)
				}
				var pe *ParseError
				if !errors.As(final, &pe) || pe.File != "test" {
					t.Errorf("error %v names no file", final)
				}
				return
			}
			if len(recs) != c.records {
				t.Errorf("%d records, want %d", len(recs), c.records)
			}
			if len(soft) != len(c.soft) {
				t.Errorf("non-fatal errors %v, want %v", soft, c.soft)
			}
			for i := range min(len(soft), len(c.soft)) {
				if !errors.Is(soft[i], c.soft[i]) {
					t.Errorf("non-fatal error %d = %v, want %v", i, soft[i], c.soft[i])
				}
			}
			if !errors.Is(final, c.final) {
				t.Fatalf("final error %v, want %v", final, c.final)
			}
			if c.final != io.EOF {
				var pe *ParseError
				if !errors.As(final, &pe) {
					t.Fatalf("final error %T is not a *ParseError", final)
				}
				if pe.Offset != c.finalOff || pe.Packet != c.finalPkts {
					t.Errorf("error at packet %d byte %d, want packet %d byte %d (%v)", pe.Packet, pe.Offset, c.finalPkts, c.finalOff, pe)
				}
			}
		})
	}
}

// TestReadCutEverywhere cuts captures at every byte offset (as
// encoding/binary's TestReadTruncated does): the reader must deliver a
// prefix of the records, end with io.EOF exactly when the cut falls on a
// record boundary and otherwise with an error positioned inside the input.
func TestReadCutEverywhere(t *testing.T) {
	ng, _ := multiSectionNg(binary.BigEndian)
	for _, full := range [][]byte{
		pcapFile(binary.BigEndian, true, LinkTypeEthernet, 65535, threePackets()),
		ng,
	} {
		want, _, _ := readAll(t, full)
		ends := map[int64]bool{}
		for i, r := range want {
			if i+1 < len(want) {
				ends[want[i+1].Offset] = true
			}
			_ = r
		}
		ends[int64(len(full))] = true
		for cut := 0; cut <= len(full); cut++ {
			got, _, final := readAll(t, full[:cut])
			if len(got) > len(want) {
				t.Fatalf("cut %d: %d records from a prefix of a file of %d", cut, len(got), len(want))
			}
			for i := range got {
				if got[i].TS != want[i].TS || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("cut %d: record %d differs", cut, i)
				}
			}
			if final == io.EOF {
				continue
			}
			var pe *ParseError
			if !errors.As(final, &pe) {
				t.Fatalf("cut %d: %v is not a *ParseError", cut, final)
			}
			if pe.Offset < 0 || pe.Offset > int64(cut) {
				t.Errorf("cut %d: error offset %d outside the input", cut, pe.Offset)
			}
			if cut > 0 && !errors.Is(final, io.ErrUnexpectedEOF) && !errors.Is(final, ErrBadMagic) {
				t.Errorf("cut %d: %v, want an unexpected EOF", cut, final)
			}
		}
	}
}

func TestReadRecordNoAllocs(t *testing.T) {
	var pkts []testPkt
	for i := range 200 {
		pkts = append(pkts, testPkt{ts: int64(i) * 1e6, data: sampleTCP4(uint32(i), "abcdefgh")})
	}
	data := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, pkts)
	br := bytes.NewReader(data)
	r, err := NewReader(br, "x")
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	allocs := testing.AllocsPerRun(150, func() {
		if err := r.ReadRecord(&rec); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadRecord allocates %v times per record", allocs)
	}
}
