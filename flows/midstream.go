package flows

import (
	"bytes"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/memcache"
	"github.com/wirepath/wirepath/proto/pgwire"
	presp "github.com/wirepath/wirepath/proto/resp"
)

// Mid-stream pickup. A TCP connection whose handshake the capture did not
// see (open before it began: pooled connections) is picked up from its
// middle: its chunks are held (within the bounds of detection) while each
// direction is searched, for each protocol a proto decoder can resume
// (proto.Resumer), for a message boundary: a position where the
// protocol's resynchronisation test passes and from which a scratch
// decoder, fed the direction's held bytes as the client's or the
// server's, reads at least midConfirmUnits well-formed messages, each
// starting where the test passes, and no malformed one. The protocol and
// which side is the client follow from the confirmed roles; the
// connection is decided once both directions are confirmed, or one is and
// the other stays silent or unconfirmed past midSettle held chunks. The
// decoder then resumes there (Resume): a confirmed direction's bytes
// before its boundary are skipped and counted (MidSkippedBytes), an
// unconfirmed one searches as after a loss, and pairing starts at the
// first request only when the client's first held byte starts one and
// the server's direction is in sync (or silent), else suspended.
// HTTP/1.x (a chunk that begins with a start line) is left to flows'
// framer, which on such connections seeks a start line at each message
// instead of giving up at the first.

// midApps are the protocols a connection seen from its middle is tried
// as, after the one its port suggests (midPortApp).
var midApps = [...]App{AppRedis, AppMemcache, AppPostgres}

// Bounds of the search.
const (
	// midConfirmUnits is how many consecutive well-formed messages
	// confirm a boundary.
	midConfirmUnits = 2
	// midMaxTries bounds the candidate boundaries tried per direction,
	// protocol and role at each held chunk.
	midMaxTries = 64
	// midBudget bounds the bytes the scratch decoders read per
	// connection while searching.
	midBudget = 2 << 20
	// midSettle is how many chunks are held before a connection with
	// one confirmed direction is decided without the other.
	midSettle = 16
)

// midScan is where the search for a boundary of one direction, read as
// one role of one protocol, stands.
type midScan struct {
	pos   int32 // the first candidate not ruled out, from the direction's first held byte
	found bool  // pos is a confirmed boundary
	dead  bool  // the search gave up (midBudget)
}

// midState is a connection's mid-stream search.
type midState struct {
	scan [len(midApps)][2][2]midScan // by protocol, half and role (proto.Dir)
	work int64                       // bytes read by scratch decoders
}

// midResumable reports whether app is one of midApps.
func midResumable(app App) bool {
	for _, m := range midApps {
		if m == app {
			return true
		}
	}
	return false
}

// midPortApp returns the protocol Config.Ports names for a port of c, or
// else the one a well-known port suggests (6379 Redis, 11211 memcached,
// 5432 PostgreSQL), or AppNone: the protocol tried first.
func (a *Assembler) midPortApp(c *conn) App {
	for s := range 2 {
		if app, ok := a.cfg.Ports[c.ep[s].Port()]; ok {
			return app
		}
	}
	for s := range 2 {
		switch c.ep[s].Port() {
		case 6379:
			return AppRedis
		case 11211:
			return AppMemcache
		case 5432:
			return AppPostgres
		}
	}
	return AppNone
}

// detectMid holds a chunk of a connection seen from its middle and
// searches the held bytes; it decides the connection when a protocol is
// confirmed, or gives up (flows' own cutting, with HTTP/1.x framing)
// at a gap or past the bounds of holding. It reports whether ch was held.
func (a *Assembler) detectMid(c *conn, d int, ch *chunk, off int64) bool {
	pr := &c.pr
	if ch.gap || len(pr.held) >= maxHeldChunks || heldBytes(pr.held)+int64(ch.n) > maxHeldBytes {
		a.midEnd(c)
		return false
	}
	a.hold(c, d, ch, off)
	if len(ch.data) < int(ch.n) {
		a.midEnd(c)
		return true
	}
	if midHTTP(ch.data) {
		a.st.MidStreamHTTP++
		a.decideHeld(c, AppNone)
		return true
	}
	a.midSearch(c, false)
	return true
}

// midEnd decides a connection seen from its middle with what its held
// bytes confirmed (at a gap, the bounds of holding, or its end). Where
// nothing was confirmed but Config.Ports names the protocol, its decoder
// takes the connection up searching in both directions, as after a loss.
func (a *Assembler) midEnd(c *conn) {
	if a.midSearch(c, true) {
		return
	}
	if app, ok := a.portApp(c); ok && c.caller >= 0 {
		a.decide(c, app, true)
		if r, ok := c.pr.dec.(proto.Resumer); ok {
			r.Resume([2]bool{}, false)
		}
		a.releaseHeld(c)
		return
	}
	a.midNone(c)
}

