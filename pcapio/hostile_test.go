package pcapio

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

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
