package pcapio

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// The real captures made by testdata/captures/make.sh with tcpdump,
// dumpcap and editcap, and the counts make.sh computed with tshark.
const capDir = "../testdata/captures"

func capPath(name string) string { return filepath.Join(capDir, name) }

func expected(t *testing.T) map[string]int64 {
	t.Helper()
	f, err := os.Open(capPath("expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		m[k] = n
	}
	return m
}

var realCaptures = []struct {
	name      string
	format    Format
	comp      Compression
	linkTypes []uint16
	frames    string // key in expected.txt
}{
	{"client.pcap", FormatPcap, CompressionNone, []uint16{LinkTypeEthernet}, "client_frames"},
	{"server.pcapng", FormatPcapNg, CompressionNone, []uint16{LinkTypeEthernet}, "server_frames"},
	{"router-any.pcap.zst", FormatPcap, CompressionZstd, []uint16{LinkTypeSLL2}, "any_frames"},
	{"router-sll1.pcap", FormatPcap, CompressionNone, []uint16{LinkTypeLinuxSLL}, ""},
	{"router-multi.pcapng.gz", FormatPcapNg, CompressionGzip, []uint16{LinkTypeEthernet, LinkTypeLinuxSLL}, ""},
	{"vlan.pcap", FormatPcap, CompressionNone, []uint16{LinkTypeEthernet}, "vlan_frames"},
}

// decompressed returns the file's bytes after gzip or zstd.
func decompressed(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(capPath(name))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case strings.HasSuffix(name, ".gz"):
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		data, err = io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
	case strings.HasSuffix(name, ".zst"):
		r, _ := zstd.NewReader(nil)
		data, err = r.DecodeAll(data, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// TestRealCapturesRead reads each real capture and checks it against
// pcapgo (records) and gopacket (decoded fields), and the frame counts
// against tshark's.
func TestRealCapturesRead(t *testing.T) {
	exp := expected(t)
	for _, c := range realCaptures {
		t.Run(c.name, func(t *testing.T) {
			r, err := OpenFile(capPath(c.name))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Format() != c.format || r.Compression() != c.comp {
				t.Errorf("format %v %v", r.Format(), r.Compression())
			}
			raw := decompressed(t, c.name)
			var next func() ([]byte, int64, int, int)
			if c.format == FormatPcap {
				pr, err := pcapgo.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				next = func() ([]byte, int64, int, int) {
					d, ci, err := pr.ReadPacketData()
					if err != nil {
						t.Fatalf("pcapgo: %v", err)
					}
					return d, ci.Timestamp.UnixNano(), ci.Length, 0
				}
			} else {
				pr, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.NgReaderOptions{WantMixedLinkType: true})
				if err != nil {
					t.Fatal(err)
				}
				next = func() ([]byte, int64, int, int) {
					d, ci, err := pr.ReadPacketData()
					if err != nil {
						t.Fatalf("pcapgo: %v", err)
					}
					return d, ci.Timestamp.UnixNano(), ci.Length, ci.InterfaceIndex
				}
			}
			var rec Record
			var p Packet
			n := 0
			lts := map[uint16]bool{}
			for {
				err := r.ReadRecord(&rec)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n++
				d, ts, wl, ifc := next()
				if !bytes.Equal(d, rec.Data) || ts != rec.TS || wl != rec.WireLen || ifc != rec.Interface {
					t.Fatalf("record %d differs from pcapgo", n)
				}
				lts[rec.LinkType] = true
				Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
				switch p.Status {
				case StatusOK:
					checkAgainstGopacket(t, &p, rec.LinkType, rec.Data)
				case StatusNonIP:
				default:
					t.Errorf("record %d undecodable", n)
				}
				if c.name == "vlan.pcap" {
					if p.Status != StatusOK || !strings.Contains(p.Src.String(), "77:9::1") && p.Src.String() != "10.77.9.1" {
						t.Errorf("vlan record %d: %v %v", n, p.Status, p.Src)
					}
				}
			}
			if c.frames != "" && int64(n) != exp[c.frames] {
				t.Errorf("%d records, tshark counted %d", n, exp[c.frames])
			}
			for _, lt := range c.linkTypes {
				if !lts[lt] || len(lts) != len(c.linkTypes) {
					t.Errorf("link types %v, want %v", lts, c.linkTypes)
				}
			}
		})
	}
}

func TestRealCapturesVLAN(t *testing.T) {
	exp := expected(t)
	r, err := OpenFile(capPath("vlan.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rec Record
	qinq := 0
	for r.ReadRecord(&rec) == nil {
		if be.Uint16(rec.Data[12:]) == etherTypeQinQ && be.Uint16(rec.Data[16:]) == etherTypeVLAN {
			qinq++
		}
	}
	if int64(qinq) != exp["vlan_qinq"] || qinq == 0 {
		t.Errorf("%d QinQ frames, tshark counted %d", qinq, exp["vlan_qinq"])
	}
}

// TestRealCapturesMerge merges the client's, the server's (clock shifted
// by editcap) and the router's tcpdump -i any captures and checks the
// exact duplicate counts and the recovered shift.
func TestRealCapturesMerge(t *testing.T) {
	exp := expected(t)
	m, err := Open([]string{capPath("client.pcap"), capPath("server.pcapng"), capPath("router-any.pcap.zst")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	drain(t, m, nil)
	st := m.Stats()
	routed := exp["routed_client"]
	// Every routed packet passed both end sniffers; every frame either
	// end sniffer saw was on one of the router's links; the router saw
	// each routed packet on both of its interfaces.
	checks := []struct {
		what      string
		got, want int64
	}{
		{"client-server shared", st.Shared[0][1], routed},
		{"client-router shared", st.Shared[0][2], exp["client_frames"]},
		{"server-router shared", st.Shared[1][2], exp["server_frames"]},
		{"router seen twice", st.Shared[2][2], exp["any_routed"] / 2},
		{"packets", st.Packets, exp["any_frames"] - exp["any_routed"]/2},
		{"records", st.Total.Records, exp["client_frames"] + exp["server_frames"] + exp["any_frames"]},
		{"records = packets + duplicates", st.Total.Records, st.Packets + st.Duplicates},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	// The recovered shift: within its stated uncertainty (plus the
	// client's microsecond resolution) of editcap's, and that uncertainty
	// is below 100 µs (veth delays are microseconds).
	o := m.Offsets()[1]
	shift := exp["shift_ns"]
	if !o.Known || absDiff(o.Offset, shift) > o.Uncertainty+1000 || o.Uncertainty > 100_000 {
		t.Errorf("server offset %+v, editcap shifted it by %d ns", o, shift)
	}
	if o := m.Offsets()[2]; !o.Known || absDiff(o.Offset, 0) > o.Uncertainty+1000 {
		t.Errorf("router offset %+v, want 0", o)
	}
	if len(m.Problems()) != 0 {
		t.Errorf("problems: %v", m.Problems())
	}
}

func TestRealCapturesSplitInterfaces(t *testing.T) {
	exp := expected(t)
	m, err := Open([]string{capPath("router-multi.pcapng.gz")}, Options{SplitInterfaces: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	drain(t, m, nil)
	sn := m.Sniffers()
	if len(sn) != 2 || sn[0].Name != "router-multi.pcapng.gz#rtr-in" || sn[1].Name != "router-multi.pcapng.gz#any" {
		t.Fatalf("sniffers %+v", sn)
	}
	st := m.Stats()
	if st.Shared[0][1] != exp["multi_in"] || st.Shared[1][1] != exp["multi_any_routed"]/2 || sn[1].Packets != exp["multi_any"] {
		t.Errorf("shared %v, sniffers %+v", st.Shared, sn)
	}
	// One clock, but two capture sockets stamp one packet up to a couple
	// of microseconds apart, and "any" sees a packet both before and
	// after forwarding; hence 2 µs beyond the uncertainty.
	if o := m.Offsets()[1]; !o.Known || absDiff(o.Offset, 0) > o.Uncertainty+2000 {
		t.Errorf("offset %+v, want 0 (one clock)", o)
	}
}
