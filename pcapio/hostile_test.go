package pcapio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// zeroCapture writes a zstd-compressed pcap: a header and n bytes of
// zeros, that is n/16 empty records at time 0 (the audit's 336 KB file
// held 10 GB of zeros).
func zeroCapture(t *testing.T, n int) string {
	t.Helper()
	var b bytes.Buffer
	zw, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	hdr := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 262144, nil)
	zw.Write(hdr)
	zeros := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zeros))
		zw.Write(zeros[:k])
		n -= k
	}
	zw.Close()
	path := filepath.Join(t.TempDir(), "zeros.pcap.zst")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIdenticalFramesStayBounded: identical frames with equal timestamps
// no longer pile up on one packet (10 GB of zeros reached 10.2 GB of
// memory): a packet keeps at most MaxObservations, the rest are counted
// as dropped copies, and the accounting balances.
func TestIdenticalFramesStayBounded(t *testing.T) {
	path := zeroCapture(t, 16<<20) // a million records
	m, err := Open([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	most := 0
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		most = max(most, len(p.Obs))
	}
	st := m.Stats()
	if most > DefaultMaxObservations {
		t.Errorf("a packet kept %d observations", most)
	}
	if st.Total.Records != 1<<20 || st.Total.Records != st.Packets+st.Duplicates+st.DroppedCopies || st.DroppedCopies == 0 {
		t.Errorf("records %d = packets %d + duplicates %d + dropped copies %d?", st.Total.Records, st.Packets, st.Duplicates, st.DroppedCopies)
	}
}

// TestPendingStaysBounded: distinct packets with one timestamp never let
// the dedupe window end; past the pending bound the oldest leave early,
// counted, and every record is still in exactly one packet.
func TestPendingStaysBounded(t *testing.T) {
	const n = 20000
	pk := make([]testPkt, n)
	for i := range pk {
		pk[i] = testPkt{ts: 1e18, data: eth(0x0800, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(i), proto: ProtoUDP}, udpDgram(1, 2, []byte{byte(i), byte(i >> 8)})))}
	}
	path := filepath.Join(t.TempDir(), "same-time.pcap")
	if err := os.WriteFile(path, pcapFile(binary.LittleEndian, true, LinkTypeEthernet, 65535, pk), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Open([]string{path}, Options{MaxPendingBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for {
		if _, err := m.Next(); err == io.EOF {
			break
		}
		if m.pendingBytes > 1<<20+(1<<12) {
			t.Fatalf("%d bytes pending", m.pendingBytes)
		}
	}
	st := m.Stats()
	if st.EarlyReleases == 0 || st.Packets != n || st.Total.Records != st.Packets+st.Duplicates+st.DroppedCopies {
		t.Errorf("packets %d, early releases %d, duplicates %d", st.Packets, st.EarlyReleases, st.Duplicates)
	}
}

// TestPcapFractionOverflow: a pcap record whose microseconds (or
// nanoseconds) field holds a second or more (it used to be added as it
// was, dating the packet later, silently) is a positioned problem; the
// record is skipped and counted as bad, the file read on.
func TestPcapFractionOverflow(t *testing.T) {
	frame := eth(0x0800, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoUDP}, udpDgram(1, 2, []byte("x"))))
	for _, nano := range []bool{false, true} {
		data := pcapFile(binary.LittleEndian, nano, LinkTypeEthernet, 65535, []testPkt{
			{ts: 1_700_000_000e9, data: frame}, {ts: 1_700_000_001e9, data: frame}, {ts: 1_700_000_002e9, data: frame}})
		// The second record's fraction: 1,500,000 µs or 1,500,000,000 ns.
		frac := uint32(1_500_000)
		if nano {
			frac = 1_500_000_000
		}
		binary.LittleEndian.PutUint32(data[24+16+len(frame)+4:], frac)
		path := filepath.Join(t.TempDir(), "frac.pcap")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := Open([]string{path}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, err := m.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		m.Close()
		st, probs := m.Stats(), m.Problems()
		var pe *ParseError
		if n != 2 || st.Total.BadRecords != 1 || len(probs) != 1 || !errors.Is(probs[0], ErrBadTimestamp) || !errors.As(probs[0], &pe) || pe.Packet != 2 || pe.Offset != int64(24+16+len(frame)) {
			t.Errorf("nano %v: %d packets, %d bad, problems %v", nano, n, st.Total.BadRecords, probs)
		}
	}
}

// TestTimestampOverflow: a pcapng timestamp whose nanoseconds overflow
// (it used to date the packet 1969, silently) is a positioned problem;
// the record is skipped and counted as bad, the file read on.
func TestTimestampOverflow(t *testing.T) {
	frame := eth(0x0800, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoUDP}, udpDgram(1, 2, []byte("x"))))
	n := &ngBuilder{order: binary.LittleEndian}
	data := n.shb().idb(LinkTypeEthernet, 65535, "eth0", -1, 0).
		epb(0, 1_700_000_000_000_000, frame, 0).
		epb(0, 0xffff_ffff_ffff_ff00, frame, 0).
		epb(0, 1_700_000_000_000_001, frame, 0).bytes()
	path := filepath.Join(t.TempDir(), "overflow.pcapng")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Open([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if p.Obs[0].TS < 1_600_000_000e9 {
			t.Errorf("a packet dated %d", p.Obs[0].TS)
		}
	}
	st := m.Stats()
	probs := m.Problems()
	if st.Total.Records != 2 || st.Total.BadRecords != 1 || len(probs) != 1 || !errors.Is(probs[0], ErrBadTimestamp) {
		t.Fatalf("records %d, bad %d, problems %v", st.Total.Records, st.Total.BadRecords, probs)
	}
	var pe *ParseError
	if !errors.As(probs[0], &pe) || pe.Packet != 2 || pe.Offset == 0 {
		t.Errorf("problem not positioned: %v", probs[0])
	}
}

