package nat

import (
	"net/netip"

	"github.com/wirepath/wirepath/pcapio"
)

// ApplyStats are the Canonicalizer's counters: every packet it was handed
// was rewritten, left alone because it is already canonical or not
// translated, or skipped as a fragment (see Canonicalizer.Lookup).
type ApplyStats struct {
	Packets   int64 // packets handed to Rewrite
	Rewritten int64 // packets renamed to their canonical names
	Canonical int64 // packets of translated connections that already carry the canonical names
	Untouched int64 // packets of connections not translated, or outside a translation's time
	Fragments int64 // IP fragments, left alone
	// ByTable counts the packets (among Rewritten) renamed by the table
	// the user gave (Given), not by a learned translation.
	ByTable int64

	// Set by a Streamer, which renames while it learns (see Streamer):
	// Late counts packets the final table renames that were handed on
	// before their translation was learned (among Untouched), Provisional
	// packets renamed while learning that the final table renames
	// otherwise or not at all (among Rewritten), and Early packets that
	// left the delay early because it held too many bytes.
	Late        int64
	Provisional int64
	Early       int64
}

// Canonicalizer renames the packets of translated connections to their
// canonical names: for every endpoint its inside (real) name. Both copies of
// a translated segment then carry the same 4-tuple, seq and payload and
// reach flows as two observations of one segment. It only changes Src,
// Dst, SrcPort and DstPort; the frame bytes, fingerprints and observations
// stay as captured. It is not safe for concurrent use (the counters).
type Canonicalizer struct {
	t     *Table
	stats ApplyStats
	// The view and the names of the last packet renamed (for Streamer),
	// and whether the given table renamed it.
	lastView  connKey
	lastCanon [2]netip.AddrPort
	lastGiven bool
}

// NewCanonicalizer returns a Canonicalizer that applies t.
func NewCanonicalizer(t *Table) *Canonicalizer { return &Canonicalizer{t: t} }

// Stats returns the counters so far.
func (c *Canonicalizer) Stats() ApplyStats { return c.stats }

// Table returns the table c applies.
func (c *Canonicalizer) Table() *Table { return c.t }

// Rewrite renames p in place if it belongs to a translated connection at
// its time and reports whether it changed anything. IP fragments are left
// alone: flows reassembles them first and then asks Lookup.
func (c *Canonicalizer) Rewrite(p *pcapio.Packet) bool {
	c.stats.Packets++
	if p.Status != pcapio.StatusOK || len(p.Obs) == 0 {
		c.stats.Untouched++
		return false
	}
	if p.IsFragment() {
		c.stats.Fragments++
		return false
	}
	key, srcSlot := connOf(p)
	return c.rewriteConn(p, key, srcSlot)
}

// rewriteConn is Rewrite's renaming of p, an IP packet not a fragment,
// whose connection key and source slot are key and srcSlot (connOf).
func (c *Canonicalizer) rewriteConn(p *pcapio.Packet, key connKey, srcSlot uint8) bool {
	e := c.t.find(key, p.TS())
	c.lastGiven = false
	if e == nil {
		return c.rewriteGiven(p)
	}
	if !e.rewrites {
		c.stats.Canonical++
		return false
	}
	c.lastView, c.lastCanon = key, e.canon
	p.Orig = origOf(p)
	src, dst := e.canon[srcSlot], e.canon[1-srcSlot]
	p.Src, p.SrcPort = src.Addr(), src.Port()
	p.Dst, p.DstPort = dst.Addr(), dst.Port()
	c.stats.Rewritten++
	return true
}

// rewriteGiven renames p with the given table, if any renames it.
func (c *Canonicalizer) rewriteGiven(p *pcapio.Packet) bool {
	if c.t.given == nil {
		c.stats.Untouched++
		return false
	}
	src, dst, ok := c.t.given.Lookup(p.Proto, netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort))
	if !ok {
		c.stats.Untouched++
		return false
	}
	p.Src, p.SrcPort = src.Addr(), src.Port()
	p.Dst, p.DstPort = dst.Addr(), dst.Port()
	c.stats.Rewritten++
	c.stats.ByTable++
	c.lastGiven = true
	return true
}

// Lookup returns the canonical names of a packet of protocol proto from src
// to dst at corrected time ts, and whether the connection was translated
// then. It is for callers that assemble packets themselves (fragments).
func (c *Canonicalizer) Lookup(proto uint8, src, dst netip.AddrPort, ts int64) (csrc, cdst netip.AddrPort, ok bool) {
	return c.t.Lookup(proto, src, dst, ts)
}

// Lookup is Canonicalizer.Lookup without counters. The learned
// translations come first, then the given table (SetGiven).
func (t *Table) Lookup(proto uint8, src, dst netip.AddrPort, ts int64) (csrc, cdst netip.AddrPort, ok bool) {
	if src.Addr().Is4() != dst.Addr().Is4() {
		return src, dst, false
	}
	s := endpoint{src.Addr().As16(), src.Port()}
	d := endpoint{dst.Addr().As16(), dst.Port()}
	k := connKey{ep: [2]endpoint{s, d}, proto: proto, v6: !src.Addr().Is4()}
	srcSlot := 0
	if d.cmp(s) < 0 {
		k.ep = [2]endpoint{d, s}
		srcSlot = 1
	}
	e := t.find(k, ts)
	if e == nil {
		return t.given.Lookup(proto, src, dst)
	}
	return e.canon[srcSlot], e.canon[1-srcSlot], true
}

// find returns the rename of view k at time ts, or nil.
func (t *Table) find(k connKey, ts int64) *applyEntry {
	es := t.apply[k]
	for i := range es {
		if es[i].from <= ts && ts <= es[i].to {
			return &es[i]
		}
	}
	return nil
}

// origOf returns pcapio.Packet.Orig for p before renaming: a hash of its
// endpoints, never 0.
func origOf(p *pcapio.Packet) uint64 {
	s, d := p.Src.As16(), p.Dst.As16()
	h := uint64(14695981039346656037)
	for _, b := range [][]byte{s[:], d[:], {byte(p.SrcPort >> 8), byte(p.SrcPort), byte(p.DstPort >> 8), byte(p.DstPort)}} {
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	return h | 1
}