// midNone gives a connection seen from its middle to flows' own cutting.
func (a *Assembler) midNone(c *conn) {
	a.st.MidStreamUndecoded++
	a.decideHeld(c, AppNone)
}

// midHTTP reports whether a chunk of a connection seen from its middle
// begins with an HTTP/1.x request or status line: flows' framer frames
// the connection. Only a chunk's first line counts (a new message begins
// a new write), so that HTTP carried inside another protocol's value (a
// cached page) does not pass.
func midHTTP(b []byte) bool {
	nl := bytes.IndexByte(b[:min(len(b), maxLineBytes)], '\n')
	return nl >= 0 && validStartLine(b[:nl])
}

// midSearch advances the search of c's held bytes for each protocol and
// decides c when one is confirmed (or, final, has any confirmed
// direction); it reports whether it decided.
func (a *Assembler) midSearch(c *conn, final bool) bool {
	pr := &c.pr
	var start [2]int64
	a.midBytes(c, &start)
	hint := a.midPortApp(c)
	for _, first := range [2]bool{true, false} {
		for i, app := range midApps {
			if (app == hint) != first {
				continue
			}
			for h := range 2 {
				for r := range 2 {
					a.midAdvance(c, app, &pr.mid.scan[i][h][r], a.midBuf[h], proto.Dir(r))
				}
			}
			client, bd, ok := midRoles(&pr.mid.scan[i])
			if !ok || serverSide(c.key.Port(0), c.key.Port(1)) == client {
				// No roles yet, or a client on the well-known port.
				continue
			}
			both := bd[0] >= 0 && bd[1] >= 0
			if both || final || len(pr.held) >= midSettle {
				a.midDecide(c, app, client, bd, start)
				return true
			}
		}
	}
	return false
}

// midBytes gathers each half's held bytes into a.midBuf, up to its first
// gap or truncated chunk; start is each half's stream offset of them.
func (a *Assembler) midBytes(c *conn, start *[2]int64) {
	var stop [2]bool
	for h := range 2 {
		a.midBuf[h] = a.midBuf[h][:0]
		start[h] = -1
	}
	for i := range c.pr.held {
		hc := &c.pr.held[i]
		h := hc.d
		if stop[h] {
			continue
		}
		if hc.ch.gap {
			stop[h] = true
			continue
		}
		if start[h] < 0 {
			start[h] = hc.off
		}
		a.midBuf[h] = append(a.midBuf[h], hc.ch.data...)
		if len(hc.ch.data) < int(hc.ch.n) {
			stop[h] = true
		}
	}
}

// midRoles returns the client half and each half's confirmed boundary
// (-1 if none) of one protocol's search, when its confirmed roles agree.
func midRoles(sc *[2][2]midScan) (client int, bd [2]int64, ok bool) {
	client = -1
	bd = [2]int64{-1, -1}
	for h := range 2 {
		asClient, asServer := sc[h][proto.FromClient].found, sc[h][proto.FromServer].found
		if asClient == asServer {
			continue // neither, or both: says nothing of the roles
		}
		c := h
		if asServer {
			c = 1 - h
		}
		if client >= 0 && client != c {
			return -1, bd, false
		}
		client = c
	}
	if client < 0 {
		return -1, bd, false
	}
	if s := sc[client][proto.FromClient]; s.found {
		bd[client] = int64(s.pos)
	}
	if s := sc[1-client][proto.FromServer]; s.found && !sc[1-client][proto.FromClient].found {
		bd[1-client] = int64(s.pos)
	}
	return client, bd, true
}

// midAdvance moves one search on through b, the half's held bytes, as
// role of app: it tries the candidates from the first one not yet ruled
// out, up to midMaxTries of them, and stops at the first confirmed. A
// candidate that needs more bytes (a message longer than what is held)
// does not stop the search of the later ones.
func (a *Assembler) midAdvance(c *conn, app App, s *midScan, b []byte, role proto.Dir) {
	if s.found || s.dead {
		return
	}
	dec := a.midOracle(app)
	front := true
	for p, tries := int(s.pos), 0; ; p, tries = p+1, tries+1 {
		p = midCandidate(dec, app, role, b, p)
		if p < 0 {
			if front {
				s.pos = int32(len(b))
			}
			return
		}
		if c.pr.mid.work > midBudget {
			s.dead = true
			return
		}
		if tries >= midMaxTries {
			return
		}
		c.pr.mid.work += int64(len(b) - p)
		switch a.midConfirm(dec, role, b[p:]) {
		case proto.StartYes:
			s.pos, s.found = int32(p), true
			return
		case proto.StartMore:
			if front {
				s.pos, front = int32(p), false
			}
		default:
			if front {
				s.pos = int32(p + 1)
			}
		}
	}
}