// TestForgedIPLength: an IP header that claims more bytes than the frame
// carried on the wire (a forged total length) no longer makes a packet
// "truncated" with a phantom 65 KB payload: the frame's length is taken,
// and the disagreement counted.
func TestForgedIPLength(t *testing.T) {
	for _, isV6 := range []bool{false, true} {
		var l3 []byte
		var etype uint16 = 0x0800
		seg := tcpSeg(1, 2, 3, 4, FlagACK|FlagPSH, 5, nil, []byte("hello"))
		if isV6 {
			etype = 0x86dd
			l3 = ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: 64, proto: ProtoTCP}, seg)
			binary.BigEndian.PutUint16(l3[4:6], 65000)
		} else {
			l3 = ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoTCP}, seg)
			binary.BigEndian.PutUint16(l3[2:4], 65000)
		}
		frame := eth(etype, l3)
		var p Packet
		Decode(&p, LinkTypeEthernet, frame, len(frame))
		if p.Status != StatusOK || p.Truncated || p.PayloadLen != 5 || !p.BadIPLength {
			t.Errorf("v6 %v: status %v, truncated %v, payload length %d, bad IP length %v", isV6, p.Status, p.Truncated, p.PayloadLen, p.BadIPLength)
		}
		var c Counts
		c.count(&p)
		if c.BadIPLength != 1 || c.Truncated != 0 {
			t.Errorf("v6 %v: counts %+v", isV6, c)
		}
	}
}

