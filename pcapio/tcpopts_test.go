package pcapio

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func TestParseTCPOptions(t *testing.T) {
	ts := []byte{8, 10, 0, 0, 0x12, 0x34, 0, 0, 0x56, 0x78}
	for _, c := range []struct {
		name string
		in   []byte
		want TCPOptions
	}{
		{"none", nil, TCPOptions{}},
		// Linux's SYN: MSS, SACK permitted, timestamps, NOP, window scale.
		{"linux syn", []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7},
			TCPOptions{MSS: 1460, WScale: 7, HasWScale: true, TSVal: 1, HasTS: true}},
		// Linux's data segments: NOP, NOP, timestamps.
		{"nop nop ts", append([]byte{1, 1}, ts...), TCPOptions{TSVal: 0x1234, TSEcr: 0x5678, HasTS: true}},
		// End of list: what follows is padding, not options.
		{"end", append([]byte{0}, ts...), TCPOptions{}},
		// A length running past the header ends the walk; earlier options stay.
		{"overrun", []byte{2, 4, 0x05, 0xb4, 8, 40, 0}, TCPOptions{MSS: 1460}},
		// A length below 2 would loop for ever.
		{"length 1", []byte{8, 1, 2, 4, 0, 1}, TCPOptions{}},
		// Cut after the kind.
		{"cut", []byte{1, 8}, TCPOptions{}},
		// A timestamp of the wrong length is skipped, the next option read.
		{"bad ts length", []byte{8, 6, 0, 0, 0, 1, 3, 3, 2}, TCPOptions{WScale: 2, HasWScale: true}},
		// Shifts above 14 are read as 14 (RFC 7323 section 2.3).
		{"huge shift", []byte{3, 3, 30}, TCPOptions{WScale: 14, HasWScale: true}},
		// Unknown options (SACK blocks) are stepped over.
		{"sack then ts", append([]byte{5, 10, 0, 0, 0, 1, 0, 0, 0, 2}, ts...), TCPOptions{TSVal: 0x1234, TSEcr: 0x5678, HasTS: true}},
	} {
		if got := ParseTCPOptions(c.in); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestDecodeTCPOptions checks that Decode fills TCPOpts from the header.
func TestDecodeTCPOptions(t *testing.T) {
	opts := []byte{2, 4, 0x05, 0xb4, 1, 3, 3, 7, 1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 4}
	frame := eth(etherTypeIPv4, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, proto: ProtoTCP},
		tcpSeg(40000, 80, 1, 0, FlagSYN, 64240, opts, nil)))
	var p Packet
	Decode(&p, LinkTypeEthernet, frame, len(frame))
	want := TCPOptions{MSS: 1460, WScale: 7, HasWScale: true, TSVal: 9, TSEcr: 4, HasTS: true}
	if p.Status != StatusOK || p.TCPOpts != want || p.Window != 64240 {
		t.Errorf("status %v opts %+v window %d, want ok %+v 64240", p.Status, p.TCPOpts, p.Window, want)
	}
}

// FuzzParseTCPOptions checks that the walk never panics and agrees with
// gopacket's decoding of the same header wherever gopacket accepts it.
func FuzzParseTCPOptions(f *testing.F) {
	f.Add([]byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7}) // a Linux SYN's options
	f.Add([]byte{1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 1})                               // NOP NOP timestamps
	f.Add([]byte{8, 1})                                                              // a length below 2
	f.Add([]byte{2, 40, 0, 0})                                                       // a length past the end
	f.Add([]byte{0, 2, 4, 1, 1})                                                     // end of list, then bytes
	f.Fuzz(func(t *testing.T, opts []byte) {
		ParseTCPOptions(opts)
		if len(opts) > 40 {
			return
		}
		// The header holds the options padded to 32 bits with zeros.
		opts = append(opts, make([]byte, (4-len(opts)%4)%4)...)
		got := ParseTCPOptions(opts)
		seg := tcpSeg(1, 2, 3, 4, FlagACK, 5, opts, nil)
		var tcp layers.TCP
		if err := tcp.DecodeFromBytes(seg, gopacket.NilDecodeFeedback); err != nil {
			return
		}
		var want TCPOptions
		for _, o := range tcp.Options {
			switch {
			case o.OptionType == layers.TCPOptionKindEndList:
			case o.OptionType == tcpOptMSS && len(o.OptionData) == 2:
				want.MSS = binary.BigEndian.Uint16(o.OptionData)
			case o.OptionType == tcpOptWScale && len(o.OptionData) == 1:
				want.WScale, want.HasWScale = min(o.OptionData[0], 14), true
			case o.OptionType == tcpOptTimestamp && len(o.OptionData) == 8:
				want.TSVal = binary.BigEndian.Uint32(o.OptionData[0:4])
				want.TSEcr = binary.BigEndian.Uint32(o.OptionData[4:8])
				want.HasTS = true
			}
		}
		if got != want {
			t.Errorf("options % x: %+v, gopacket %+v", opts, got, want)
		}
	})
}
