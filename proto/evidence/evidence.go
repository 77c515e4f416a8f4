// Package evidence extracts what one protocol message's content says about
// causality, for every decoder under proto and for flows' HTTP/1.x framer:
// propagated request identifiers (traceparent, X-Request-ID, b3, ...),
// content tokens hashed with go-farm's Fingerprint64 into a small sorted
// set, and one short human label per message ("GET /item/{id}",
// "SELECT users").
//
// A Builder collects one message at a time under a Config's caps: Reset
// starts a message, Token, ID, Header and the protocol helpers (HTTPRequest,
// JSON, Query, SQL, Printable) add to it, and Fill copies the result into
// a caller-owned proto.Evidence. Nothing here reads past the bytes it is
// given; a value that is too long, binary or malformed is skipped and
// counted in Stats, never an error. In steady state a Builder allocates
// nothing per message except the Value strings of the identifiers it
// finds and labels it has not seen before (Intern).
package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	farm "github.com/dgryski/go-farm"
	"github.com/wirepath/wirepath/proto"
)

// Config bounds the evidence taken from one message. Zero fields take the
// defaults of DefaultConfig.
type Config struct {
	// MaxBytes is how many bytes of a message's content are looked at for
	// tokens: the first MaxBytes of a binary protocol's message, of an
	// SQL text or of an HTTP body (an HTTP request line and header block
	// are always read whole; flows bounds them).
	MaxBytes int
	// MaxTokens is the most tokens kept per message: the first MaxTokens
	// distinct ones in message order; later ones are counted (OverCap).
	MaxTokens int
	// MaxIDs is the most propagated identifiers kept per message.
	MaxIDs int
	// MaxValue is the longest value (token or identifier) taken; longer
	// ones are skipped and counted (Long).
	MaxValue int
}

// DefaultConfig returns the default caps: 512 bytes, 32 tokens, 8 ids,
// values of at most 128 bytes.
func DefaultConfig() Config {
	return Config{MaxBytes: 512, MaxTokens: 32, MaxIDs: 8, MaxValue: 128}
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.MaxBytes <= 0 {
		c.MaxBytes = d.MaxBytes
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = d.MaxTokens
	}
	if c.MaxIDs <= 0 {
		c.MaxIDs = d.MaxIDs
	}
	if c.MaxValue <= 0 {
		c.MaxValue = d.MaxValue
	}
	return c
}

// Stats counts what a Builder was offered and what became of it. Every
// candidate token ends in exactly one of Tokens, Duplicates, OverCap,
// Long and Binary; every candidate identifier in IDs, IDDuplicates,
// IDsOverCap or Malformed.
type Stats struct {
	Messages   int64 // messages begun (Reset)
	Candidates int64 // non-empty token values offered
	Tokens     int64 // tokens kept
	Duplicates int64 // tokens already in the message's set
	OverCap    int64 // tokens dropped because the set was full
	Long       int64 // token values longer than MaxValue, skipped
	Binary     int64 // token values with control bytes, skipped

	IDCandidates int64 // identifier headers offered (known names and high-entropy values)
	IDs          int64 // identifiers kept
	IDDuplicates int64 // identifiers already in the message
	IDsOverCap   int64 // identifiers dropped because MaxIDs were kept
	Malformed    int64 // identifier values that did not parse (a bad traceparent, ...)
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Messages += o.Messages
	s.Candidates += o.Candidates
	s.Tokens += o.Tokens
	s.Duplicates += o.Duplicates
	s.OverCap += o.OverCap
	s.Long += o.Long
	s.Binary += o.Binary
	s.IDCandidates += o.IDCandidates
	s.IDs += o.IDs
	s.IDDuplicates += o.IDDuplicates
	s.IDsOverCap += o.IDsOverCap
	s.Malformed += o.Malformed
}

// ErrUnbalanced is returned by Check when the counters do not add up.
var ErrUnbalanced = errors.New("evidence: counters do not balance")

// Check verifies that every candidate is accounted for.
func (s Stats) Check() error {
	if t := s.Tokens + s.Duplicates + s.OverCap + s.Long + s.Binary; t != s.Candidates {
		return fmt.Errorf("%w: %d token candidates, %d accounted for", ErrUnbalanced, s.Candidates, t)
	}
	if t := s.IDs + s.IDDuplicates + s.IDsOverCap + s.Malformed; t != s.IDCandidates {
		return fmt.Errorf("%w: %d id candidates, %d accounted for", ErrUnbalanced, s.IDCandidates, t)
	}
	return nil
}

// Builder collects the evidence of one message at a time. The zero
// Builder is not ready: use NewBuilder. A Builder is not safe for
// concurrent use.
type Builder struct {
	cfg   Config
	toks  []uint64 // sorted, distinct
	ids   []proto.ID
	buf   []byte // scratch for normalised values and labels
	Stats Stats  // cumulative over all messages
}

// NewBuilder returns a Builder with the caps of cfg (zero fields default).
func NewBuilder(cfg Config) *Builder {
	cfg = cfg.WithDefaults()
	return &Builder{
		cfg:  cfg,
		toks: make([]uint64, 0, cfg.MaxTokens),
		ids:  make([]proto.ID, 0, min(cfg.MaxIDs, 4)),
		buf:  make([]byte, 0, 256),
	}
}

// Config returns the Builder's caps.
func (b *Builder) Config() Config { return b.cfg }

// Reset begins a new message: the token set and identifiers are emptied.
func (b *Builder) Reset() {
	b.toks = b.toks[:0]
	b.ids = b.ids[:0]
	b.Stats.Messages++
}

