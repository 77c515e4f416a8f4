package pcapio

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	i0, _ := w.AddInterface(Interface{LinkType: LinkTypeEthernet, Name: "a", Description: "first"})
	i1, _ := w.AddInterface(Interface{LinkType: LinkTypeSLL2, SnapLen: 96, Name: "b"})
	type pk struct {
		iface   int
		ts      int64
		data    []byte
		wire    int
		comment string
	}
	pkts := []pk{
		{i0, 1700000000_123456789, sampleTCP4(1, "x"), 0, "seen by a"},
		{i1, 1700000000_223456789, sll2(etherTypeIPv6, 1, udp6), 500, ""},
		{i0, 5, []byte{1, 2, 3}, 3, strings.Repeat("c", 301)}, // odd lengths need padding
	}
	for _, p := range pkts {
		if err := w.WritePacket(p.iface, p.ts, p.data, p.wire, []byte(p.comment)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WritePacket(7, 0, nil, 0, nil); err == nil {
		t.Error("undefined interface accepted")
	}
	if err := w.WritePacket(i0, -5, nil, 0, nil); err == nil {
		t.Error("a time before 1970 accepted (it would read back as one after 2262)")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, soft, final := readAll(t, buf.Bytes())
	if final != io.EOF || len(soft) > 0 || len(recs) != len(pkts) {
		t.Fatalf("%d records, %v %v", len(recs), soft, final)
	}
	pr, err := pcapgo.NewNgReader(bytes.NewReader(buf.Bytes()), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pkts {
		r := recs[i]
		wire := max(p.wire, len(p.data))
		if r.Interface != p.iface || r.TS != p.ts || !bytes.Equal(r.Data, p.data) || r.WireLen != wire {
			t.Errorf("packet %d: %+v", i, r)
		}
		d, ci, opts, err := pr.ReadPacketDataWithOptions()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d, p.data) || ci.InterfaceIndex != p.iface || ci.Length != wire {
			t.Errorf("packet %d: pcapgo disagrees", i)
		}
		if p.comment != "" && (len(opts.Comments) != 1 || opts.Comments[0] != p.comment) {
			t.Errorf("packet %d: comments %q", i, opts.Comments)
		}
	}
}

// TestMergeWriterTshark merges the real captures and has tshark read the
// result: every packet once, on the interface of the sniffer that saw it
// first, with a comment naming every sniffer that saw it.
func TestMergeWriterTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (make deps installs it)")
	}
	names := []string{"client.pcap", "server.pcapng", "router-any.pcap.zst"}
	var paths []string
	for _, n := range names {
		paths = append(paths, capPath(n))
	}
	m, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out := filepath.Join(t.TempDir(), "merged.pcapng")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := NewMergeWriter(f, m.Sniffers(), m.Offsets(), true)
	if err != nil {
		t.Fatal(err)
	}
	var want []string // per packet: interface name and comment
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if err := mw.Write(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, strconv.FormatInt(p.TS(), 10)+"|"+m.Sniffers()[p.Obs[0].Sniffer].Name+"|"+strconv.Itoa(len(p.Obs)))
	}
	if err := mw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cmd := exec.Command(tshark, "-r", out, "-T", "fields", "-E", "separator=|",
		"-e", "frame.time_epoch", "-e", "frame.interface_name", "-e", "frame.comment")
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("tshark read %d packets, merge wrote %d", len(lines), len(want))
	}
	threeWay := 0
	for i, l := range lines {
		f := strings.Split(l, "|")
		w := strings.Split(want[i], "|")
		ts, _ := strconv.ParseInt(w[0], 10, 64)
		if len(f) != 3 || f[0] != strconv.FormatInt(ts/1e9, 10)+"."+pad9(ts%1e9) || f[1] != w[1] {
			t.Fatalf("packet %d: tshark says %q, want time %s on %s", i+1, l, w[0], w[1])
		}
		n, _ := strconv.Atoi(w[2])
		if !strings.HasPrefix(f[2], "seen by "+w[1]) || strings.Count(f[2], ", ")+1 != n {
			t.Errorf("packet %d: comment %q for %d observations", i+1, f[2], n)
		}
		if strings.Contains(f[2], "client.pcap") && strings.Contains(f[2], "server.pcapng") && strings.Contains(f[2], "router-any.pcap.zst") {
			threeWay++
		}
	}
	if threeWay != int(expected(t)["routed_client"]) {
		t.Errorf("%d comments name all three sniffers, want the %d routed packets", threeWay, expected(t)["routed_client"])
	}
}

func pad9(v int64) string {
	s := strconv.FormatInt(v, 10)
	return strings.Repeat("0", 9-len(s)) + s
}

func TestMergeWriterNoAllocs(t *testing.T) {
	sn := []Sniffer{{Name: "a.pcap"}, {Name: "b.pcap"}}
	offs := []Offset{{Method: "reference", Known: true}, {Sniffer: 1, Known: true, Offset: 5, Method: "symmetric"}}
	mw, err := NewMergeWriter(io.Discard, sn, offs, true)
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	f := sampleTCP4(1, "hello")
	Decode(&p, LinkTypeEthernet, f, len(f))
	p.Obs = append(p.Obs, Observation{Sniffer: 1, TTL: 63, Corrected: 123456})
	mw.Write(&p)
	if n := testing.AllocsPerRun(100, func() { mw.Write(&p) }); n != 0 {
		t.Errorf("MergeWriter.Write allocates %v times per packet", n)
	}
}

func TestAppendDuration(t *testing.T) {
	for d, want := range map[int64]string{0: "0ns", 999: "999ns", 1000: "1µs", 100451: "100.451µs", 1500000: "1.5ms",
		-2_000_000_000: "-2s", 137_250_000_522: "137.25s"} {
		if got := string(appendDuration(nil, d)); got != want {
			t.Errorf("appendDuration(%d) = %q, want %q", d, got, want)
		}
	}
}
