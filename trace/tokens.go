package trace

import (
	"errors"
	"math"
	"slices"
)

// TokenRef refers to one message's set of content-token hashes in a
// Symbols table. The zero TokenRef is the empty set.
type TokenRef uint32

// MaxTokens is the most tokens one set may hold; longer sets are cut to
// their first MaxTokens hashes in sorted order.
const MaxTokens = 255

// ErrTooManyTokens is returned by AddTokens when the table holds as many
// token sets or hashes as a TokenRef can address.
var ErrTooManyTokens = errors.New("trace: token table full")

// tokenArena stores token sets back to back: set r (from 1) is
// data[refs[r-1].off : refs[r-1].off+refs[r-1].n].
type tokenArena struct {
	data []uint64
	refs []tokenSpan
}

type tokenSpan struct {
	off uint32
	n   uint32
}

// AddTokens stores a set of token hashes and returns its reference: the
// hashes are copied, sorted and de-duplicated, and cut to MaxTokens. An
// empty set is TokenRef 0 and stores nothing. AddTokens may not be called
// concurrently with any other method.
func (s *Symbols) AddTokens(hashes []uint64) (TokenRef, error) {
	if len(hashes) == 0 {
		return 0, nil
	}
	a := &s.toks
	if len(a.refs) >= math.MaxUint32-1 || len(a.data)+len(hashes) > math.MaxUint32 {
		return 0, ErrTooManyTokens
	}
	off := len(a.data)
	a.data = append(a.data, hashes...)
	set := a.data[off:]
	slices.Sort(set)
	set = slices.Compact(set)
	if len(set) > MaxTokens {
		set = set[:MaxTokens]
	}
	a.data = a.data[:off+len(set)]
	a.refs = append(a.refs, tokenSpan{off: uint32(off), n: uint32(len(set))})
	return TokenRef(len(a.refs)), nil
}

// Tokens returns the token hashes r refers to, sorted; nil for 0 or a
// reference the table does not hold. The slice is the table's own: the
// caller must not modify it.
func (s *Symbols) Tokens(r TokenRef) []uint64 {
	if r == 0 || int(r) > len(s.toks.refs) {
		return nil
	}
	sp := s.toks.refs[r-1]
	return s.toks.data[sp.off : sp.off+sp.n : sp.off+sp.n]
}

// TokenSets returns how many token sets the table holds.
func (s *Symbols) TokenSets() int { return len(s.toks.refs) }
