package http2

import (
	"errors"
	"math"
	"unsafe"

	"golang.org/x/net/http2/hpack"
)

// hpackDecoder is an HPACK decoder (RFC 7541) of one direction's header
// blocks that allocates nothing once warm: its dynamic table keeps the
// fields' bytes in one buffer, in the order they were added, and the
// strings it passes to emit point into that buffer, the input or a
// scratch buffer, valid only during the call. It accepts, rejects and
// emits exactly what x/net's hpack.Decoder does with the same limits
// (FuzzHPACK checks it), whose API it copies: Write a header block's
// fragments, Close it.
type hpackDecoder struct {
	emit func(name, value string, ref uint64)
	// hit, if set, is offered an indexed field of one byte by its ref
	// and size (name and value bytes) before it is looked up: when it
	// reports true, it took the field as emit would have, and emit is
	// not called. (An interface, not a func: a method value would cost
	// each field a call of its wrapper as well.)
	hit fieldHitter
	// ds, if set, receives the fields in emit's place (by its
	// emitField, which emit is: a direct call, where emit's method
	// value cost each field a call of its wrapper as well).
	ds        *dirState
	maxStrLen int // longest string accepted (0: no limit)
	strLim    int // maxStrLen, or the largest int when there is no limit

	first bool   // the next field is the block's first
	buf   []byte // the input being parsed
	save  []byte // an incomplete field from the previous Write

	huff []byte // Huffman-decoded strings of the field being parsed
	name []byte // a copy of a name taken from the dynamic table

	// The dynamic table: ents[head:] oldest first, their bytes (name,
	// then value) in data, contiguous from ents[head].off on.
	ents           []hpackEntry
	head           int
	seq            uint64 // entries added so far, ever (see fieldRef)
	data           []byte
	size           uint32 // RFC 7541 size: bytes + 32 per entry
	maxSize        uint32
	allowedMaxSize uint32
}

// fieldHitter takes indexed fields by their table entry (hpackDecoder.hit).
type fieldHitter interface {
	memoHit(ref uint64, size int) bool
}

// hpackEntry is a dynamic table entry: its name and value are
// data[off:off+nlen] and data[off+nlen:off+nlen+vlen]; seq numbers it
// among all the entries the decoder ever added.
type hpackEntry struct {
	off, nlen, vlen int
	seq             uint64
}

// A field's ref, which emit receives, names the table entry an indexed
// field was read from, so that what a receiver makes of a field can be
// remembered per entry: 1 to 61 for the static table, firstDynamicRef
// plus the entry's seq for the dynamic table (never reused, even across
// resets), 0 for a literal that is not added to the table (a literal
// with incremental indexing is emitted by the ref of the entry it adds).
const firstDynamicRef = 64

// entryOverhead is what RFC 7541 adds to an entry's bytes for its size.
const entryOverhead = 32

// Errors, as x/net's decoder reports them (which error does not matter
// to the caller, only whether there is one).
var (
	errHPACKNeedMore  = errors.New("hpack: need more data")
	errHPACKInvalid   = errors.New("hpack: invalid encoding")
	errHPACKIndex     = errors.New("hpack: invalid index")
	errHPACKLength    = hpack.ErrStringLength
	errHPACKTruncated = errors.New("hpack: truncated headers")
	errHPACKOverflow  = errors.New("hpack: varint integer overflow")
	errHPACKSizeLate  = errors.New("hpack: dynamic table size update MUST occur at the beginning of a header block")
	errHPACKSizeLarge = errors.New("hpack: dynamic table size update too large")
)

// staticTable is RFC 7541's static table (Appendix A), read once from
// x/net's decoder so that the two cannot disagree.
var staticTable = func() (t [61]hpack.HeaderField) {
	d := hpack.NewDecoder(4096, nil)
	for i := range t {
		f, err := d.DecodeFull([]byte{0x80 | byte(i+1)})
		if err != nil || len(f) != 1 {
			panic("http2: x/net's HPACK decoder has no static table")
		}
		t[i] = f[0]
	}
	return t
}()

