package nat

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/wirepath/wirepath/internal/keytab"
)

// viewIndex finds the active view of a connection key: a keytab from a
// seeded 64-bit hash of the key to the view's id, the view itself
// confirming the key (a Go map hashed and compared the 38-byte keys on
// every packet). A key whose hash another key already holds, which a
// 64-bit hash makes rare, goes to a small map instead.
type viewIndex struct {
	byHash keytab.Table[uint32] // view id+1 by hash of its key
	over   map[connKey]uint32   // view id by key, for keys whose hash slot another key holds
	n      int
	seed   [3]uint64
}

// hash is k's hash: each 64-bit word of k times a seeded odd multiplier,
// summed and mixed.
func (x *viewIndex) hash(k connKey) uint64 {
	if x.seed[0] == 0 {
		x.seed = [3]uint64{rand.Uint64() | 1, rand.Uint64() | 1, rand.Uint64() | 1}
	}
	a, b := &k.ep[0], &k.ep[1]
	h := binary.LittleEndian.Uint64(a.ip[:8])*x.seed[0] +
		binary.LittleEndian.Uint64(a.ip[8:])*x.seed[1] +
		binary.LittleEndian.Uint64(b.ip[:8])*x.seed[2]
	h = mix64(h) + binary.LittleEndian.Uint64(b.ip[8:])*x.seed[0]
	var v6 uint64
	if k.v6 {
		v6 = 1
	}
	h += (uint64(a.port)<<48 | uint64(b.port)<<32 | uint64(k.proto)<<8 | v6) * x.seed[1]
	return mix64(h)
}

// get returns the id of k's view among views and whether k has one; h
// is k's hash.
func (x *viewIndex) get(views []view, k connKey, h uint64) (uint32, bool) {
	if id, ok := x.byHash.Get(h); ok && views[id-1].key.same(&k) {
		return id - 1, true
	}
	if len(x.over) == 0 {
		return 0, false
	}
	id, ok := x.over[k]
	return id, ok
}

// set makes id the view of k, which has none; h is k's hash.
func (x *viewIndex) set(k connKey, id uint32, h uint64) {
	x.n++
	if _, found := x.byHash.GetOrSet(h, id+1); !found {
		return
	}
	if x.over == nil {
		x.over = map[connKey]uint32{}
	}
	x.over[k] = id
}

// del removes k, whose view is id; h is k's hash.
func (x *viewIndex) del(k connKey, id uint32, h uint64) {
	x.n--
	if got, ok := x.byHash.Get(h); ok && got == id+1 {
		x.byHash.Delete(h)
		return
	}
	delete(x.over, k)
}

// len returns how many keys have a view.
func (x *viewIndex) len() int { return x.n }
