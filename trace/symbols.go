package trace

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// Symbols interns strings. The zero value is ready to use; Sym 0 is "".
//
// The table is built for traces with millions of distinct strings (call
// ids, ephemeral ports): the text of the strings is packed into large
// chunks, each Sym costs 8 bytes of reference and about 7 bytes of index,
// and nothing in the table holds a pointer per string, so the garbage
// collector does not walk it. Interning a string that is already in the
// table allocates nothing. Methods that only read (String, Lookup, Len) may
// be called from several goroutines at once; Intern may not.
type Symbols struct {
	refs   []symRef // by Sym-1: where the string's bytes are
	hashes []uint32 // by Sym-1: the low 32 bits of the string's hash (rehash)
	chunks [][]byte // the strings' bytes; a chunk never moves once written
	fill   int      // 1 + index of the chunk short strings go to, 0 = none
	// index is an open-addressing table of Syms with linear probing: tags
	// holds 0 for an empty slot, else 0x80 | 7 bits of the hash; slots the
	// Sym. len(tags) is 0 or a power of two.
	tags  []uint8
	slots []Sym
	// toks holds the messages' content-token sets (AddTokens, Tokens).
	toks tokenArena
}

// symRef locates one string: chunk index (16 bits), offset in the chunk
// (24 bits) and length (24 bits; refLongLen means the whole chunk).
type symRef uint64

const (
	chunkSize  = 1 << 20 // largest text chunk; strings of a quarter of it get their own
	refLongLen = 1<<24 - 1
	maxChunks  = 1 << 16
)

// symSeed makes the index's layout differ from run to run, so that no
// input can be crafted to make interning slow.
var symSeed = maphash.Comparable(maphash.MakeSeed(), 0) | 1

// hashString is a fast hash of the short strings traces are made of: two
// 64-bit words of the string (more for longer ones) mixed by a 128-bit
// multiplication, as wyhash does.
func hashString(s string) uint64 {
	const k0, k1 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	n := len(s)
	var a, b uint64
	switch {
	case n > 16:
		h := symSeed
		for i := 0; i+16 < n; i += 16 {
			h = mix64(le64(s[i:])^k0, le64(s[i+8:])^h)
		}
		a = le64(s[n-16:]) ^ h
		b = le64(s[n-8:])
	case n >= 8:
		a = le64(s)
		b = le64(s[n-8:])
	case n >= 4:
		a = uint64(le32(s))
		b = uint64(le32(s[n-4:]))
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	}
	return mix64(a^k1^symSeed, b^k0^uint64(n))
}

// le64 and le32 read the first bytes of s as a little-endian number
// without copying s.
func le64(s string) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
}

func le32(s string) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s), 4))
}

func mix64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Intern returns the Sym for s, adding s to the table if it is new.
func (s *Symbols) Intern(name string) Sym {
	if name == "" {
		return 0
	}
	h := hashString(name)
	if id, ok := s.find(h, name); ok {
		return id
	}
	return s.add(h, name)
}

// InternBytes is Intern for a byte slice; it allocates only when b is new,
// and then only when a chunk of text fills up.
func (s *Symbols) InternBytes(b []byte) Sym {
	if len(b) == 0 {
		return 0
	}
	name := unsafe.String(unsafe.SliceData(b), len(b)) // not kept: add copies it
	h := hashString(name)
	if id, ok := s.find(h, name); ok {
		return id
	}
	return s.add(h, name)
}

// Lookup returns the Sym for name and whether it is in the table.
func (s *Symbols) Lookup(name string) (Sym, bool) {
	if name == "" {
		return 0, true
	}
	return s.find(hashString(name), name)
}

// String returns the string id stands for ("" for 0 or an id out of range).
// The string shares memory with the table and stays valid as long as the
// table does.
func (s *Symbols) String(id Sym) string {
	if id == 0 || int(id) > len(s.refs) {
		return ""
	}
	return s.str(s.refs[id-1])
}