// newHPACK returns a decoder whose dynamic table may take maxSize bytes.
func newHPACK(maxSize uint32, maxStrLen int, emit func(name, value string, ref uint64)) *hpackDecoder {
	h := &hpackDecoder{emit: emit, maxStrLen: maxStrLen, strLim: maxStrLen}
	if maxStrLen == 0 {
		h.strLim = math.MaxInt
	}
	h.reset(maxSize)
	return h
}

// reset empties the decoder, as a new one with a table of maxSize bytes.
func (h *hpackDecoder) reset(maxSize uint32) {
	h.first = true
	h.buf, h.save = nil, h.save[:0]
	h.ents, h.head, h.data, h.size = h.ents[:0], 0, h.data[:0], 0
	h.maxSize, h.allowedMaxSize = maxSize, maxSize
}

// setAllowedMaxDynamicTableSize sets the largest table size the encoder
// may choose by a size update.
func (h *hpackDecoder) setAllowedMaxDynamicTableSize(v uint32) { h.allowedMaxSize = v }

// Close ends a header block: an incomplete field is an error.
func (h *hpackDecoder) Close() error {
	if len(h.save) > 0 {
		h.save = h.save[:0]
		return errHPACKTruncated
	}
	h.first = true
	return nil
}

// Write decodes a fragment of a header block. A field cut by the end of
// p is kept for the next Write.
func (h *hpackDecoder) Write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if len(h.save) == 0 {
		h.buf = p
	} else {
		h.save = append(h.save, p...)
		h.buf, h.save = h.save, h.save[:0]
	}
	// The input in a local while fields are taken by hit (a slice
	// stored in h costs a write barrier check per byte), in h.buf for
	// field.
	buf := h.buf
	h.buf = nil
	for i := 0; i < len(buf); {
		if b := buf[i]; b&128 != 0 && b != 255 && h.hit != nil {
			// The field, if it is one that indexed would emit, is
			// offered to hit (an index into buf: reslicing it costs
			// more, with buf kept across the call).
			if ref, size, longest := h.indexedRef(uint64(b & 127)); ref != 0 && longest <= h.strLim && h.hit.memoHit(ref, size) {
				i++
				h.first = false
				continue
			}
		}
		h.buf = buf[i:]
		err := h.field()
		buf, h.buf, i = h.buf, nil, 0
		if err == errHPACKNeedMore {
			const varIntOverhead = 8 // as x/net
			if h.maxStrLen != 0 && int64(len(buf)) > 2*(int64(h.maxStrLen)+varIntOverhead) {
				return errHPACKLength
			}
			// Keep the incomplete field (buf may be save's own bytes:
			// append moves them to its front).
			h.save = append(h.save[:0], buf...)
			return nil
		}
		h.first = false
		if err != nil {
			return err
		}
	}
	return nil
}

// field decodes one field representation at the start of h.buf.
func (h *hpackDecoder) field() error {
	b := h.buf[0]
	switch {
	case b&128 != 0:
		return h.indexed()
	case b&192 == 64:
		return h.literal(6, true)
	case b&240 == 0, b&240 == 16:
		return h.literal(4, false)
	case b&224 == 32:
		return h.sizeUpdate()
	}
	return errHPACKInvalid
}

// indexed decodes an indexed field.
func (h *hpackDecoder) indexed() error {
	idx, rest, err := readVarInt(7, h.buf)
	if err != nil {
		return err
	}
	name, value, ok := h.at(idx)
	if !ok {
		return errHPACKIndex
	}
	h.buf = rest
	ref := idx
	if idx > uint64(len(staticTable)) {
		ref = firstDynamicRef + h.ents[len(h.ents)-int(idx-uint64(len(staticTable)))].seq
	}
	return h.callEmit(name, value, ref)
}

