package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/trace"
)

// Evidence the generator writes into messages (trace.Evidence), drawn
// from a random stream of its own so that asking for it never changes the
// paths or their timing:
//   - Conn and Seq: each message's connection and its ordinal on it in
//     its direction (EvidenceSpec.Conns);
//   - Sender and Receiver: the threads of traced nodes (NodeSpec.Traced);
//   - ReqID: the instance's request identifier on calls to nodes that
//     propagate one (NodeSpec.IDs), as "x-request-id:HEX" or
//     "traceparent:HEX" (the W3C trace id);
//   - Label: the call's label and its return's status (EvidenceSpec.Labels
//     or Call.Label);
//   - Tokens: content tokens (EvidenceSpec.Tokens), hashed as the
//     pipeline hashes the tokens it finds in payloads (go-farm
//     Fingerprint64 of the token's text).
//
// The --pcap captures carry the same evidence in real payloads (HTTP
// request lines and headers, Redis and memcached commands with keys), so
// that the pipeline can find it where the trace has it.

// tokenID is a content token: a request's own (below maxVocabulary), its
// value (valueBit), a key derived from a value (derivedBit) or noise
// (noiseBit).
type tokenID = uint32

const (
	noiseBit   tokenID = 1 << 31
	valueBit   tokenID = 1 << 30
	derivedBit tokenID = 1 << 29
	// maxVocabulary bounds the vocabularies of the requests' own tokens
	// and of their values, below the bits that mark the other tokens
	maxVocabulary = 1 << 28
)

// tokenText returns the text of a token as payloads carry it.
func tokenText(id tokenID) string {
	switch {
	case id&noiseBit != 0:
		return "n" + strconv.Itoa(int(id&^noiseBit))
	case id&valueBit != 0:
		return "v" + strconv.Itoa(int(id&^valueBit))
	case id&derivedBit != 0:
		return fmt.Sprintf("k%07x", id&^derivedBit)
	}
	return fmt.Sprintf("u%07x", id)
}

// derivedKey is the key a call marked Derive carries for the value token
// v: a fixed function of the value (a multiplicative hash, one to one on
// the values' range), as a database key is of a query parameter.
func derivedKey(v tokenID) tokenID {
	return derivedBit | (v&^valueBit)*0x9e3779b1&(maxVocabulary-1)
}

// evState is the evidence of the instance being generated.
type evState struct {
	rng     *rand.Rand
	reqID   string       // hex, drawn per instance
	ids     [2]trace.Sym // interned "x-request-id:..." and "traceparent:..." of the instance
	toks    []tokenID    // the request's tokens
	arena   []tokenID    // every message's tokens, back to back
	hash    []uint64     // scratch
	payload []byte       // scratch
}

// beginInstance draws the instance's request identifier and tokens.
func (s *state) beginInstance() {
	if !s.p.ev.any {
		return
	}
	e := &s.ev
	e.reqID = fmt.Sprintf("%016x%016x", e.rng.Uint64(), e.rng.Uint64())
	e.ids = [2]trace.Sym{}
	e.toks = e.toks[:0]
	if tk := s.p.ev.tokens; tk != nil {
		for range tk.PerRequest {
			e.toks = append(e.toks, tokenID(e.rng.IntN(tk.Vocabulary)))
		}
		if tk.Values > 0 {
			e.toks = append(e.toks, valueBit|tokenID(e.rng.IntN(tk.Values)))
		}
	}
}

// reqIDSym returns the instance's identifier as a call to node carries it.
func (s *state) reqIDSym(node int) trace.Sym {
	k := 0
	switch s.p.nodes[node].ids {
	case "":
		return 0
	case "traceparent":
		k = 1
	}
	if s.ev.ids[k] == 0 {
		s.ev.ids[k] = s.t.Intern(s.p.nodes[node].ids + ":" + s.ev.reqID)
	}
	return s.ev.ids[k]
}

// inherit appends to the arena the tokens of a message made for a message
// carrying from (each kept with the configured share) and its noise, and
// returns where they are in the arena.
func (s *state) inherit(from []tokenID) [2]uint32 {
	tk := s.p.ev.tokens
	e := &s.ev
	off := uint32(len(e.arena))
	if tk == nil {
		return [2]uint32{off, 0}
	}
	for _, t := range from {
		if e.rng.Float64() < tk.Share {
			e.arena = append(e.arena, t)
		}
	}
	for range tk.Noise {
		e.arena = append(e.arena, noiseBit|tokenID(e.rng.IntN(tk.NoiseVocabulary)))
	}
	return [2]uint32{off, uint32(len(e.arena)) - off}
}

// derive appends to the arena the key derived from the value token among
// from (none when from carries no value) and the noise of a message, and
// returns where they are in the arena.
func (s *state) derive(from []tokenID) [2]uint32 {
	e := &s.ev
	off := uint32(len(e.arena))
	for _, t := range from {
		if t&valueBit != 0 && t&noiseBit == 0 {
			e.arena = append(e.arena, derivedKey(t))
		}
	}
	at := s.inherit(nil)
	return [2]uint32{off, at[0] + at[1] - off}
}

// tokens returns the tokens at a place in the arena.
func (s *state) tokens(at [2]uint32) []tokenID { return s.ev.arena[at[0] : at[0]+at[1]] }

// tokenRef stores the hashes of the tokens at a place in the arena in the
// trace's token table.
func (s *state) tokenRef(at [2]uint32) (trace.TokenRef, error) {
	if at[1] == 0 {
		return 0, nil
	}
	h := s.ev.hash[:0]
	for _, t := range s.tokens(at) {
		h = append(h, farm.Fingerprint64([]byte(tokenText(t))))
	}
	s.ev.hash = h
	return s.t.Syms.AddTokens(h)
}

// protocol returns what node speaks ("http" by default).
func (s *state) protocol(node int) string {
	if p := s.p.nodes[node].protocol; p != "" {
		return p
	}
	return "http"
}

// callLabel returns the label of a call of c to node callee, or "" when
// the trace carries no labels.
func (s *state) callLabel(c *ccall, callee int) string {
	if c.label != "" {
		return c.label
	}
	if !s.p.ev.labels {
		return ""
	}
	switch s.protocol(callee) {
	case "redis":
		return "redis GET"
	case "memcached":
		return "memcached get"
	}
	return "GET /" + s.p.nodes[callee].group
}

// returnLabel returns the label of the RETURN of a call labelled
// callLabel to node callee.
func (s *state) returnLabel(callLabel string, callee int, failed bool) string {
	if callLabel == "" {
		return ""
	}
	switch s.protocol(callee) {
	case "redis", "memcached":
		if failed {
			return "ERR"
		}
		return ""
	}
	if failed {
		return "500"
	}
	return "200"
}
