package gen

import (
	"slices"
	"testing"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/trace"
)

// derivedConfig: a backend looks each request's value up in a database
// by a key derived from it.
const derivedConfig = `
name: derived
seed: 9
instances: 300
clients: 4
defaults: {delay: 200us±50us, reply: 300us±100us, net: 100us±10us}
evidence:
  tokens: {per_request: 2, share: 0.9, noise: 1, values: 8}
nodes:
  web:     {addr: 10.0.1.1, port: 80}
  backend: {addr: 10.0.2.1, port: 8000}
  db:      {addr: 10.0.3.1, port: 5432, pool: 2}
tracelets:
  - name: part
    rpc:
      to: web
      calls:
        - to: backend
          calls: [{to: db, derive: true}]
`

// TestDerivedKey checks a call marked derive: it carries, besides its
// noise, none of the tokens of the call it was made for but the key
// derived from that call's value (when that call carries it: the value is
// kept with the share at every hop), the same key for the same value and
// different keys for different values; its RETURN inherits it as any
// RETURN does; every other call carries its parent's tokens as before.
func TestDerivedKey(t *testing.T) {
	out := mustGenerate(t, mustParse(t, derivedConfig))
	tr := out.Truth
	checkTruth(t, tr)
	ms := tr.Trace.Messages
	hash := func(id tokenID) uint64 { return farm.Fingerprint64([]byte(tokenText(id))) }
	values := map[uint64]tokenID{}
	for v := range tokenID(8) {
		values[hash(valueBit|v)] = v
	}
	db := tr.Trace.Intern("db")
	keyOf := map[tokenID]uint64{}
	keyed, queries := 0, 0
	for i, m := range ms {
		p := tr.Parent[i]
		if m.Kind != trace.KindCall || m.DstNode != db || p < 0 {
			continue
		}
		queries++
		ct, pt := tr.Trace.Syms.Tokens(m.Tokens), tr.Trace.Syms.Tokens(ms[p].Tokens)
		var val []tokenID
		for _, h := range pt {
			if v, ok := values[h]; ok {
				val = append(val, v)
			}
			if slices.Contains(ct, h) && !noiseHash(h) {
				t.Fatalf("query %d shares token %x with its request", i, h)
			}
		}
		var keys []uint64
		for _, h := range ct {
			if !noiseHash(h) {
				keys = append(keys, h)
			}
		}
		switch {
		case len(val) > 1:
			t.Fatalf("request of query %d carries %d values", i, len(val))
		case len(val) == 0:
			if len(keys) != 0 {
				t.Fatalf("query %d carries a key, its request no value", i)
			}
			continue
		case len(keys) != 1 || keys[0] != hash(derivedKey(valueBit|val[0])):
			t.Fatalf("query %d carries %d keys, want the one derived from value %d", i, len(keys), val[0])
		}
		keyed++
		keyOf[val[0]] = keys[0]
	}
	distinct := map[uint64]bool{}
	for _, k := range keyOf {
		distinct[k] = true
	}
	if len(keyOf) != 8 || len(distinct) != 8 {
		t.Errorf("%d values seen, %d keys: want 8 and 8", len(keyOf), len(distinct))
	}
	// the value reaches the backend's request through two hops kept with
	// share 0.9 each
	if f := float64(keyed) / float64(queries); f < 0.7 || f > 0.92 {
		t.Errorf("%d of %d queries carry a key", keyed, queries)
	}
}
