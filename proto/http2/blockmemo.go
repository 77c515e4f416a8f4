package http2

// Header blocks' runs of indexed fields, remembered whole. A gRPC
// call's header blocks start with fields taken from the HPACK tables by
// an index of one byte each (a request's ":method", ":scheme", ":path",
// ":authority", "content-type", "te", "grpc-timeout"; a response's
// ":status" and "content-type"; its trailers' "grpc-status"), the same
// table entries call after call, though their indexes move on as the
// encoder adds entries (a request's new "traceparent"). Such a run does
// to its half what the fields' memos (fieldMemo) do one after the other,
// which depends only on which table entries they name (their refs, which
// a field's index and the table give, and which never name another
// entry). So the run is remembered by its refs, with what it did (the
// values it kept, its evidence tokens, the header list's size), and a
// block starting with the same refs replays it at once, then decodes the
// rest of its bytes as before. A run is remembered only when every one
// of its fields has its memo: fields with propagated ids (idSource),
// whose values differ from call to call, never have one.

// noBlockMemo turns the block memo off (for the tests that hold it to
// decoding field by field).
var noBlockMemo bool

// maxMemoRun is the most fields of a run remembered.
const maxMemoRun = 8

// blockMemoSlots is the size of a direction's block memo (eight sets of
// two ways).
const blockMemoSlots = 16

// maxBlockTokens is the most evidence tokens a remembered run adds.
const maxBlockTokens = 8

// blockMemo is what a run of indexed fields did to its half.
type blockMemo struct {
	refs  [maxMemoRun]uint64 // refs[:n] are the fields' refs
	hash  uint64             // of the refs
	n     uint8              // fields: 0, an empty slot
	nset  uint8              // the kept values it set: kept[:nset] into slots[:nset]
	ntok  uint8
	list  int // the header list's size it made
	slots [numKept]uint8
	kept  [numKept]string
	toks  [maxBlockTokens]uint64
}

// blockRun is the run of one-byte indexed fields a block starts with.
type blockRun struct {
	refs [maxMemoRun]uint64 // refs[:n] are its fields' refs
	n    int                // its fields (and bytes)
	hash uint64             // of its refs
}

// run finds the run of one-byte indexed fields (a byte 0x81 to 0xfe
// each, naming an entry of the tables) frag starts with, up to
// maxMemoRun of them. A dynamic entry's ref is found from its index
// alone: the table's entries are numbered in the order they were added,
// the newest being seq-1.
func (s *dirState) run(frag []byte, r *blockRun) {
	hp := s.hp
	live := uint64(len(hp.ents) - hp.head)
	newest := firstDynamicRef + hp.seq - 1
	n, hash := 0, uint64(0)
	for _, b := range frag[:min(len(frag), maxMemoRun)] {
		if b <= 0x80 || b == 0xff {
			break
		}
		ref := uint64(b & 127)
		if ref > uint64(len(staticTable)) {
			k := ref - uint64(len(staticTable)) - 1 // from the newest entry, 0 on
			if k >= live {
				break
			}
			ref = newest - k
		}
		r.refs[n] = ref
		hash = (hash ^ ref) * 0x9e3779b97f4a7c15
		n++
	}
	r.n, r.hash = n, hash
}

// blockSet returns the set of a direction's block memo that may hold a
// run of the hash: two ways, so that two runs taken in turn (a
// response's headers and trailers) do not take each other's place when
// they share a set.
func blockSet(b *[blockMemoSlots]blockMemo, hash uint64) *[2]blockMemo {
	i := int(hash>>61) * 2
	return (*[2]blockMemo)(b[i : i+2])
}

// same reports whether m remembers the run r.
func (m *blockMemo) same(r *blockRun) bool {
	if int(m.n) != r.n || m.hash != r.hash {
		return false
	}
	for i, ref := range r.refs[:r.n] {
		if m.refs[i] != ref {
			return false
		}
	}
	return true
}

// blockHit takes the run of indexed fields a header block starts with
// (frag: the block's first fragment, beginBlock called for h) as
// decoding it would, if it is remembered, and returns how many bytes it
// took (0: none). r is filled with the run, for rememberBlock.
func (s *dirState) blockHit(h *half, frag []byte, r *blockRun) int {
	r.n = 0
	if s.poisoned || noBlockMemo {
		return 0
	}
	s.run(frag, r)
	if r.n == 0 || s.blocks == nil {
		return 0
	}
	set := blockSet(s.blocks, r.hash)
	m := &set[0]
	if !m.same(r) {
		if m = &set[1]; !m.same(r) {
			return 0
		}
	}
	s.blockHits++
	s.first = false
	s.hp.first = false
	if h == nil {
		return r.n
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
	return r.n
}

// rememberBlock records what the run r, which a block just decoded
// field by field into h started with, did to h, if each of its fields
// has its memo: what the run did is then what their memos do, one after
// the other (the same fields' memoHit or emit did just that).
func (s *dirState) rememberBlock(h *half, r *blockRun) {
	if r.n == 0 || h == nil || s.poisoned || s.memo == nil {
		return
	}
	m := blockMemo{refs: r.refs, n: uint8(r.n), hash: r.hash}
	for _, ref := range r.refs[:r.n] {
		f := &s.memo[memoSlot(ref)]
		if f.ref != ref || int(m.ntok)+int(f.ntok) > maxBlockTokens {
			return
		}
		if m.list += f.size + entryOverhead; m.list > s.d.cfg.MaxHeaderList {
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
	// The new run in the set's first way, the one there moved to the
	// second.
	set := blockSet(s.blocks, r.hash)
	set[1] = set[0]
	set[0] = m
}

// setKept records that the run sets kept slot i to v (a later field of
// the run taking the place of an earlier one's value, as decoding it
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
