//go:build cgo && !nolibpcap

package pcapfilter

import (
	"fmt"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
	"golang.org/x/net/bpf"
)

// compile runs libpcap's compiler for link type lt.
func compile(lt uint16, expr string) ([]bpf.RawInstruction, error) {
	insns, err := pcap.CompileBPFFilter(layers.LinkType(lt), SnapLen, expr)
	if err != nil {
		return nil, fmt.Errorf("filter %q (link type %d): %w", expr, lt, err)
	}
	raw := make([]bpf.RawInstruction, len(insns))
	for i, in := range insns {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return raw, nil
}