// Len returns the number of Syms in use, counting the empty Sym 0.
func (s *Symbols) Len() int { return len(s.refs) + 1 }

// size returns about how many bytes the table holds.
func (s *Symbols) size() int64 {
	n := int64(cap(s.refs))*8 + int64(cap(s.hashes))*4 + int64(cap(s.tags)) + int64(cap(s.slots))*4
	for _, c := range s.chunks {
		n += int64(cap(c))
	}
	return n
}

func (s *Symbols) str(r symRef) string {
	c := s.chunks[r>>48]
	off, n := int(r>>24&(1<<24-1)), int(r&(1<<24-1))
	if n == refLongLen {
		n = len(c)
	}
	return unsafe.String(&c[off], n)
}

// tagOf is the 7 hash bits kept in the index, marked non-empty: bits 25
// to 31, so that the 32 bits kept per string (hashes) give both a
// string's tag and its place in an index of up to 2^32 slots.
func tagOf(h uint64) uint8 { return uint8(h>>25) | 0x80 }

func (s *Symbols) find(h uint64, name string) (Sym, bool) {
	if len(s.tags) == 0 {
		return 0, false
	}
	mask := uint64(len(s.tags) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		t := s.tags[i]
		if t == 0 {
			return 0, false
		}
		if t == tag {
			id := s.slots[i]
			if s.str(s.refs[id-1]) == name {
				return id, true
			}
		}
	}
}

// roomFor reports whether the names of one more line of n bytes (at most
// eight new names) surely fit: readers check it before each line, so that
// hostile input meets ErrTooLarge rather than add's panic.
func (s *Symbols) roomFor(n int) bool {
	return len(s.refs) <= 1<<32-2-8 && len(s.chunks)+8+n/(chunkSize/4) < maxChunks
}

func (s *Symbols) add(h uint64, name string) Sym {
	if len(s.refs) >= 1<<32-2 {
		panic("trace: more than 2^32-2 distinct strings")
	}
	s.refs = append(s.refs, s.store(name))
	s.hashes = append(s.hashes, uint32(h))
	id := Sym(len(s.refs))
	if 4*(len(s.refs)+1) > 3*len(s.tags) {
		s.rehash(max(16, 2*len(s.tags)))
	}
	s.insert(h, id)
	return id
}

func (s *Symbols) insert(h uint64, id Sym) {
	mask := uint64(len(s.tags) - 1)
	i := h & mask
	for s.tags[i] != 0 {
		i = (i + 1) & mask
	}
	s.tags[i] = tagOf(h)
	s.slots[i] = id
}

func (s *Symbols) rehash(n int) {
	s.tags = make([]uint8, n)
	s.slots = make([]Sym, n)
	for i, h := range s.hashes {
		s.insert(uint64(h), Sym(i+1))
	}
}

// store copies name into the text chunks and returns its reference.
func (s *Symbols) store(name string) symRef {
	n := len(name)
	if n >= chunkSize/4 {
		// A long string gets a chunk of its own.
		s.checkChunks()
		s.chunks = append(s.chunks, []byte(name))
		return symRef(uint64(len(s.chunks)-1)<<48 | uint64(min(n, refLongLen)))
	}
	if s.fill == 0 || cap(s.chunks[s.fill-1])-len(s.chunks[s.fill-1]) < n {
		// Chunks start small (a trace of a few names stays small) and
		// double up to chunkSize.
		size := 4096
		if s.fill > 0 {
			size = min(chunkSize, 2*cap(s.chunks[s.fill-1]))
		}
		s.checkChunks()
		s.chunks = append(s.chunks, make([]byte, 0, max(size, n)))
		s.fill = len(s.chunks)
	}
	c := s.chunks[s.fill-1]
	off := len(c)
	s.chunks[s.fill-1] = append(c, name...)
	return symRef(uint64(s.fill-1)<<48 | uint64(off)<<24 | uint64(n))
}

func (s *Symbols) checkChunks() {
	if len(s.chunks) >= maxChunks {
		panic("trace: more than 64 GiB of distinct strings")
	}
}