// midCandidate returns the first position from p on in b where a message
// of role may start (the protocol's test passes or needs more bytes; for
// the line-based protocols, at a line start), or -1.
func midCandidate(dec proto.Resumer, app App, role proto.Dir, b []byte, p int) int {
	for ; p < len(b); p++ {
		text := app == AppRedis || app == AppMemcache && b[p] < 0x80
		if text && p > 0 && b[p-1] != '\n' {
			continue
		}
		if dec.Starts(role, b[p:]) != proto.StartNo {
			return p
		}
	}
	return -1
}

// midConfirm reads b, from a candidate boundary, with a scratch decoder
// as role: StartYes when it holds at least midConfirmUnits messages, one
// after the other with no byte between them, each starting where the
// protocol's test passes, and nothing malformed; StartNo when it does
// not; StartMore when b ends first.
func (a *Assembler) midConfirm(dec proto.Resumer, role proto.Dir, b []byte) proto.Verdict {
	dec.(interface{ Reset() }).Reset()
	dec.Resume([2]bool{true, true}, true)
	dec.Feed(role, 0, b)
	units, next := 0, int64(0)
	bad := dec.Losses(role) > 0
	u := &a.midUnit
	for dec.Next(u) {
		switch {
		case bad || u.Dir != role:
			continue
		case u.Start != next || u.End > int64(len(b)):
			bad = true // bytes between messages: skipped, not framed
			continue
		}
		next = u.End
		if u.Kind == proto.KindControl {
			continue
		}
		if dec.Starts(role, b[u.Start:]) != proto.StartYes {
			bad = true
			continue
		}
		units++
	}
	switch {
	case bad:
		return proto.StartNo
	case units >= midConfirmUnits:
		return proto.StartYes
	}
	return proto.StartMore
}

// midOracle returns the scratch decoder of app the search reads with.
func (a *Assembler) midOracle(app App) proto.Resumer {
	if d := a.midDec[app]; d != nil {
		return d
	}
	var d proto.Resumer
	switch app {
	case AppRedis:
		d = presp.NewDecoder(presp.Config{NoEvidence: true})
	case AppMemcache:
		d = memcache.NewDecoder(memcache.Config{NoEvidence: true})
	default:
		d = pgwire.NewDecoder(pgwire.Config{NoEvidence: true})
	}
	a.midDec[app] = d
	return d
}

// midDecide decides a connection seen from its middle as app with client
// as its client half: the decoder resumes at each half's confirmed
// boundary bd (from the half's first held byte at start; -1: none, the
// decoder searches), and the held chunks are framed, the bytes before a
// boundary skipped and counted.
func (a *Assembler) midDecide(c *conn, app App, client int, bd, start [2]int64) {
	pr := &c.pr
	c.setCaller(client, callerPayload)
	a.decide(c, app, false)
	res, ok := pr.dec.(proto.Resumer)
	if !ok {
		a.releaseHeld(c)
		return
	}
	var sync [2]bool
	var at [2]int64
	for h := range 2 {
		at[h] = -1
		if bd[h] >= 0 {
			sync[pr.dirOf(h)] = true
			at[h] = start[h] + bd[h]
		}
	}
	// The client's first held byte starts a request and the server's
	// bytes are in sync (or none came): no response is owed to a request
	// the decoder will not see, unless the client pipelined across the
	// capture's start.
	paired := bd[client] == 0 && (bd[1-client] >= 0 || start[1-client] < 0)
	res.Resume(sync, paired)
	ps := &a.pst[app]
	ps.MidStream++
	a.st.MidStreamDecoded++
	for i := range pr.held {
		hc := &pr.held[i]
		if !hc.ch.gap {
			a.st.HeldBytes -= int64(hc.ch.n)
		}
		a.midRelease(c, hc, at[hc.d])
		a.pool.freeBytes(hc.ch.data)
		a.pool.freeObs(hc.ch.obs)
		*hc = heldChunk{}
	}
	pr.held = pr.held[:0]
}

// midRelease frames a held chunk, skipping its bytes before at (the
// half's boundary, -1 for none).
func (a *Assembler) midRelease(c *conn, hc *heldChunk, at int64) {
	k := int64(0)
	if at > hc.off {
		k = min(at-hc.off, int64(hc.ch.n))
	}
	if k > 0 {
		ps := &a.pst[c.pr.app]
		ps.Bytes += k
		ps.UnframedBytes += k
		ps.MidSkippedBytes += k
		a.st.DecodedBytes += k
		a.st.MidSkippedBytes += k
	}
	if k == int64(hc.ch.n) {
		return
	}
	ch := hc.ch
	ch.data = ch.data[min(k, int64(len(ch.data))):]
	ch.n -= uint32(k)
	ch.seq = ch.seq.Add(seqnum.Size(k))
	a.route(c, hc.d, &ch, hc.off+k)
}
