package flows

import (
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
)

// evTaker takes the label, status and evidence of the messages flows
// frames itself (HTTP/1.x, DNS): one evidence.Builder for the whole
// stage, its result copied into each message's own storage.
type evTaker struct {
	b         *evidence.Builder
	evidence  bool // keep identifiers and tokens
	maxTokens int  // 0: keep no tokens
	dnsName   []byte
	scratch   []byte
}

func newEvTaker(cfg *Config) *evTaker {
	ec := evidence.Config{MaxTokens: max(cfg.MaxTokens, 1), MaxBytes: cfg.EvidenceBytes}
	return &evTaker{b: evidence.NewBuilder(ec), evidence: cfg.Evidence, maxTokens: cfg.MaxTokens}
}

// decoderEvidence returns the evidence caps to give the protocol
// decoders.
func (cfg *Config) decoderEvidence() evidence.Config {
	return evidence.Config{MaxTokens: max(cfg.MaxTokens, 1), MaxBytes: cfg.EvidenceBytes}
}

// http reads an HTTP/1.x message's header block and the captured start
// of its body: its label and status, and its evidence into ev (which
// it reports whether it filled).
func (e *evTaker) http(kind httpKind, head, body []byte, ev *proto.Evidence) (label string, status int, has bool) {
	e.b.Reset()
	switch kind {
	case httpRequest:
		label = e.b.HTTPRequest(head, body)
	case httpResponse, httpInterim:
		label, status = e.b.HTTPResponse(head, body)
	default:
		return "", 0, false
	}
	return label, status, e.fill(ev)
}

// fill copies the builder's current message into ev, as configured, and
// reports whether it holds anything.
func (e *evTaker) fill(ev *proto.Evidence) bool {
	if !e.evidence {
		return false
	}
	ev.IDs = append(ev.IDs[:0], e.b.IDs()...)
	ev.Tokens = ev.Tokens[:0]
	if e.maxTokens > 0 {
		ev.Tokens = append(ev.Tokens, e.b.Tokens()...)
	}
	return len(ev.IDs)+len(ev.Tokens) > 0
}

// copyEvidence copies a decoder's evidence into dst as configured (no
// tokens when MaxTokens is 0) and reports whether it holds anything.
func copyEvidence(dst, src *proto.Evidence, cfg *Config) bool {
	if src == nil || !cfg.Evidence {
		return false
	}
	dst.IDs = append(dst.IDs[:0], src.IDs...)
	dst.Tokens = dst.Tokens[:0]
	if cfg.MaxTokens > 0 {
		dst.Tokens = append(dst.Tokens, src.Tokens...)
	}
	return len(dst.IDs)+len(dst.Tokens) > 0
}

// http1Dec is a proto.Decoder of HTTP/1.x built on flows' framer, for
// the plaintext of a decrypted TLS connection (proto/tls's inner
// decoder): one Unit per HTTP message, a request's Key its ordinal on the
// connection and a response's the Key of the oldest unanswered request.
// Bytes the framer cannot frame (not HTTP, or after a loss of framing
// until the next message) are reported as KindData Units that end where
// the other direction sends.
type http1Dec struct {
	fr    [2]framer
	sh    httpShared
	next  [2]int64
	seen  [2]bool
	open  [2]bool
	start [2]int64
	kind  [2]httpKind
	label [2]string
	stat  [2]int
	hasEv [2]bool
	ev    [2]proto.Evidence

	reqs    uint64
	waiting [maxPendingReqs]uint64
	wHead   int
	wN      int

	atStart [2]bool // the open message began at a message boundary

	e    *evTaker
	out  []proto.Unit
	rd   int
	evs  []proto.Evidence // the Evidence of the Units in out
	nevs int
}

func newHTTP1Dec(e *evTaker) *http1Dec {
	d := &http1Dec{e: e}
	d.sh.reset()
	for i := range d.fr {
		d.fr[i].init(true, false)
	}
	return d
}

// begin starts a decoder call: once every Unit was taken, their storage
// is reused.
func (d *http1Dec) begin() {
	if d.rd == len(d.out) {
		d.out, d.rd, d.nevs = d.out[:0], 0, 0
	}
}

// Feed frames data, the bytes of dir's stream from offset off.
func (d *http1Dec) Feed(dir proto.Dir, off int64, data []byte) {
	if dir > proto.FromServer || len(data) == 0 {
		return
	}
	d.begin()
	if !d.seen[dir] {
		d.seen[dir], d.next[dir] = true, off
	}
	if off < d.next[dir] {
		k := min(int64(len(data)), d.next[dir]-off)
		data, off = data[k:], off+k
		if len(data) == 0 {
			return
		}
	}
	if off > d.next[dir] {
		d.frame(dir, nil, off-d.next[dir])
	}
	d.frame(dir, data, int64(len(data)))
}

