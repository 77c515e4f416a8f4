package pcapio

import (
	"fmt"
	"io"
	"math"
	"math/bits"
)

// pcapng block types.
const (
	ngBlockSHB = 0x0a0d0d0a // Section Header Block
	ngBlockIDB = 0x00000001 // Interface Description Block
	ngBlockPB  = 0x00000002 // Packet Block (obsolete)
	ngBlockSPB = 0x00000003 // Simple Packet Block
	ngBlockEPB = 0x00000006 // Enhanced Packet Block
)

// pcapng option codes.
const (
	ngOptEnd         = 0
	ngOptComment     = 1
	ngOptIfName      = 2
	ngOptIfDesc      = 3
	ngOptIfTSResol   = 9
	ngOptIfTSOffset  = 14
	ngBlockHeaderLen = 8 // type u32 | total length u32
)

// tsConv converts an interface's raw 64-bit timestamps to nanoseconds.
type tsConv struct {
	binary bool
	exp    uint8  // resolution exponent
	mul    int64  // decimal, exp <= 9: ns per unit
	div    uint64 // decimal, exp > 9: units per ns
	offset int64  // if_tsoffset in ns
}

func newTSConv(resol uint8, offsetSec int64) (tsConv, bool) {
	c := tsConv{binary: resol&0x80 != 0, exp: resol & 0x7f, offset: offsetSec * 1e9}
	switch {
	case c.binary:
		if c.exp > 63 {
			return tsConv{}, false
		}
	case c.exp <= 9:
		c.mul = 1
		for i := c.exp; i < 9; i++ {
			c.mul *= 10
		}
	case c.exp <= 19:
		c.div = 1
		for i := uint8(9); i < c.exp; i++ {
			c.div *= 10
		}
	default:
		return tsConv{}, false
	}
	return c, true
}

// ns converts ts, and reports false when the time does not fit in
// int64 nanoseconds since the epoch (year 2262): a corrupt timestamp,
// which would otherwise wrap around to a date before 1970.
func (c *tsConv) ns(ts uint64) (int64, bool) {
	var base int64
	switch {
	case c.binary:
		sec := ts >> c.exp
		frac := ts & (1<<c.exp - 1)
		hi, lo := bits.Mul64(frac, 1e9)
		var fracNS uint64
		if c.exp != 0 {
			fracNS = lo>>c.exp | hi<<(64-c.exp)
		}
		if sec > uint64(math.MaxInt64/1_000_000_000) {
			return 0, false
		}
		base = int64(sec) * 1e9
		if base > math.MaxInt64-int64(fracNS) {
			return 0, false
		}
		base += int64(fracNS)
	case c.mul != 0:
		if ts > uint64(math.MaxInt64/c.mul) {
			return 0, false
		}
		base = int64(ts) * c.mul
	default:
		base = int64(ts / c.div)
	}
	if c.offset > 0 && base > math.MaxInt64-c.offset {
		return 0, false
	}
	return base + c.offset, true
}

// readFirstSection reads the Section Header Block that opens the file.
func (r *Reader) readFirstSection() error {
	start := r.off
	blk, typ, err := r.readBlock()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return r.errAt(0, start, err)
	}
	if typ != ngBlockSHB {
		return r.errAt(0, start, ErrBadMagic)
	}
	return r.section(blk, start)
}

// section handles a Section Header Block; readBlock has set the byte order.
func (r *Reader) section(blk []byte, start int64) error {
	if len(blk) < 28 {
		return r.errAt(0, start, fmt.Errorf("%w: section header of %d bytes", ErrBadLength, len(blk)))
	}
	if major := r.u16(blk[12:14]); major != 1 {
		return r.errAt(0, start+12, fmt.Errorf("%w: pcapng %d.%d", ErrBadVersion, major, r.u16(blk[14:16])))
	}
	r.secBase = len(r.ifaces)
	r.sections++
	return nil
}

// readBlock reads one whole block and returns it with its type. It checks
// the lengths; a bad length is ErrBadLength (fatal). A new section's byte
// order is taken from its byte-order magic before the length is read.
func (r *Reader) readBlock() ([]byte, uint32, error) {
	h, err := r.peek(ngBlockHeaderLen)
	if err != nil {
		return nil, 0, err
	}
	typ := r.u32(h[0:4])
	if typ == ngBlockSHB {
		h, err = r.peek(12)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, 0, err
		}
		switch {
		case h[8] == 0x4d && h[9] == 0x3c && h[10] == 0x2b && h[11] == 0x1a:
			r.bigEndian = false
		case h[8] == 0x1a && h[9] == 0x2b && h[10] == 0x3c && h[11] == 0x4d:
			r.bigEndian = true
		default:
			return nil, 0, fmt.Errorf("%w: bad byte-order magic in section header", ErrBadMagic)
		}
	}
	n := r.u32(h[4:8])
	if n < 12 || n%4 != 0 || n > maxRecordLen {
		return nil, 0, fmt.Errorf("%w: block length %d", ErrBadLength, n)
	}
	blk, err := r.next(int(n))
	if err != nil {
		return nil, 0, err
	}
	if t := r.u32(blk[n-4:]); t != n {
		return nil, 0, fmt.Errorf("%w: block length %d, trailing length %d", ErrBadLength, n, t)
	}
	return blk, typ, nil
}

