package http2

import "encoding/binary"

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
// entry). So the run is remembered with what it did (the values it
// kept, its evidence tokens, the header list's size), and a block
// starting with a run that names the same entries replays it at once,
// then decodes the rest of its bytes as before. A run is remembered
// only when every one of its fields has its memo: fields with
// propagated ids (idSource), whose values differ from call to call,
// never have one.
//
// A run is recognised by its bytes, eight at a time, without finding
// its refs: an index names the same dynamic entry as before if it grew
// by the number of entries added since (seq's growth), and the entry is
// still in the table. So a memo keeps the run's bytes when it was
// decoded, which of them index the dynamic table, the table's seq then,
// and the oldest entry it names.

// noBlockMemo turns the block memo off (for the tests that hold it to
// decoding field by field).
var noBlockMemo bool

// maxMemoRun is the most fields of a run remembered (one uint64).
const maxMemoRun = 8

// blockMemoSlots is the size of a direction's block memo, whose runs
// are all looked at (a direction has a few: a connection's methods, a
// response's headers and trailers).
const blockMemoSlots = 8

// maxBlockTokens is the most evidence tokens a remembered run adds.
const maxBlockTokens = 8

// blockMemo is what a run of indexed fields did to its half.
type blockMemo struct {
	key    uint64 // the run's bytes when decoded, the first in the low byte
	mask   uint64 // 0xff in the run's bytes
	dyn    uint64 // 0x01 in the bytes that index the dynamic table
	seq    uint64 // the table's seq when decoded
	minRef uint64 // the oldest dynamic entry it names (a ref)
	room   uint64 // how much its dynamic indexes may grow and stay one byte
	n      uint8  // fields: 0, an empty slot
	after  uint8  // the slot blockHit took after this one, the last time it took this one
	nset   uint8  // the kept values it set: kept[:nset] into slots[:nset]
	ntok   uint8
	list   int // the header list's size it made
	slots  [numKept]uint8
	kept   [numKept]string
	toks   [maxBlockTokens]uint64
}

// blockRun is the run of one-byte indexed fields a block starts with.
type blockRun struct {
	refs [maxMemoRun]uint64 // refs[:n] are its fields' refs
	n    int                // its fields (and bytes)
	seq  uint64             // the table's seq when it was found
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
	n := 0
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
		n++
	}
	r.n, r.seq = n, hp.seq
}

// firstBytes returns up to eight of frag's first bytes, the first in the
// low byte, zeros past its end.
func firstBytes(frag []byte) uint64 {
	// A fragment shorter than eight bytes (a response's block, its
	// trailers') by two reads that overlap, each byte ORed at its place
	// once or twice, rather than a loop over its bytes.
	le := binary.LittleEndian
	switch n := len(frag); {
	case n >= 8:
		return le.Uint64(frag)
	case n >= 4:
		return uint64(le.Uint32(frag)) | uint64(le.Uint32(frag[n-4:]))<<(8*(n-4))
	case n >= 2:
		return uint64(le.Uint16(frag)) | uint64(le.Uint16(frag[n-2:]))<<(8*(n-2))
	case n == 1:
		return uint64(frag[0])
	}
	return 0
}

// ends reports whether the run m remembers is the whole of the one frag
// starts with: the byte after it, if any, starts no one-byte indexed
// field. (A shorter run, as the first block after an entry was added
// again has, would otherwise be taken for longer ones.)
func (m *blockMemo) ends(frag []byte) bool {
	n := int(m.n)
	return n == maxMemoRun || n == len(frag) || frag[n] <= 0x80 || frag[n] == 0xff
}

// blockHit takes the run of indexed fields a header block starts with
// (frag: the block's first fragment, beginBlock called for h) as
// decoding it would, if one that names the same entries is remembered,
// and returns how many bytes it took (0: none).
func (s *dirState) blockHit(h *half, frag []byte) int {
	if s.blocks == nil || s.poisoned || len(frag) == 0 {
		return 0
	}
	hp := s.hp
	cur := firstBytes(frag)
	oldest := firstDynamicRef + hp.seq // past the newest entry: none is older
	if hp.head < len(hp.ents) {
		oldest = firstDynamicRef + hp.ents[hp.head].seq
	}
	// The slots and the table's seq in locals: the store to a slot's n
	// below made the loop load both again for each slot.
	blocks, seq := s.blocks, hp.seq
	// The slot taken after the one taken last, the last time that one
	// was taken, is tried first (a response's headers and its trailers,
	// a connection's calls of one method, one after the other), then
	// all of them, in order. Two slots that both match name the same
	// entries, whose memos are the same: which one is taken does not
	// change what is replayed.
	last := s.blockLast
	j := int(blocks[last&(blockMemoSlots-1)].after & (blockMemoSlots - 1))
	if b := &blocks[j]; b.n == 0 || b.minRef < oldest || !b.matches(cur, seq, frag) {
		j = -1
		for i := range blocks {
			b := &blocks[i]
			if b.n == 0 {
				continue
			}
			if b.minRef < oldest {
				b.n = 0 // an entry it names was evicted: it is of no more use
				continue
			}
			if b.matches(cur, seq, frag) {
				j = i
				break
			}
		}
		if j < 0 {
			return 0
		}
	}
	blocks[last&(blockMemoSlots-1)].after, s.blockLast = uint8(j), uint8(j)
	return s.replayBlock(h, &blocks[j])
}

