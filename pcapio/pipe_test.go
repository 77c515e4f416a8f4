package pcapio

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// bigRecordCapture is a classic pcap whose second record is larger than
// 4 KiB (a jumbo frame, or a GRO'd segment as tcpdump sees it on the
// sender).
func bigRecordCapture() []byte {
	payload := make([]byte, 9000)
	for i := range payload {
		payload[i] = byte(i)
	}
	return pcapFile(binary.LittleEndian, true, LinkTypeEthernet, 65535, []testPkt{
		{ts: 1e18, data: eth(0x0800, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoTCP}, tcpSeg(1, 2, 3, 4, FlagACK, 5, nil, []byte("hi"))))},
		{ts: 1e18 + 1000, data: eth(0x0800, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoTCP}, tcpSeg(1, 2, 5, 4, FlagACK, 5, nil, payload)))},
	})
}

// TestRecordLargerThanBufferThroughFIFO: a record over 4 KiB read through
// a named pipe is read whole; it used to end the file with "bufio: buffer
// full" because the buffer was sized from the pipe's size (0).
func TestRecordLargerThanBufferThroughFIFO(t *testing.T) {
	data := bigRecordCapture()
	fifo := filepath.Join(t.TempDir(), "cap.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
	r, err := OpenFile(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rec Record
	var n int
	for {
		err := r.ReadRecord(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", n+1, err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("read %d records, want 2", n)
	}
}

// TestSmallTruncatedFile: a small file whose last record is cut says the
// file ended inside the record (not "bufio: buffer full"), and the merge
// counts the record as cut.
func TestSmallTruncatedFile(t *testing.T) {
	data := bigRecordCapture()
	path := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(path, data[:len(data)-4000], 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Open([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for {
		if _, err := m.Next(); err != nil {
			break
		}
	}
	st := m.Stats()
	if st.Total.CutRecords != 1 || st.Total.Records != 1 {
		t.Errorf("records %d, cut %d; want 1 and 1", st.Total.Records, st.Total.CutRecords)
	}
	probs := m.Problems()
	if len(probs) != 1 || !errors.Is(probs[0], io.ErrUnexpectedEOF) {
		t.Errorf("problems %v, want one unexpected EOF", probs)
	}
}
