package gen

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/wirepath/wirepath/trace"
)

const pcapConfig = `
name: pcaptest
instances: 40
clients: 4
think: 1ms..5ms
names: addr
defaults: {delay: 2ms±200us, reply: 1ms, net: 300us±50us}
nodes:
  B:   {addr: 10.0.0.2, port: 80}
  C:   {addr: 10.0.0.3, port: 5432}
  DNS: {addr: 10.0.0.53, port: 31999, proto: udp} # not 53: the payload is no DNS
sniffers:
  - {name: mirror}
  - {name: hostb, nodes: [B], offset: 5ms}
tracelets:
  - name: rpc
    rpc:
      to: B
      reply_bytes: 4000
      calls:
        - {to: C, call_bytes: 3000, reply_bytes: 100}
  - name: dns
    messages:
      - {id: q, to: DNS, bytes: 60}
      - {id: a, after: q, to: CLIENT, bytes: 3500}
`

type capturedPacket struct {
	ts   int64
	data []byte
}

func readPcapng(t *testing.T, path string) []capturedPacket {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var out []capturedPacket
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, capturedPacket{ts: ci.Timestamp.UnixNano(), data: append([]byte(nil), data...)})
	}
	return out
}

// TestWritePcaps writes captures of a small RPC and UDP system and reads
// them back: connections are complete, the bytes of every message are there
// once per sniffer that sees it, at the message's times plus the sniffer's
// offset, and a host sniffer sees only its host's packets.
func TestWritePcaps(t *testing.T) {
	cfg, err := ParseConfig(strings.NewReader(pcapConfig), "pcaptest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := mustGenerate(t, cfg)
	dir := t.TempDir()
	stats, err := WritePcaps(dir, out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 2 {
		t.Fatalf("stats %+v", stats)
	}
	tr := out.Truth.Trace
	// Expected data: per (src, dst, first byte time) the message.
	type key struct {
		src, dst string
		ts       int64
	}
	bySend := make(map[key]int)
	byRecv := make(map[key]int)
	for i := range tr.Messages {
		m := &tr.Messages[i]
		bySend[key{tr.Str(m.Src), tr.Str(m.Dst), int64(m.SendTS)}] = i
		byRecv[key{tr.Str(m.Src), tr.Str(m.Dst), int64(m.RecvTS)}] = i
	}
	for si, sn := range []struct {
		name   string
		offset int64
		host   string
	}{{"mirror", 0, ""}, {"hostb", int64(5 * time.Millisecond), "10.0.0.2"}} {
		pkts := readPcapng(t, filepath.Join(dir, sn.name+".pcapng"))
		if len(pkts) != stats[si].Packets {
			t.Fatalf("%s: read %d packets, wrote %d", sn.name, len(pkts), stats[si].Packets)
		}
		bytesOf := make(map[int]int) // message -> payload bytes seen
		syns, fins, fragBytes := 0, 0, 0
		var prev int64
		for _, cp := range pkts {
			if cp.ts < prev {
				t.Fatalf("%s: packets out of time order", sn.name)
			}
			prev = cp.ts
			p := gopacket.NewPacket(cp.data, layers.LayerTypeEthernet, gopacket.Default)
			ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if ip == nil {
				t.Fatalf("%s: not IPv4: %v", sn.name, p)
			}
			src, _ := netip.AddrFromSlice(ip.SrcIP)
			dst, _ := netip.AddrFromSlice(ip.DstIP)
			if sn.host != "" {
				h := netip.MustParseAddr(sn.host)
				if src != h && dst != h {
					t.Fatalf("%s sees %v -> %v", sn.name, src, dst)
				}
				if want := uint8(routedTTL); dst == h && ip.TTL != want || src == h && ip.TTL != senderTTL {
					t.Fatalf("%s: TTL %d on %v -> %v", sn.name, ip.TTL, src, dst)
				}
			}
			if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
				fragBytes += len(ip.Payload)
				continue
			}
			var sp, dp uint16
			var pl []byte
			switch l := p.TransportLayer().(type) {
			case *layers.TCP:
				sp, dp, pl = uint16(l.SrcPort), uint16(l.DstPort), l.Payload
				if l.SYN && !l.ACK {
					syns++
				}
				if l.FIN {
					fins++
				}
			case *layers.UDP:
				sp, dp, pl = uint16(l.SrcPort), uint16(l.DstPort), l.Payload
			default:
				t.Fatalf("%s: no transport layer in %v", sn.name, p)
			}
			if len(pl) == 0 {
				continue
			}
			k := key{netip.AddrPortFrom(src, sp).String(), netip.AddrPortFrom(dst, dp).String(), cp.ts - sn.offset}
			i, ok := bySend[k]
			if !ok {
				// A later segment, or seen at the receiver: find the
				// message by its endpoints and time window.
				i = -1
				for j := range tr.Messages {
					m := &tr.Messages[j]
					if tr.Str(m.Src) == k.src && tr.Str(m.Dst) == k.dst && k.ts >= int64(m.SendTS) && k.ts <= int64(m.RecvTS) {
						i = j
						break
					}
				}
				if i < 0 {
					t.Fatalf("%s: payload %s->%s at %d belongs to no message", sn.name, k.src, k.dst, k.ts)
				}
			}
			// The payload is the message's deterministic bytes.
			want := make([]byte, len(pl))
			off := bytesOf[i]
			payload(want, int32(i), int32(off))
			if !bytes.Equal(pl, want) {
				t.Fatalf("%s: payload of message %d at offset %d differs", sn.name, i, off)
			}
			bytesOf[i] += len(pl)
		}
		wantFrag := 0
		for i := range tr.Messages {
			m := &tr.Messages[i]
			seen := sn.host == "" || strings.HasPrefix(tr.Str(m.Src), sn.host+":") || strings.HasPrefix(tr.Str(m.Dst), sn.host+":")
			got := bytesOf[i]
			want := int(m.Bytes)
			if m.Proto == trace.ProtoUDP && m.Bytes+8 > pcapMTU-20 {
				if seen {
					wantFrag += 8 + int(m.Bytes)
				}
				want = 0 // counted as fragments
			}
			if !seen {
				want = 0
			}
			if got != want {
				t.Errorf("%s: message %d (%s %s->%s, %d bytes): saw %d bytes", sn.name, i, m.Kind, tr.Str(m.Src), tr.Str(m.Dst), m.Bytes, got)
			}
		}
		if fragBytes != wantFrag {
			t.Errorf("%s: %d bytes in fragments, want %d", sn.name, fragBytes, wantFrag)
		}
		if sn.host == "" && (syns == 0 || fins != 2*syns || wantFrag == 0) {
			t.Errorf("%s: %d SYNs, %d FINs", sn.name, syns, fins)
		}
	}
	// The truth records the sniffers.
	if len(out.Truth.Meta.Sniffers) != 2 || out.Truth.Meta.Sniffers[1].Offset != Duration(5*time.Millisecond) {
		t.Errorf("truth sniffers %+v", out.Truth.Meta.Sniffers)
	}

	// Wireshark's reader agrees: every packet parses, checksums are right,
	// and it reassembles the fragmented datagrams.
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed; make deps installs it")
	}
	for si, st := range stats {
		// One pass per file: a line per frame with the checksum statuses
		// (0 = bad), TCP analysis flags, malformation and UDP length.
		cmd := exec.Command("tshark", "-r", st.File, "-o", "tcp.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
			"-T", "fields", "-E", "separator=/t", "-E", "occurrence=f",
			"-e", "frame.number", "-e", "ip.checksum.status", "-e", "tcp.checksum.status", "-e", "udp.checksum.status",
			"-e", "tcp.analysis.flags", "-e", "_ws.malformed", "-e", "udp.length")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		outb, err := cmd.Output()
		if err != nil {
			t.Fatalf("tshark on %s: %v\n%s", st.File, err, stderr.String())
		}
		lines := strings.Split(strings.TrimRight(string(outb), "\n"), "\n")
		if len(lines) != st.Packets {
			t.Errorf("tshark reads %d packets of %d in %s", len(lines), st.Packets, st.Sniffer)
		}
		for _, l := range lines {
			f := strings.Split(l, "\t")
			for len(f) < 7 {
				f = append(f, "")
			}
			if f[1] == "0" || f[2] == "0" || f[3] == "0" || f[4] != "" || f[5] != "" {
				t.Errorf("%s: tshark finds a bad frame: %q", st.Sniffer, l)
			}
			if si == 0 && f[6] != "" && f[6] != "68" && f[6] != "3508" {
				t.Errorf("tshark reassembles a UDP datagram of %s bytes, want 68 or 3508", f[6])
			}
		}
	}
}

func TestWritePcapsLosses(t *testing.T) {
	cfg, err := ParseConfig(strings.NewReader(pcapConfig), "pcaptest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Drop = Drop{Random: 0.2}
	out := mustGenerate(t, cfg)
	stats, err := WritePcaps(t.TempDir(), out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out.Stats.LostRandom == 0 || stats[0].LostSegments == 0 {
		t.Errorf("no loss: %+v %+v", out.Stats, stats[0])
	}
}
