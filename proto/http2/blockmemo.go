package http2

// Header blocks by their bytes. A gRPC server's response headers
// (":status: 200", "content-type: application/grpc") and trailers
// ("grpc-status: 0") are, once their fields are in its HPACK table, the
// same few bytes of indexed fields call after call, and nothing in them
// changes the table. What such a block does to a half (the values it
// keeps, its evidence tokens, the header list's size) is then a function
// of its bytes and of the table's contents, so it is remembered with the
// table's generation (hpackDecoder.gen, which every change of the table
// moves on) and replayed while the table has not changed, without
// decoding the block field by field. Only blocks whose every field was
// taken by memoHit are remembered: their fields have no propagated ids
// (idSource's fields are never remembered by entry), whose values
// differ from call to call.

// noBlockMemo turns the block memo off (for the tests that hold it to
// decoding field by field).
var noBlockMemo bool

// maxMemoBlock is the longest block remembered by its bytes.
const maxMemoBlock = 8

// blockMemoSlots is the size of a direction's block memo (four sets of
// two ways).
const blockMemoSlots = 8

// maxBlockTokens is the most evidence tokens a remembered block adds.
const maxBlockTokens = 8

// blockMemo is what one header block did to its half.
type blockMemo struct {
	key   uint64 // the block's bytes, the first in the low byte
	n     uint8  // its length: 0, empty slot
	gen   uint64 // the table's generation it was decoded with
	list  int    // the header list's size it made
	nset  uint8  // the kept values it set: kept[:nset] into slots[:nset]
	ntok  uint8
	slots [numKept]uint8
	kept  [numKept]string
	toks  [maxBlockTokens]uint64
}

// blockKey returns the key of a block of 1 to maxMemoBlock bytes, or
// false when it is not a run of one-byte indexed fields (a first byte
// of 0x81 to 0xfe each), the only blocks remembered.
func blockKey(frag []byte) (uint64, bool) {
	if len(frag) == 0 || len(frag) > maxMemoBlock {
		return 0, false
	}
	var k uint64
	for i, b := range frag {
		if b <= 0x80 || b == 0xff {
			return 0, false
		}
		k |= uint64(b) << (8 * i)
	}
	return k, true
}

// blockSet returns the set of a direction's block memo that may hold
// key: two ways, so that a response's headers and trailers, taken in
// turn, do not take each other's place when their keys share a set.
func blockSet(b *[blockMemoSlots]blockMemo, key uint64) *[2]blockMemo {
	i := int(key*0x9e3779b97f4a7c15>>62) * 2
	return (*[2]blockMemo)(b[i : i+2])
}

// blockHit takes a whole header block (its HEADERS frame's fragment,
// with END_HEADERS) as decoding it would, if it is remembered with the
// table's current generation, and reports whether it did. beginBlock has
// been called for h.
func (s *dirState) blockHit(h *half, frag []byte) bool {
	if s.blocks == nil || s.poisoned {
		return false
	}
	key, ok := blockKey(frag)
	if !ok {
		return false
	}
	set := blockSet(s.blocks, key)
	m := &set[0]
	if m.key != key || int(m.n) != len(frag) || m.gen != s.hp.gen {
		if m = &set[1]; m.key != key || int(m.n) != len(frag) || m.gen != s.hp.gen {
			return false
		}
	}
	s.blockHits++
	s.first = false
	if h == nil {
		return true
	}
	s.list = m.list
	for j := range m.slots[:m.nset] {
		i, v := m.slots[j], m.kept[j]
		s.kept[i], h.kept[i] = v, v
	}
	if s.d.cfg.Evidence {
		if h.ev == nil {
			h.ev = s.d.newEvidence()
		}
		if m.ntok > 0 {
			h.ev.Tokens = append(h.ev.Tokens, m.toks[:m.ntok]...)
		}
	}
	return true
}

// rememberBlock records what the block frag, just decoded whole into
// h, did to it, if it is a run of one-byte indexed fields each of which
// memo remembers: what the block did is then what their memos do, one
// after the other (the same fields' memoHit or emit did just that).
func (s *dirState) rememberBlock(h *half, frag []byte) {
	key, ok := blockKey(frag)
	if !ok || h == nil || s.poisoned || s.over || s.memo == nil || noBlockMemo {
		return
	}
	m := blockMemo{key: key, n: uint8(len(frag)), gen: s.hp.gen, list: s.list}
	for _, b := range frag {
		ref, _, _ := s.hp.indexedRef(uint64(b & 127))
		f := &s.memo[memoSlot(ref)]
		if ref == 0 || f.ref != ref || int(m.ntok)+int(f.ntok) > maxBlockTokens {
			return
		}
		if f.slot >= 0 {
			m.setKept(f.slot, f.kept)
		}
		m.ntok += uint8(copy(m.toks[m.ntok:], f.toks[:f.ntok]))
	}
	if s.blocks == nil {
		s.blocks = new([blockMemoSlots]blockMemo)
	}
	// The new block in the way not used last (set[1], the older one
	// moved there).
	set := blockSet(s.blocks, key)
	set[1] = set[0]
	set[0] = m
}

// setKept records that the block sets kept slot i to v (a later field of
// the block taking the place of an earlier one's value, as decoding it
// does).
func (m *blockMemo) setKept(i int8, v string) {
	for j := range m.slots[:m.nset] {
		if m.slots[j] == uint8(i) {
			m.kept[j] = v
			return
		}
	}
	m.slots[m.nset], m.kept[m.nset] = uint8(i), v
	m.nset++
}
