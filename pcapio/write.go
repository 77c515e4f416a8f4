package pcapio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Writer writes a pcapng file: one little-endian section whose interfaces
// are added as needed. Timestamps are written in nanoseconds (if_tsresol
// 9). Errors are sticky. Call Flush at the end.
type Writer struct {
	bw     *bufio.Writer
	head   []byte // scratch for block heads
	opts   []byte // scratch for packet options
	hdr    [8]byte
	ifaces []Interface
	err    error
}

// NewWriter writes the section header to w and returns the writer.
func NewWriter(w io.Writer) (*Writer, error) {
	wr := &Writer{bw: bufio.NewWriterSize(w, readBufferSize)}
	b := binary.LittleEndian.AppendUint32(nil, magicNgByteOrder)
	b = binary.LittleEndian.AppendUint16(b, 1) // major
	b = binary.LittleEndian.AppendUint16(b, 0) // minor
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0))
	b = appendOption(b, 4, []byte("wirepath")) // shb_userappl
	b = appendOption(b, ngOptEnd, nil)
	wr.block(ngBlockSHB, b, nil, nil)
	return wr, wr.err
}

// AddInterface writes an Interface Description Block for ifc's link type,
// snapshot length, name and description, and returns its index for
// WritePacket. Timestamps of every interface are nanoseconds.
func (w *Writer) AddInterface(ifc Interface) (int, error) {
	b := binary.LittleEndian.AppendUint16(nil, ifc.LinkType)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, ifc.SnapLen)
	if ifc.Name != "" {
		b = appendOption(b, ngOptIfName, []byte(ifc.Name))
	}
	if ifc.Description != "" {
		b = appendOption(b, ngOptIfDesc, []byte(ifc.Description))
	}
	b = appendOption(b, ngOptIfTSResol, []byte{9})
	b = appendOption(b, ngOptEnd, nil)
	w.block(ngBlockIDB, b, nil, nil)
	ifc.Index = len(w.ifaces)
	ifc.TSResol = 9
	w.ifaces = append(w.ifaces, ifc)
	return ifc.Index, w.err
}