// indexedRef returns the ref, the size (name and value bytes) and the
// longer string's length of the field at index i of the tables, or a ref
// of 0 when there is none. (Small enough to be inlined in Write.)
func (h *hpackDecoder) indexedRef(i uint64) (ref uint64, size, longest int) {
	if i-1 < uint64(len(staticSizes)) {
		f := &staticSizes[i-1]
		return i, int(f.size), int(f.longest)
	}
	n := i - uint64(len(staticSizes)) - 1 // from the newest entry, 0 on
	if n >= uint64(len(h.ents)-h.head) {
		return 0, 0, 0
	}
	e := &h.ents[len(h.ents)-1-int(n)]
	return firstDynamicRef + e.seq, e.nlen + e.vlen, max(e.nlen, e.vlen)
}

// staticSizes are the static table's fields' sizes (name and value
// bytes) and their longer string's length, for indexedRef.
var staticSizes = func() (t [len(staticTable)]struct{ size, longest uint16 }) {
	for i, f := range staticTable {
		t[i].size, t[i].longest = uint16(len(f.Name)+len(f.Value)), uint16(max(len(f.Name), len(f.Value)))
	}
	return t
}()

// literal decodes a literal field with an n-bit name index, added to the
// table if indexed.
func (h *hpackDecoder) literal(n byte, indexed bool) error {
	nameIdx, buf, err := readVarInt(n, h.buf)
	if err != nil {
		return err
	}
	var name string
	var rawName []byte
	nameHuff := false
	if nameIdx > 0 {
		var ok bool
		if name, ok = h.nameAt(nameIdx); !ok {
			return errHPACKIndex
		}
	} else if rawName, nameHuff, buf, err = h.readString(buf); err != nil {
		return err
	}
	rawValue, valueHuff, buf, err := h.readString(buf)
	if err != nil {
		return err
	}
	if indexed && nameIdx > 0 && valueHuff {
		return h.literalToTable(nameIdx, name, rawValue, buf)
	}
	// Room for both decoded strings, so that the second does not move
	// the first (Huffman codes are at least 5 bits long; appendHuffman
	// wants 4 bytes more).
	if need := (len(rawName)+len(rawValue))*8/5 + 4; cap(h.huff) < need {
		h.huff = make([]byte, 0, max(need, 256))
	}
	h.huff = h.huff[:0]
	if nameIdx == 0 {
		if name, err = h.decodeString(rawName, nameHuff); err != nil {
			return err
		}
	}
	value, err := h.decodeString(rawValue, valueHuff)
	if err != nil {
		return err
	}
	h.buf = buf
	if indexed {
		if nameIdx > uint64(len(staticTable)) && len(h.data)+len(name)+len(value) > cap(h.data) {
			// A name from the dynamic table, which add is about to
			// move (compact): copied first. (While data has room, add
			// appends to it without moving its bytes, the name's
			// among them.)
			h.name = append(h.name[:0], name...)
			name = view(h.name)
		}
		h.add(name, value)
		return h.emitAdded(name, value)
	}
	return h.callEmit(name, value, 0)
}

// emitAdded emits a field literal just added to the table. It is now
// the table's newest entry (unless it was larger than the table):
// emitted by its ref, so that what the receiver makes of it is
// remembered for the entry's indexed fields to come (an entry the
// encoder evicted and adds again is at once as cheap to index as
// before). Its bytes stay where they are until the next field is added,
// even if evict dropped the entry at once.
func (h *hpackDecoder) emitAdded(name, value string) error {
	if n := len(h.ents); h.head < n && h.ents[n-1].seq == h.seq-1 {
		return h.callEmit(name, value, firstDynamicRef+h.seq-1)
	}
	return h.callEmit(name, value, 0)
}

