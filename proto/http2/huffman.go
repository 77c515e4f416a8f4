package http2

import (
	"golang.org/x/net/http2/hpack"
)

// HPACK's Huffman code (RFC 7541 Appendix B), decoded a byte of input at
// a time: each table maps the next 8 bits to a symbol and its length, or
// to the table of the codes longer than 8 bits that start with them.
// x/net's decoder does the same with a tree of nodes, a pooled buffer and
// a method call per symbol; this one appends to the caller's slice.

// hufEntry is one entry of a decoding table.
type hufEntry struct {
	kind   uint8 // hufInvalid, hufLeaf or hufNext
	sym    byte  // hufLeaf: the symbol
	length uint8 // hufLeaf: how many of the 8 bits its code uses
	next   uint16
}

const (
	hufInvalid = iota // no code starts so (EOS, which a string must not hold)
	hufLeaf
	hufNext
)

var errInvalidHuffman = hpack.ErrInvalidHuffman

// hufTables are the decoding tables, the first for a code's first byte.
// They are built from x/net's encoder, so that the two cannot disagree.
var hufTables = buildHuffman()

func buildHuffman() [][256]hufEntry {
	tables := make([][256]hufEntry, 1, 64)
	for s := range 256 {
		// Eight copies of a symbol take exactly as many bytes as its
		// code has bits.
		eight := string([]byte{byte(s), byte(s), byte(s), byte(s), byte(s), byte(s), byte(s), byte(s)})
		n := int(hpack.HuffmanEncodeLength(eight))
		enc := hpack.AppendHuffmanString(nil, eight)
		if n < 5 || n > 30 || len(enc) != n {
			panic("http2: x/net's HPACK Huffman code is not RFC 7541's")
		}
		var code uint32
		for i := range n {
			code = code<<1 | uint32(enc[i/8]>>(7-i%8)&1)
		}
		t := 0
		for n > 8 {
			n -= 8
			i := byte(code >> n)
			if tables[t][i].kind != hufNext {
				tables = append(tables, [256]hufEntry{})
				tables[t][i] = hufEntry{kind: hufNext, next: uint16(len(tables) - 1)}
			}
			t = int(tables[t][i].next)
		}
		shift := 8 - n
		start := int(byte(code << shift))
		for i := start; i < start+1<<shift; i++ {
			tables[t][i] = hufEntry{kind: hufLeaf, sym: byte(s), length: uint8(n)}
		}
	}
	return tables
}

// appendHuffman appends the Huffman-coded string v, decoded, to dst. It
// rejects what x/net's hpack.HuffmanDecode rejects: EOS, and padding
// longer than 7 bits or not all ones.
func appendHuffman(dst, v []byte) ([]byte, error) {
	var acc uint64
	var nbits, sbits uint // bits in acc not yet decoded; of them, since the last symbol
	t := 0
	for _, b := range v {
		acc = acc<<8 | uint64(b)
		nbits += 8
		sbits += 8
		for nbits >= 8 {
			e := hufTables[t][byte(acc>>(nbits-8))]
			switch e.kind {
			case hufLeaf:
				dst = append(dst, e.sym)
				nbits -= uint(e.length)
				t, sbits = 0, nbits
			case hufNext:
				nbits -= 8
				t = int(e.next)
			default:
				return dst, errInvalidHuffman
			}
		}
	}
	for nbits > 0 {
		e := hufTables[t][byte(acc<<(8-nbits))]
		if e.kind != hufLeaf || uint(e.length) > nbits {
			break
		}
		dst = append(dst, e.sym)
		nbits -= uint(e.length)
		t, sbits = 0, nbits
	}
	if sbits > 7 {
		return dst, errInvalidHuffman
	}
	if mask := uint64(1)<<nbits - 1; acc&mask != mask {
		return dst, errInvalidHuffman
	}
	return dst, nil
}