// TestUnreadableFirstFileIsNoReference: when the first input cannot be
// read, the clocks are measured against the first that can (it used to be
// the reference, and every other sniffer's offset stayed unknown).
func TestUnreadableFirstFileIsNoReference(t *testing.T) {
	s := makeScenario(t, 7, 300)
	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte("not a capture\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Open(append([]string{bad}, s.paths...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	offs := m.Offsets()
	if offs[0].Method == "reference" || offs[1].Method != "reference" {
		t.Errorf("reference: %+v, %+v", offs[0], offs[1])
	}
	if !offs[2].Known {
		t.Errorf("the second readable sniffer's offset is unknown: %+v", offs[2])
	}
	if len(m.Problems()) == 0 {
		t.Error("the unreadable file is not reported")
	}
}

// evenFilter keeps records whose length is even.
type evenFilter struct{}

func (evenFilter) Match(_ uint16, data []byte, _ int) (bool, error) { return len(data)%2 == 0, nil }

// TestFilterAndTimeBounds: the filter and the time bounds leave packets
// out, and the accounting says how many: records read = delivered +
// filtered; delivered = packets + duplicates + outside the bounds.
func TestFilterAndTimeBounds(t *testing.T) {
	s := makeScenario(t, 3, 400)
	all := readStats(t, s.paths, Options{})
	for _, o := range []Options{
		{Filter: evenFilter{}},
		{Start: TimeBound{Set: true, Relative: true, Offset: 100 * time.Millisecond}},
		{End: TimeBound{Set: true, Relative: true, Offset: 200 * time.Millisecond}},
		{Filter: evenFilter{}, Start: TimeBound{Set: true, Relative: true, Offset: 50 * time.Millisecond},
			End: TimeBound{Set: true, At: 1700000000_000000000 + int64(300*time.Millisecond)}},
	} {
		st := readStats(t, s.paths, o)
		if st.Total.Records+st.Total.Filtered != all.Total.Records {
			t.Errorf("%+v: %d delivered + %d filtered, %d records", o, st.Total.Records, st.Total.Filtered, all.Total.Records)
		}
		if st.Total.Records != st.Packets+st.Duplicates+st.DroppedCopies+st.OutsideTime {
			t.Errorf("%+v: accounting %+v", o, st)
		}
		if st.Packets >= all.Packets || st.Packets == 0 {
			t.Errorf("%+v: %d packets of %d", o, st.Packets, all.Packets)
		}
	}
}

func readStats(t *testing.T, paths []string, o Options) Stats {
	t.Helper()
	m, err := Open(paths, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for {
		if _, err := m.Next(); err == io.EOF {
			return m.Stats()
		}
	}
}

// TestRecordOverTrustedSnap: a snapshot length over 16 MiB is not trusted,
// so a record longer than libpcap's 262,144 bytes is refused; the error
// said it exceeded the snapshot length, which it did not.
func TestRecordOverTrustedSnap(t *testing.T) {
	for _, tc := range []struct {
		snap uint32
		n    int
		want string
	}{
		{32 << 20, 300_000, "captured length 300000 exceeds 262144 bytes, the most read of one record when the snapshot length (33554432) is over 16777216"},
		{1000, 300_000, "captured length 300000 exceeds the snapshot length 1000"},
	} {
		data := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, tc.snap, []testPkt{{ts: 1e9, data: make([]byte, tc.n)}})
		r, err := NewReader(bytes.NewReader(data), "big.pcap")
		if err != nil {
			t.Fatal(err)
		}
		var rec Record
		err = r.ReadRecord(&rec)
		if !errors.Is(err, ErrBadLength) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("snap %d, record %d: %v, want %q", tc.snap, tc.n, err, tc.want)
		}
	}
}

// TestUDPLengthEndsTheDatagram: a UDP datagram ends where its own length
// says, whether IP carried bytes after it (padding inside the IP payload)
// or the IP length lies (forged, found by FuzzDecode against gopacket);
// a UDP length past what IP carried is not believed.
func TestUDPLengthEndsTheDatagram(t *testing.T) {
	tests := []struct {
		name     string
		udpLen   uint16 // 0: as built
		trailing string // bytes after the datagram inside the IP payload
		ipLen    uint16 // 0: as built
		want     string
		badIP    bool
	}{
		{"as built", 0, "", 0, "query", false},
		{"padding inside IP", 0, "\x00\x00\x00", 0, "query", false},
		{"IP length forged, a byte after the datagram", 0, "0", 60000, "query", true},
		{"UDP length past the packet", 200, "", 0, "query", false},
		{"UDP length under its header", 4, "", 0, "query", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := append(udpDgram(5353, 53, []byte("query")), tc.trailing...)
			if tc.udpLen != 0 {
				binary.BigEndian.PutUint16(d[4:6], tc.udpLen)
			}
			l3 := ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoUDP}, d)
			if tc.ipLen != 0 {
				binary.BigEndian.PutUint16(l3[2:4], tc.ipLen)
			}
			frame := eth(0x0800, l3)
			var p Packet
			Decode(&p, LinkTypeEthernet, frame, len(frame))
			if p.Status != StatusOK || string(p.Payload) != tc.want || p.PayloadLen != len(tc.want) || p.Truncated || p.BadIPLength != tc.badIP {
				t.Errorf("status %v payload %q (length %d, truncated %v), bad IP length %v", p.Status, p.Payload, p.PayloadLen, p.Truncated, p.BadIPLength)
			}
		})
	}
}