// Gap tells the decoder that n bytes of dir's stream from off were lost.
func (d *http1Dec) Gap(dir proto.Dir, off, n int64) {
	if dir > proto.FromServer || n <= 0 {
		return
	}
	d.begin()
	if !d.seen[dir] {
		d.seen[dir], d.next[dir] = true, off
	}
	if end := off + n; end > d.next[dir] {
		d.frame(dir, nil, end-d.next[dir])
	}
}

// frame runs n bytes (data holds those captured, nil for a gap) through
// dir's framer, reporting each message that ends.
func (d *http1Dec) frame(dir proto.Dir, data []byte, n int64) {
	// The other side's unframed message ends where this side sends.
	if o := dir.Other(); d.open[o] && d.kind[o] == httpNone {
		d.emit(o, d.next[o])
	}
	f := &d.fr[dir]
	for pos := int64(0); pos < n; {
		if !d.open[dir] {
			f.resync()
			d.open[dir], d.start[dir], d.kind[dir] = true, d.next[dir], httpNone
			d.atStart[dir] = f.atStart()
			d.label[dir], d.stat[dir], d.hasEv[dir] = "", 0, false
		}
		var part []byte
		if pos < int64(len(data)) {
			part = data[pos:]
		}
		used, boundary, kind := f.feed(part, int(n-pos), int(dir), &d.sh)
		if used <= 0 || int64(used) > n-pos {
			used, boundary = int(n-pos), false
		}
		if kind != httpNone && d.kind[dir] == httpNone && d.atStart[dir] {
			d.kind[dir] = kind
			if d.e != nil {
				d.label[dir], d.stat[dir], d.hasEv[dir] = d.e.http(kind, f.evHead, f.evBody, &d.ev[dir])
			}
		}
		pos += int64(used)
		d.next[dir] += int64(used)
		if boundary {
			d.emit(dir, d.next[dir])
		}
	}
}

// emit reports dir's open message, which ends at end.
func (d *http1Dec) emit(dir proto.Dir, end int64) {
	d.open[dir] = false
	if end <= d.start[dir] {
		return
	}
	u := proto.Unit{Dir: dir, Start: d.start[dir], End: end, Bytes: end - d.start[dir],
		Label: d.label[dir], Status: d.stat[dir]}
	switch d.kind[dir] {
	case httpRequest:
		u.Kind = proto.KindRequest
		d.reqs++
		u.Key = d.reqs
		if d.wN == len(d.waiting) {
			d.wHead = (d.wHead + 1) % len(d.waiting)
			d.wN--
		}
		d.waiting[(d.wHead+d.wN)%len(d.waiting)] = u.Key
		d.wN++
	case httpResponse:
		u.Kind = proto.KindResponse
		if d.wN > 0 {
			u.Key = d.waiting[d.wHead]
			d.wHead = (d.wHead + 1) % len(d.waiting)
			d.wN--
		}
	case httpInterim:
		u.Kind = proto.KindControl
	default:
		u.Kind = proto.KindData
	}
	if d.hasEv[dir] && u.Kind != proto.KindControl {
		if d.nevs == len(d.evs) {
			d.evs = append(d.evs, proto.Evidence{})
		}
		ev := &d.evs[d.nevs]
		d.nevs++
		ev.IDs = append(ev.IDs[:0], d.ev[dir].IDs...)
		ev.Tokens = append(ev.Tokens[:0], d.ev[dir].Tokens...)
		u.Evidence = ev
	}
	d.out = append(d.out, u)
}

// Close reports the messages still open.
func (d *http1Dec) Close() {
	d.begin()
	for dir := proto.FromClient; dir <= proto.FromServer; dir++ {
		if d.open[dir] {
			d.emit(dir, d.next[dir])
		}
	}
}

// Next takes the next Unit.
func (d *http1Dec) Next(u *proto.Unit) bool {
	if d.rd == len(d.out) {
		return false
	}
	*u = d.out[d.rd]
	d.rd++
	return true
}

// Low returns the offset of dir's oldest byte a Unit not yet reported
// may start at.
func (d *http1Dec) Low(dir proto.Dir) int64 {
	if d.open[dir] {
		return d.start[dir]
	}
	return d.next[dir]
}