// Len returns how many tokens the current message has.
func (b *Builder) Len() int { return len(b.toks) }

// Full reports whether the token set is at its cap.
func (b *Builder) Full() bool { return len(b.toks) >= b.cfg.MaxTokens }

// Tokens returns the current message's token set, sorted; it is reused.
func (b *Builder) Tokens() []uint64 { return b.toks }

// IDs returns the current message's identifiers; the slice is reused.
func (b *Builder) IDs() []proto.ID { return b.ids }

// Token adds the hash of v to the message's token set. Empty values are
// ignored; values longer than MaxValue, holding control bytes or not
// valid UTF-8 are skipped and counted as binary. It reports whether v is now in the set.
func (b *Builder) Token(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	b.Stats.Candidates++
	if len(v) > b.cfg.MaxValue {
		b.Stats.Long++
		return false
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			b.Stats.Binary++
			return false
		}
	}
	if !utf8.Valid(v) {
		b.Stats.Binary++
		return false
	}
	return b.insert(farm.Fingerprint64(v))
}

// Key adds a cache or store key as a token and, when separators (':',
// '/', '|', '#', ',', ';') join several parts in it, each part as a token
// too: a key such as "cart:u14" or "user:42:profile" holds the values
// ("u14", "42") that the request it was made for carried in its path or
// query, which are tokens of their own there. It reports whether the
// whole key is now in the set.
func (b *Builder) Key(k []byte) bool {
	ok := b.Token(k)
	if bytes.IndexFunc(k, isKeySep) < 0 {
		return ok
	}
	start := 0
	for i, c := range k {
		if isKeySep(rune(c)) {
			b.Token(k[start:i])
			start = i + 1
		}
	}
	b.Token(k[start:])
	return ok
}

// isKeySep reports whether r separates the parts of a key.
func isKeySep(r rune) bool {
	switch r {
	case ':', '/', '|', '#', ',', ';':
		return true
	}
	return false
}

// insert adds hash h to the sorted set.
func (b *Builder) insert(h uint64) bool {
	i, found := slices.BinarySearch(b.toks, h)
	if found {
		b.Stats.Duplicates++
		return true
	}
	if len(b.toks) >= b.cfg.MaxTokens {
		b.Stats.OverCap++
		return false
	}
	b.toks = append(b.toks, 0)
	copy(b.toks[i+1:], b.toks[i:])
	b.toks[i] = h
	b.Stats.Tokens++
	return true
}

// Int adds the decimal text of v as a token, so that an integer sent in
// binary (a PostgreSQL int8 parameter) matches the same number in text.
func (b *Builder) Int(v int64) {
	b.buf = strconv.AppendInt(b.buf[:0], v, 10)
	b.Token(b.buf)
}

// UUID adds the canonical text form (8-4-4-4-12 lowercase hex) of a
// 16-byte binary UUID as a token.
func (b *Builder) UUID(u []byte) {
	if len(u) != 16 {
		return
	}
	b.buf = appendUUID(b.buf[:0], u)
	b.Token(b.buf)
}

func appendUUID(dst, u []byte) []byte {
	const hexd = "0123456789abcdef"
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexd[c>>4], hexd[c&15])
	}
	return dst
}

// ID adds a propagated identifier with an already normalised value. The
// source string is kept as given (use constants or Intern); the value is
// copied into a new string. Duplicates and identifiers beyond MaxIDs are
// counted and dropped.
func (b *Builder) ID(source string, value []byte) {
	b.Stats.IDCandidates++
	b.addID(source, value)
}

func (b *Builder) addID(source string, value []byte) {
	if len(value) == 0 || len(value) > b.cfg.MaxValue {
		b.Stats.Malformed++
		return
	}
	for _, id := range b.ids {
		if id.Source == source && id.Value == string(value) {
			b.Stats.IDDuplicates++
			return
		}
	}
	if len(b.ids) >= b.cfg.MaxIDs {
		b.Stats.IDsOverCap++
		return
	}
	b.ids = append(b.ids, proto.ID{Source: source, Value: string(value)})
	b.Stats.IDs++
}

// Fill copies the current message's evidence into ev, reusing ev's slices.
func (b *Builder) Fill(ev *proto.Evidence) {
	ev.Tokens = append(ev.Tokens[:0], b.toks...)
	ev.IDs = append(ev.IDs[:0], b.ids...)
}

// Clone returns a copy of ev that shares no memory with it, for a caller
// that keeps a decoder's Evidence past the decoder's next call.
func Clone(ev *proto.Evidence) *proto.Evidence {
	if ev == nil {
		return nil
	}
	c := &proto.Evidence{}
	if len(ev.Tokens) > 0 {
		c.Tokens = append([]uint64(nil), ev.Tokens...)
	}
	if len(ev.IDs) > 0 {
		c.IDs = append([]proto.ID(nil), ev.IDs...)
	}
	return c
}

// Pool hands out Evidence values that are reused call after call, so that a
// decoder fills its Units' Evidence without allocating in steady state.
// Reset it at the start of each decoder call: the Evidence handed out
// before are then reused.
type Pool struct {
	evs []*proto.Evidence
	n   int
}

// Reset makes every Evidence handed out so far available again.
func (p *Pool) Reset() { p.n = 0 }

// Take returns an Evidence filled from b's current message.
func (p *Pool) Take(b *Builder) *proto.Evidence {
	if p.n == len(p.evs) {
		p.evs = append(p.evs, &proto.Evidence{})
	}
	ev := p.evs[p.n]
	p.n++
	b.Fill(ev)
	return ev
}
