package pcapio

import (
	"fmt"
	"io"
)

// Classic pcap: a 24-byte file header, then records of a 16-byte header
// (24 bytes in the modified format) and the captured bytes.
//
//	file header: magic u32 | major u16 | minor u16 | thiszone i32 | sigfigs u32 | snaplen u32 | linktype u32
//	record:      ts_sec u32 | ts_frac u32 | caplen u32 | len u32 [| ifindex u32 | proto u16 | type u8 | pad u8]
const (
	pcapFileHeaderLen = 24
	pcapMaxEagerLen   = 262144 // libpcap's MAXIMUM_SNAPLEN: records up to this are fine whatever the snaplen says
)

func (r *Reader) readPcapHeader() error {
	h, err := r.next(pcapFileHeaderLen)
	if err != nil {
		return r.errAt(0, 0, err)
	}
	magic := r.u32(h[0:4])
	r.pcapHdrLen = 16
	r.pcapScale = 1000
	switch magic {
	case magicPcapNano:
		r.pcapScale = 1
	case magicPcapModified:
		r.pcapHdrLen = 24
	}
	if major := r.u16(h[4:6]); major != 2 {
		return r.errAt(0, 4, fmt.Errorf("%w: pcap %d.%d", ErrBadVersion, major, r.u16(h[6:8])))
	}
	r.pcapSnap = r.u32(h[16:20])
	lt := uint16(r.u32(h[20:24])) // the upper bits carry FCS information
	r.ifaces = append(r.ifaces, Interface{LinkType: lt, SnapLen: r.pcapSnap, TSResol: 6})
	if r.pcapScale == 1 {
		r.ifaces[0].TSResol = 9
	}
	if !LinkTypeSupported(lt) {
		r.pending = append(r.pending, r.errAt(0, 20, fmt.Errorf("%w %d (%s): its packets pass through undecoded", ErrUnknownLinkType, lt, LinkTypeName(lt))))
	}
	return nil
}

func (r *Reader) pcapMaxCap() uint32 {
	if r.pcapSnap > pcapMaxEagerLen && r.pcapSnap <= maxRecordLen {
		return r.pcapSnap
	}
	return pcapMaxEagerLen
}

func (r *Reader) readPcapRecord(rec *Record) error {
	start := r.off
	num := r.num + 1
	h, err := r.peek(r.pcapHdrLen)
	if err != nil {
		if err == io.EOF {
			return io.EOF
		}
		r.num = num
		return r.errAt(num, start, err)
	}
	sec := r.u32(h[0:4])
	frac := r.u32(h[4:8])
	caplen := r.u32(h[8:12])
	wirelen := r.u32(h[12:16])
	r.num = num
	if most := r.pcapMaxCap(); caplen > most {
		if caplen <= r.pcapSnap { // a snapshot length over maxRecordLen is not trusted
			return r.errAt(num, start, fmt.Errorf("%w: captured length %d exceeds %d bytes, the most read of one record when the snapshot length (%d) is over %d", ErrBadLength, caplen, most, r.pcapSnap, maxRecordLen))
		}
		return r.errAt(num, start, fmt.Errorf("%w: captured length %d exceeds the snapshot length %d", ErrBadLength, caplen, r.pcapSnap))
	}
	if caplen > wirelen {
		return r.errAt(num, start, fmt.Errorf("%w: captured length %d exceeds the packet length %d", ErrBadLength, caplen, wirelen))
	}
	r.br.Discard(r.pcapHdrLen)
	r.off += int64(r.pcapHdrLen)
	data, err := r.next(int(caplen))
	if err != nil {
		return r.errAt(num, start, err)
	}
	if int64(frac)*r.pcapScale >= 1e9 {
		// The record is read past; it is skipped and counted as bad.
		unit := "microseconds"
		if r.pcapScale == 1 {
			unit = "nanoseconds"
		}
		return r.errAt(num, start, fmt.Errorf("%w: %d %s of a second", ErrBadTimestamp, frac, unit))
	}
	*rec = Record{
		Data:     data,
		TS:       int64(sec)*1e9 + int64(frac)*r.pcapScale,
		WireLen:  int(wirelen),
		LinkType: r.ifaces[0].LinkType,
		Number:   num,
		Offset:   start,
	}
	return nil
}