// literalToTable ends literal for a field added to the table whose name
// is indexed (name, at nameIdx) and whose value is Huffman-coded (raw):
// the value is decoded straight into the table's bytes, after a copy of
// the name, where literal decoded it into h.huff and add copied it (a
// traceparent's every call: its memmove and the append's tests). buf is
// the block's bytes after the field.
func (h *hpackDecoder) literalToTable(nameIdx uint64, name string, raw, buf []byte) error {
	// Room for the name and the longest value raw may hold (codes are
	// at least 5 bits long; appendHuffman wants 4 bytes more), made as
	// add makes it.
	if need := len(name) + len(raw)*8/5 + 4; len(h.data)+need > cap(h.data) {
		if nameIdx > uint64(len(staticTable)) {
			// A name from the dynamic table, which compact moves.
			h.name = append(h.name[:0], name...)
			name = view(h.name)
		}
		h.compact(need)
	}
	off := len(h.data)
	h.data = append(h.data, name...)
	data, err := appendHuffman(h.data, raw)
	if err == nil && h.maxStrLen != 0 && len(data)-off-len(name) > h.maxStrLen {
		err = errHPACKLength
	}
	if err != nil {
		h.data = h.data[:off]
		return err
	}
	h.data = data
	h.buf = buf
	name = view(data[off : off+len(name)])
	value := view(data[off+len(name):])
	h.entry(off, len(name), len(value))
	// emitAdded and callEmit without their calls: the entry just added is
	// the newest (seq-1) unless evict dropped it at once, and its value
	// was held to the limit above.
	if h.maxStrLen != 0 && len(name) > h.maxStrLen {
		return errHPACKLength
	}
	ref := uint64(0)
	if h.head < len(h.ents) {
		ref = firstDynamicRef + h.seq - 1
	}
	if h.ds != nil {
		h.ds.emitField(name, value, ref)
	} else {
		h.emit(name, value, ref)
	}
	return nil
}

// sizeUpdate decodes a dynamic table size update.
func (h *hpackDecoder) sizeUpdate() error {
	if !h.first && h.size > 0 {
		return errHPACKSizeLate
	}
	size, buf, err := readVarInt(5, h.buf)
	if err != nil {
		return err
	}
	if size > uint64(h.allowedMaxSize) {
		return errHPACKSizeLarge
	}
	h.maxSize = uint32(size)
	h.evict()
	h.buf = buf
	return nil
}

// callEmit hands a field to emit, if its strings are within the limit.
func (h *hpackDecoder) callEmit(name, value string, ref uint64) error {
	if h.maxStrLen != 0 && (len(name) > h.maxStrLen || len(value) > h.maxStrLen) {
		return errHPACKLength
	}
	if h.ds != nil {
		h.ds.emitField(name, value, ref)
	} else {
		h.emit(name, value, ref)
	}
	return nil
}

// readString reads a string literal's length and bytes from p.
func (h *hpackDecoder) readString(p []byte) (b []byte, huff bool, rest []byte, err error) {
	if len(p) == 0 {
		return nil, false, p, errHPACKNeedMore
	}
	huff = p[0]&128 != 0
	n, p, err := readVarInt(7, p)
	if err != nil {
		return nil, false, p, err
	}
	if h.maxStrLen != 0 && n > uint64(h.maxStrLen) {
		return nil, false, nil, errHPACKLength
	}
	if uint64(len(p)) < n {
		return nil, false, p, errHPACKNeedMore
	}
	return p[:n], huff, p[n:], nil
}

// decodeString returns a string literal's text: b itself, or decoded
// into h.huff (after what is there already, which does not move: literal
// made room for both of a field's strings).
func (h *hpackDecoder) decodeString(b []byte, huff bool) (string, error) {
	if !huff {
		return view(b), nil
	}
	start := len(h.huff)
	var err error
	if h.huff, err = appendHuffman(h.huff, b); err != nil {
		return "", err
	}
	s := h.huff[start:]
	if h.maxStrLen != 0 && len(s) > h.maxStrLen {
		return "", errHPACKLength
	}
	return view(s), nil
}