// matches reports whether the run m remembers is the one frag (whose
// first bytes are cur) starts with, the table's seq now seq: its dynamic
// indexes grew by the entries added since, and stayed one byte (room: no
// byte carries into the next).
func (m *blockMemo) matches(cur, seq uint64, frag []byte) bool {
	grow := seq - m.seq
	return grow <= m.room && cur&m.mask == m.key+grow*m.dyn && m.ends(frag)
}

// replayBlock does to h what the run m remembers did, as blockHit
// found it at the start of a block, and returns its bytes.
func (s *dirState) replayBlock(h *half, m *blockMemo) int {
	hp := s.hp
	s.blockHits++
	s.first = false
	hp.first = false
	if h == nil {
		return int(m.n)
	}
	s.list = m.list
	for j := range m.slots[:m.nset] {
		i, v := m.slots[j], m.kept[j]
		s.kept[i], h.kept[i] = v, v
	}
	if m.ntok > 0 && s.d.cfg.Evidence {
		// An Evidence made only for tokens: one left empty comes to
		// nothing (finishEvidence), so a response's blocks, which have
		// none, make none.
		if h.ev == nil {
			h.ev = s.d.newEvidence()
		}
		h.ev.Tokens = append(h.ev.Tokens, m.toks[:m.ntok]...)
	}
	return int(m.n)
}

// rememberBlock records what the run r, found in frag before the block
// was decoded field by field into h, did to h, if each of its fields
// has its memo: what the run did is then what their memos do, one after
// the other (the same fields' memoHit or emit did just that). It takes
// the place of the slot after the one taken last, and returns it (nil:
// not remembered). As what a field's memo does does not depend on when
// it is replayed, the run may be remembered before its block is decoded
// too (takeRun).
func (s *dirState) rememberBlock(h *half, frag []byte, r *blockRun) *blockMemo {
	if r.n == 0 || h == nil || s.poisoned || s.memo == nil || noBlockMemo {
		return nil
	}
	list, ntok := 0, 0
	minRef, maxDyn, dyn := ^uint64(0), byte(0), uint64(0)
	for i, ref := range r.refs[:r.n] {
		f := &s.memo[memoSlot(ref)]
		if f.ref != ref || ntok+int(f.ntok) > maxBlockTokens {
			return nil
		}
		if list += f.size + entryOverhead; list > s.d.cfg.MaxHeaderList {
			return nil
		}
		ntok += int(f.ntok)
		if ref >= firstDynamicRef {
			minRef, maxDyn = min(minRef, ref), max(maxDyn, frag[i])
			dyn |= 1 << (8 * i)
		}
	}
	if s.blocks == nil {
		s.blocks = new([blockMemoSlots]blockMemo)
	}
	// An empty slot, else the one after the slot taken last by this.
	j := -1
	for i := range s.blocks {
		if s.blocks[i].n == 0 {
			j = i
			break
		}
	}
	if j < 0 {
		j = s.blockNext
		s.blockNext = (s.blockNext + 1) % blockMemoSlots
	}
	m := &s.blocks[j]
	mask := ^uint64(0) >> (64 - 8*r.n)
	m.key, m.mask, m.dyn, m.seq, m.minRef, m.room = firstBytes(frag)&mask, mask, dyn, r.seq, minRef, ^uint64(0)
	if m.dyn != 0 {
		m.room = uint64(0xfe - maxDyn)
	}
	m.n, m.nset, m.ntok, m.list = uint8(r.n), 0, 0, list
	for _, ref := range r.refs[:r.n] {
		f := &s.memo[memoSlot(ref)]
		if f.slot >= 0 {
			m.setKept(f.slot, f.kept)
		}
		for _, t := range f.toks[:f.ntok] { // a few: no call of memmove
			m.toks[m.ntok] = t
			m.ntok++
		}
	}
	return m
}

// takeRun decodes a header block's first fragment whose run of indexed
// fields blockHit did not take: when every field of the run has its
// memo (the run names entries the encoder added again since: their
// literals made their memos, see hpackDecoder.literal), the run is
// remembered first and taken as blockHit takes one, without decoding
// its fields one by one; otherwise the block is decoded field by field
// and its run remembered if it can be then.
func (d *Decoder) takeRun(s *dirState, h *half, frag []byte) {
	r := &s.brun
	r.n = 0
	if !s.poisoned {
		s.run(frag, r)
	}
	m := s.rememberBlock(h, frag, r)
	if m != nil && m.ends(frag) {
		d.writeBlock(s, frag[s.replayBlock(h, m):])
		return
	}
	d.writeBlock(s, frag)
	if m == nil {
		s.rememberBlock(h, frag, r)
	}
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
