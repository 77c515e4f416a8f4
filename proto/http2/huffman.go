package http2

import (
	"encoding/binary"
	"slices"
	"unsafe"

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
		code, n := hufCode(s)
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

// hufCode returns the code of symbol s and its length in bits, from
// x/net's encoder: eight copies of a symbol take exactly as many bytes as
// its code has bits.
func hufCode(s int) (code uint32, n int) {
	eight := string([]byte{byte(s), byte(s), byte(s), byte(s), byte(s), byte(s), byte(s), byte(s)})
	n = int(hpack.HuffmanEncodeLength(eight))
	enc := hpack.AppendHuffmanString(nil, eight)
	if n < 5 || n > 30 || len(enc) != n {
		panic("http2: x/net's HPACK Huffman code is not RFC 7541's")
	}
	for i := range n {
		code = code<<1 | uint32(enc[i/8]>>(7-i%8)&1)
	}
	return code, n
}

// hufFlat is hufTables packed for the decoding loop: the entry for
// table t and byte i is hufFlat[t<<8|i], a leaf as sym | length<<8 |
// hufLeaf<<16, a link as (next table)<<8 << 16 | hufNext<<16 (the next
// table's base index in the upper half), an invalid code as 0.
var hufFlat = func() []uint32 {
	flat := make([]uint32, 256*len(hufTables))
	for t := range hufTables {
		for i, e := range hufTables[t] {
			var v uint32
			switch e.kind {
			case hufLeaf:
				v = uint32(e.sym) | uint32(e.length)<<8 | hufLeaf<<16
			case hufNext:
				v = uint32(e.next)<<8<<16 | hufNext<<16
			}
			flat[t<<8|i] = v
		}
	}
	return flat
}()

// hufFastBits is the window of the fast table: three codes of 5 or 6
// bits, at most one of 6, fit in it (digits and a, c, e are 5 bits;
// b, d, f, '-' and most other lower-case letters 6).
const hufFastBits = 16

// hufFast maps the next hufFastBits bits to the one, two or three
// symbols whose codes they hold whole: syms | count<<24 | bits<<27,
// where syms is the uint32 whose first bytes in memory are the symbols
// (stored by one write); count 0 when the first code is longer than the
// window. 256 KiB, of which text of a few symbols touches little. An
// array rather than a pointer to one: its address is a constant, which
// the decoding loop neither loads nor checks for nil.
var hufFast = *buildFast()

// buildFast builds hufFast at the program's start (framing's work): each
// run of up to three codes that fits in the window fills the range of
// entries that start with it, after the range of the run one code
// shorter, which the longer runs then overwrite (no code is the prefix
// of another): some 200,000 stores, where finding each entry's symbols
// through hufTables cost about 150 instructions an entry (10 M).
func buildFast() *[1 << hufFastBits]uint32 {
	var b fastBuilder
	for s := range 256 {
		if code, n := hufCode(s); n <= hufFastBits {
			b.codes = append(b.codes, fastCode{sym: byte(s), code: code, n: uint32(n)})
		}
	}
	slices.SortStableFunc(b.codes, func(x, y fastCode) int { return int(x.n) - int(y.n) })
	b.fill(0, 0, 0)
	return &b.fast
}

// fastCode is one code of up to hufFastBits bits.
type fastCode struct {
	sym  byte
	code uint32
	n    uint32
}

// fastBuilder is buildFast's state: the codes that fit in the window,
// shortest first, the table, and the run of symbols being filled.
type fastBuilder struct {
	codes []fastCode
	fast  [1 << hufFastBits]uint32
	syms  [4]byte
}

// fill fills the entries that start with the run of count codes in the
// top bits of pre (bits of them) and recurses into the runs one code
// longer.
func (b *fastBuilder) fill(pre, bits, count uint32) {
	const w = hufFastBits
	if count > 0 {
		e := binary.NativeEndian.Uint32(b.syms[:])&(1<<24-1) | count<<24 | bits<<27
		lo := pre << (w - bits)
		for i := range uint32(1) << (w - bits) {
			b.fast[lo+i] = e
		}
	}
	if count == 3 {
		return
	}
	for _, c := range b.codes {
		if c.n > w-bits {
			break
		}
		b.syms[count] = c.sym
		b.fill(pre<<c.n|c.code, bits+c.n, count+1)
	}
	b.syms[count] = 0
}

// appendHuffman appends the Huffman-coded string v, decoded, to dst. It
// rejects what x/net's hpack.HuffmanDecode rejects: EOS, and padding
// longer than 7 bits or not all ones. It decodes one to three symbols at
// a time through hufFast while their codes fit in its window
// (hufFastLoop), the last bits too when they end in the padding, and
// hands the rest, from a code boundary, to hufSlow.
func appendHuffman(dst, v []byte) ([]byte, error) {
	// Symbols are written into room made first (a code is at least 5
	// bits long), which the loop writes up to three at a time by one
	// unchecked write of 4 bytes.
	n := len(dst)
	out := dst
	if need := len(v)*8/5 + 4; cap(out)-n < need { // HPACK's literal made room
		out = slices.Grow(out, need)
	}
	out = out[:cap(out)]
	base := unsafe.Pointer(unsafe.SliceData(out))
	n, used, acc, nbits := hufFastLoop(v, base, n)
	v = v[used:]
	if len(v) == 0 {
		// The last bits, fewer than the window: looked up with ones after
		// them (the padding's bits), whose symbols are taken only if
		// their codes end within the bits. What is left must be the
		// padding, up to 7 bits of ones; anything else (a code cut
		// short, EOS, a longer padding) is hufSlow's to decode exactly.
		for nbits > 0 && nbits < hufFastBits {
			e := hufFast[acc>>(64-hufFastBits)|(1<<hufFastBits-1)>>nbits]
			if e>>24&3 == 0 || uint(e>>27) > nbits {
				break
			}
			*(*uint32)(unsafe.Add(base, n)) = e
			n += int(e >> 24 & 3)
			k := uint(e >> 27)
			acc <<= k
			nbits -= k
		}
		if nbits <= 7 && ^acc>>(64-nbits) == 0 {
			return out[:n], nil
		}
	}
	return hufSlow(out, n, v, acc>>(64-nbits), nbits)
}

// hufFastLoop decodes v through hufFast into the room at base from n on
// while its codes fit in the window, and returns the n reached, how many
// bytes of v it read, and the nbits bits read but not decoded, at the
// top of acc (from a code boundary; fewer than the window unless the
// next code is longer). A function of its own, so that the loop's
// variables are all it keeps in registers. v comes first: its pointer
// then arrives in AX rather than CX, which the shifts by a count need
// (with v's pointer in CX the loop moved it out and back for each
// shift: BenchmarkHuffman 762 instructions a call, 752 so).
func hufFastLoop(v []byte, base unsafe.Pointer, n int) (int, int, uint64, uint) {
	// acc holds the nbits bits not yet decoded at its top, the window
	// being acc>>48 (a shift by a constant); below them may lie the
	// next bits of v already (of the eight bytes read for six), which
	// the next read ORs in again, and zeros. v is read from index i,
	// through a pointer made for each read at vp+i, within v (a pointer
	// kept and moved on would end one past v's end when v is used up:
	// not a valid one, and checkptr, under -race, says so; reads by
	// v[i:] cost their bounds checks, 812 instructions a traceparent
	// against 762).
	vp := unsafe.Pointer(unsafe.SliceData(v))
	i := 0
	fast := &hufFast // loaded once (the address of a global is not nil)
	var acc uint64
	var nbits uint
	for {
		if nbits < hufFastBits {
			if left := len(v) - i; left >= 8 {
				// Six bytes at once, read as eight.
				acc |= binary.BigEndian.Uint64((*[8]byte)(unsafe.Add(vp, i))[:]) >> nbits
				i, nbits = i+6, nbits+48
			} else if left >= 4 {
				acc |= uint64(binary.BigEndian.Uint32((*[4]byte)(unsafe.Add(vp, i))[:])) << 32 >> nbits
				i, nbits = i+4, nbits+32
			} else {
				for nbits < hufFastBits && i < len(v) {
					acc |= uint64(*(*byte)(unsafe.Add(vp, i))) << 56 >> nbits
					i, nbits = i+1, nbits+8
				}
				if nbits < hufFastBits {
					break
				}
			}
		}
		e := fast[acc>>(64-hufFastBits)]
		c := e >> 24 & 3
		if c == 0 {
			break
		}
		*(*uint32)(unsafe.Add(base, n)) = e // bytes to spare past the c symbols: overwritten next
		n += int(c)
		k := uint(e >> 27)
		acc <<= k
		nbits -= k
	}
	return n, i, acc, nbits
}

// hufSlow decodes the rest of a Huffman-coded string a byte of input at
// a time through hufFlat: acc holds nbits bits not yet decoded, which
// start at a code boundary, and v the bytes after them. Symbols go to
// out[n:] (out has room for them); it returns out[:n] at the end.
func hufSlow(out []byte, n int, v []byte, acc uint64, nbits uint) ([]byte, error) {
	flat := hufFlat
	sbits := nbits // bits since the last symbol
	var t uint32   // base index of the table of the code being read
	for i := 0; ; i++ {
		for nbits >= 8 {
			e := flat[t|uint32(byte(acc>>(nbits-8)))]
			switch e >> 16 & 3 {
			case hufLeaf:
				out[n] = byte(e)
				n++
				nbits -= uint(e >> 8 & 0xff)
				t, sbits = 0, nbits
			case hufNext:
				nbits -= 8
				t = e >> 16 &^ 3
			default:
				return out[:n], errInvalidHuffman
			}
		}
		if i == len(v) {
			break
		}
		acc = acc<<8 | uint64(v[i])
		nbits += 8
		sbits += 8
	}
	for nbits > 0 {
		e := flat[t|uint32(byte(acc<<(8-nbits)))]
		if e>>16&3 != hufLeaf || uint(e>>8&0xff) > nbits {
			break
		}
		out[n] = byte(e)
		n++
		nbits -= uint(e >> 8 & 0xff)
		t, sbits = 0, nbits
	}
	out = out[:n]
	if sbits > 7 {
		return out, errInvalidHuffman
	}
	if mask := uint64(1)<<nbits - 1; acc&mask != mask {
		return out, errInvalidHuffman
	}
	return out, nil
}