// view returns b as a string without copying it.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// at returns the field at index i of the static and dynamic tables.
func (h *hpackDecoder) at(i uint64) (name, value string, ok bool) {
	if i == 0 {
		return "", "", false
	}
	if i <= uint64(len(staticTable)) {
		f := &staticTable[i-1]
		return f.Name, f.Value, true
	}
	n := len(h.ents) - h.head
	if i > uint64(n+len(staticTable)) {
		return "", "", false
	}
	e := h.ents[len(h.ents)-int(i-uint64(len(staticTable)))]
	return view(h.data[e.off : e.off+e.nlen]), view(h.data[e.off+e.nlen : e.off+e.nlen+e.vlen]), true
}

// nameAt returns the name of the field at index i of the static and
// dynamic tables (at's name, without making its value).
func (h *hpackDecoder) nameAt(i uint64) (string, bool) {
	if i-1 < uint64(len(staticTable)) {
		return staticTable[i-1].Name, true
	}
	n := i - uint64(len(staticTable)) - 1 // from the newest entry, 0 on
	if i == 0 || n >= uint64(len(h.ents)-h.head) {
		return "", false
	}
	e := &h.ents[len(h.ents)-1-int(n)]
	return view(h.data[e.off : e.off+e.nlen]), true
}

// add adds a field to the dynamic table and evicts what no longer fits.
// name and value must not point into data unless data has room for
// both (then appending them does not move data's bytes).
func (h *hpackDecoder) add(name, value string) {
	n := len(name) + len(value)
	if len(h.data)+n > cap(h.data) {
		h.compact(n)
	}
	off := len(h.data)
	h.data = append(h.data, name...)
	h.data = append(h.data, value...)
	h.entry(off, len(name), len(value))
}

// entry adds the entry of the field whose name and value (of nlen and
// vlen bytes) were just appended to data at off, and evicts what no
// longer fits.
func (h *hpackDecoder) entry(off, nlen, vlen int) {
	n := nlen + vlen
	if h.head > 0 && h.head >= len(h.ents)/2 {
		k := copy(h.ents, h.ents[h.head:])
		h.ents, h.head = h.ents[:k], 0
	}
	h.ents = append(h.ents, hpackEntry{off: off, nlen: nlen, vlen: vlen, seq: h.seq})
	h.seq++
	h.size += uint32(n) + entryOverhead
	h.evict()
}

// compact makes room for n more bytes in data: the live entries' bytes
// move to its front, or to a larger buffer when they would fill more than
// half of it (so that a move follows at least as many bytes added as it
// moves). The strings being added never point into data (see literal).
func (h *hpackDecoder) compact(n int) {
	base := len(h.data)
	if h.head < len(h.ents) {
		base = h.ents[h.head].off
	}
	live := len(h.data) - base
	if live+n > cap(h.data)/2 {
		nd := make([]byte, live, max(2*(live+n), 4096))
		copy(nd, h.data[base:])
		h.data = nd
	} else {
		h.data = h.data[:copy(h.data, h.data[base:])]
	}
	for i := h.head; i < len(h.ents); i++ {
		h.ents[i].off -= base
	}
}

// evict drops the oldest entries until the table fits its size.
func (h *hpackDecoder) evict() {
	for h.size > h.maxSize && h.head < len(h.ents) {
		e := h.ents[h.head]
		h.size -= uint32(e.nlen+e.vlen) + entryOverhead
		h.head++
	}
	if h.head == len(h.ents) {
		h.ents, h.head, h.data = h.ents[:0], 0, h.data[:0]
	}
}

// readVarInt reads an HPACK integer with an n-bit prefix (RFC 7541
// section 5.1), as x/net does (including its overflow limit).
func readVarInt(n byte, p []byte) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, p, errHPACKNeedMore
	}
	i := uint64(p[0]) & (1<<n - 1)
	if i < 1<<n-1 {
		return i, p[1:], nil
	}
	orig := p
	p = p[1:]
	var m uint64
	for len(p) > 0 {
		b := p[0]
		p = p[1:]
		i += uint64(b&127) << m
		if b&128 == 0 {
			return i, p, nil
		}
		m += 7
		if m >= 63 {
			return 0, orig, errHPACKOverflow
		}
	}
	return 0, orig, errHPACKNeedMore
}
