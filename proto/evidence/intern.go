package evidence

import "sync"

// Limits of the interning table shared by all decoders.
const (
	maxInterned      = 1 << 14 // distinct strings kept
	maxInternedBytes = 1 << 20 // bytes of them
)

var interned struct {
	sync.RWMutex
	m     map[string]string
	bytes int
	// misses counts strings allocated because the table was full.
	misses int64
}

// Intern returns a string equal to b. Labels repeat across messages and
// connections, so the strings are shared through a table bounded at 16384
// strings and 1 MiB: a string already in it costs no allocation; once the
// table is full, new strings are allocated each time (InternMisses).
func Intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	interned.RLock()
	s, ok := interned.m[string(b)]
	interned.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	interned.Lock()
	defer interned.Unlock()
	if t, ok := interned.m[s]; ok {
		return t
	}
	if len(interned.m) >= maxInterned || interned.bytes+len(s) > maxInternedBytes {
		interned.misses++
		return s
	}
	if interned.m == nil {
		interned.m = make(map[string]string)
	}
	interned.m[s] = s
	interned.bytes += len(s)
	return s
}

// InternMisses returns how many strings Intern allocated because its
// table was full.
func InternMisses() int64 {
	interned.RLock()
	defer interned.RUnlock()
	return interned.misses
}