func (r *Reader) readNgRecord(rec *Record) error {
	for {
		start := r.off
		blk, typ, err := r.readBlock()
		if err != nil {
			if err == io.EOF {
				return io.EOF
			}
			return r.errAt(0, start, err)
		}
		switch typ {
		case ngBlockSHB:
			if err := r.section(blk, start); err != nil {
				return err
			}
		case ngBlockIDB:
			if err := r.interfaceBlock(blk, start); err != nil {
				return err
			}
		case ngBlockEPB, ngBlockPB, ngBlockSPB:
			r.num++
			if err := r.packetBlock(rec, blk, typ, start); err != nil {
				return err
			}
			return nil
		default:
			// Name resolution, interface statistics, decryption secrets,
			// custom and unknown blocks carry no packets: skip them.
		}
	}
}

func (r *Reader) interfaceBlock(blk []byte, start int64) error {
	if r.sections == 0 {
		return r.errAt(0, start, fmt.Errorf("%w: interface block before any section header", ErrBadBlock))
	}
	if len(blk) < 20 {
		return r.errAt(0, start, fmt.Errorf("%w: interface block of %d bytes", ErrBadBlock, len(blk)))
	}
	ifc := Interface{
		Index:    len(r.ifaces),
		Section:  r.sections - 1,
		LinkType: r.u16(blk[8:10]),
		SnapLen:  r.u32(blk[12:16]),
		TSResol:  6,
	}
	var optErr error
	opts := blk[16 : len(blk)-4]
	for len(opts) >= 4 {
		code, n := r.u16(opts[0:2]), int(r.u16(opts[2:4]))
		if code == ngOptEnd {
			break
		}
		if 4+n > len(opts) {
			optErr = fmt.Errorf("%w: interface option %d runs past the block", ErrBadBlock, code)
			break
		}
		v := opts[4 : 4+n]
		switch code {
		case ngOptIfName:
			ifc.Name = string(trimNUL(v))
		case ngOptIfDesc:
			ifc.Description = string(trimNUL(v))
		case ngOptIfTSResol:
			if n >= 1 {
				ifc.TSResol = v[0]
			}
		case ngOptIfTSOffset:
			if n >= 8 {
				ifc.TSOffset = int64(r.u64(v))
			}
		}
		opts = opts[min(len(opts), 4+(n+3)&^3):]
	}
	conv, ok := newTSConv(ifc.TSResol, ifc.TSOffset)
	if !ok {
		optErr = fmt.Errorf("%w: timestamp resolution %#x", ErrBadBlock, ifc.TSResol)
		ifc.TSResol = 6
		conv, _ = newTSConv(6, ifc.TSOffset)
	}
	ifc.conv = conv
	r.ifaces = append(r.ifaces, ifc)
	if !LinkTypeSupported(ifc.LinkType) {
		r.pending = append(r.pending, r.errAt(0, start, fmt.Errorf("%w %d (%s) on interface %d: its packets pass through undecoded", ErrUnknownLinkType, ifc.LinkType, LinkTypeName(ifc.LinkType), ifc.Index)))
	}
	if optErr != nil {
		return r.errAt(0, start, optErr)
	}
	if len(r.pending) > 0 {
		err := r.pending[0]
		r.pending = r.pending[1:]
		return err
	}
	return nil
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// packetBlock decodes an Enhanced, Simple or obsolete Packet Block.
func (r *Reader) packetBlock(rec *Record, blk []byte, typ uint32, start int64) error {
	var ifid int
	var ts uint64
	var caplen, wirelen uint32
	var data []byte
	body := blk[:len(blk)-4]
	switch typ {
	case ngBlockEPB, ngBlockPB:
		if len(body) < 28 {
			return r.errAt(r.num, start, fmt.Errorf("%w: packet block of %d bytes", ErrBadBlock, len(blk)))
		}
		if typ == ngBlockEPB {
			ifid = int(r.u32(body[8:12]))
		} else {
			ifid = int(r.u16(body[8:10]))
		}
		ts = uint64(r.u32(body[12:16]))<<32 | uint64(r.u32(body[16:20]))
		caplen = r.u32(body[20:24])
		wirelen = r.u32(body[24:28])
		if uint64(caplen) > uint64(len(body)-28) {
			return r.errAt(r.num, start, fmt.Errorf("%w: captured length %d exceeds the block", ErrBadBlock, caplen))
		}
		data = body[28 : 28+caplen]
	case ngBlockSPB:
		if len(body) < 12 {
			return r.errAt(r.num, start, fmt.Errorf("%w: simple packet block of %d bytes", ErrBadBlock, len(blk)))
		}
		wirelen = r.u32(body[8:12])
		caplen = min(wirelen, uint32(len(body)-12))
		if r.secBase < len(r.ifaces) {
			if s := r.ifaces[r.secBase].SnapLen; s != 0 {
				caplen = min(caplen, s)
			}
		}
		data = body[12 : 12+caplen]
	}
	idx := r.secBase + ifid
	if ifid < 0 || idx >= len(r.ifaces) {
		return r.errAt(r.num, start, fmt.Errorf("%w: interface %d", ErrUnknownInterface, ifid))
	}
	if wirelen < caplen {
		wirelen = caplen
	}
	ifc := &r.ifaces[idx]
	*rec = Record{
		Data:      data,
		WireLen:   int(wirelen),
		LinkType:  ifc.LinkType,
		Interface: idx,
		Number:    r.num,
		Offset:    start,
	}
	if typ != ngBlockSPB {
		var ok bool
		if rec.TS, ok = ifc.conv.ns(ts); !ok {
			return r.errAt(r.num, start, fmt.Errorf("%w: %#x on interface %d", ErrBadTimestamp, ts, idx))
		}
	}
	return nil
}
