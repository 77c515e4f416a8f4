package pcapio

import "encoding/binary"

// TCP option kinds (IANA "TCP Option Kind Numbers").
const (
	tcpOptEnd       = 0
	tcpOptNOP       = 1
	tcpOptMSS       = 2
	tcpOptWScale    = 3
	tcpOptTimestamp = 8
)

// ParseTCPOptions decodes the options the pipeline reads from a TCP
// header's option bytes (the header after its first 20 bytes). It never
// fails: an option with a bad length ends the walk, and what was decoded
// before it is kept; an option of the wrong length is skipped.
func ParseTCPOptions(b []byte) TCPOptions {
	var o TCPOptions
	for len(b) > 0 {
		kind := b[0]
		switch kind {
		case tcpOptEnd:
			return o
		case tcpOptNOP:
			b = b[1:]
			continue
		}
		if len(b) < 2 || int(b[1]) < 2 || int(b[1]) > len(b) {
			return o
		}
		opt := b[2:b[1]]
		switch {
		case kind == tcpOptMSS && len(opt) == 2:
			o.MSS = binary.BigEndian.Uint16(opt)
		case kind == tcpOptWScale && len(opt) == 1:
			o.WScale, o.HasWScale = min(opt[0], 14), true
		case kind == tcpOptTimestamp && len(opt) == 8:
			o.TSVal = binary.BigEndian.Uint32(opt[0:4])
			o.TSEcr = binary.BigEndian.Uint32(opt[4:8])
			o.HasTS = true
		}
		b = b[b[1]:]
	}
	return o
}