// WritePacket writes an Enhanced Packet Block: data captured on interface
// iface at ts (ns since the epoch), wireLen bytes long on the wire, with an
// optional comment. It does not allocate.
func (w *Writer) WritePacket(iface int, ts int64, data []byte, wireLen int, comment []byte) error {
	if w.err != nil {
		return w.err
	}
	if iface < 0 || iface >= len(w.ifaces) {
		return fmt.Errorf("pcapng writer: interface %d not added", iface)
	}
	if ts < 0 {
		return fmt.Errorf("pcapng writer: time %d before 1970: pcapng timestamps are unsigned", ts)
	}
	if len(data) > maxRecordLen || len(comment) > 0xffff {
		return fmt.Errorf("pcapng writer: packet of %d bytes or comment of %d bytes too large", len(data), len(comment))
	}
	b := w.head[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(iface))
	b = binary.LittleEndian.AppendUint32(b, uint32(uint64(ts)>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(max(wireLen, len(data))))
	opts := w.opts[:0]
	if len(comment) > 0 {
		opts = appendOption(opts, ngOptComment, comment)
		opts = appendOption(opts, ngOptEnd, nil)
	}
	w.head, w.opts = b, opts
	w.block(ngBlockEPB, b, data, opts)
	return w.err
}

// block writes one block: head, then data padded to 4 bytes, then tail.
func (w *Writer) block(typ uint32, head, data, tail []byte) {
	if w.err != nil {
		return
	}
	padLen := (4 - len(data)%4) % 4
	n := 12 + len(head) + len(data) + padLen + len(tail)
	h := w.hdr[:] // a field: a local array would escape through bufio.Writer.Write
	binary.LittleEndian.PutUint32(h[0:], typ)
	binary.LittleEndian.PutUint32(h[4:], uint32(n))
	w.bw.Write(h)
	w.bw.Write(head)
	w.bw.Write(data)
	w.bw.Write(h[:padLen])
	w.bw.Write(tail)
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	_, w.err = w.bw.Write(h[:4])
}

// Flush writes any buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}

func appendOption(b []byte, code uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	return pad(append(b, v...))
}

func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// MergeWriter writes merged packets to pcapng. Each packet is written once,
// at its corrected time, on an interface named after the sniffer of its
// first observation (one interface per sniffer and link type), with a
// comment naming every sniffer that saw it, its time relative to the first
// and its TTL: "seen by a.pcap ttl 64, b.pcapng +100.451µs ttl 63".
type MergeWriter struct {
	w        *Writer
	sniffers []Sniffer
	offsets  []Offset
	ifaces   map[uint64]int
	comments bool
	cbuf     []byte
}

// NewMergeWriter writes the section header to w. Interface descriptions
// carry each sniffer's offset. Comments may be turned off.
func NewMergeWriter(w io.Writer, sniffers []Sniffer, offsets []Offset, comments bool) (*MergeWriter, error) {
	if len(offsets) != len(sniffers) {
		return nil, errors.New("merge writer: one offset per sniffer needed")
	}
	wr, err := NewWriter(w)
	if err != nil {
		return nil, err
	}
	return &MergeWriter{w: wr, sniffers: sniffers, offsets: offsets, ifaces: make(map[uint64]int), comments: comments}, nil
}

// Write writes p.
func (mw *MergeWriter) Write(p *Packet) error {
	first := p.Obs[0]
	k := uint64(first.Sniffer)<<16 | uint64(p.LinkType)
	idx, ok := mw.ifaces[k]
	if !ok {
		s := &mw.sniffers[first.Sniffer]
		o := mw.offsets[first.Sniffer]
		desc := "sniffer " + s.Name + ", " + FormatOffset(o) + ", timestamps on the reference clock"
		var err error
		if idx, err = mw.w.AddInterface(Interface{LinkType: p.LinkType, SnapLen: 0, Name: s.Name, Description: desc}); err != nil {
			return err
		}
		mw.ifaces[k] = idx
	}
	var c []byte
	if mw.comments {
		c = append(mw.cbuf[:0], "seen by "...)
		for i, o := range p.Obs {
			if i > 0 {
				c = append(c, ", "...)
			}
			c = append(c, mw.sniffers[o.Sniffer].Name...)
			if i > 0 {
				c = append(c, " +"...)
				c = appendDuration(c, o.Corrected-first.Corrected)
			}
			if p.Status == StatusOK {
				c = append(c, " ttl "...)
				c = strconv.AppendUint(c, uint64(o.TTL), 10)
			}
		}
		mw.cbuf = c
	}
	return mw.w.WritePacket(idx, first.Corrected, p.Frame, p.WireLen, c)
}

// Flush flushes the underlying writer.
func (mw *MergeWriter) Flush() error { return mw.w.Flush() }

// appendDuration appends d in ns, µs, ms or s with up to three decimals
// ("100.451µs"), without allocating.
func appendDuration(b []byte, d int64) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	unit, name := int64(1), "ns"
	switch {
	case d >= 1e9:
		unit, name = 1e9, "s"
	case d >= 1e6:
		unit, name = 1e6, "ms"
	case d >= 1e3:
		unit, name = 1e3, "µs"
	}
	b = strconv.AppendInt(b, d/unit, 10)
	if unit > 1 {
		frac := (d % unit) * 1000 / unit
		if frac > 0 {
			b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
			for b[len(b)-1] == '0' {
				b = b[:len(b)-1]
			}
		}
	}
	return append(b, name...)
}

// FormatOffset describes an offset for people: "offset +1.5s ± 200µs
// (symmetric, 412 samples)", "reference clock" or "offset unknown".
func FormatOffset(o Offset) string {
	switch {
	case o.Method == "reference":
		return "reference clock"
	case !o.Known:
		return "offset unknown (shares no packets with the reference)"
	case o.Method == "given":
		return "offset " + signedDuration(o.Offset) + " (given)"
	}
	s := fmt.Sprintf("offset %s ± %v", signedDuration(o.Offset), time.Duration(o.Uncertainty))
	if o.DriftKnown {
		s += fmt.Sprintf(", drift %+.2f ± %.2f ppm", o.DriftPPM, o.DriftUncertaintyPPM)
	}
	for i, st := range o.Steps {
		if i == 0 {
			s += ", steps"
		}
		s += fmt.Sprintf(" %s at %s", signedDuration(st.ByNS), time.Unix(0, st.AtNS).UTC().Format("15:04:05.000000"))
	}
	s += fmt.Sprintf(" (%s, %d samples", o.Method, o.Samples)
	if len(o.Via) > 0 {
		s += fmt.Sprintf(", via %v", o.Via)
	}
	return s + ")"
}

func signedDuration(ns int64) string {
	if ns >= 0 {
		return "+" + time.Duration(ns).String()
	}
	return time.Duration(ns).String()
}
