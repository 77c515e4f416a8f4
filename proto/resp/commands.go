package resp

// keyKind says which arguments of a command are keys.
type keyKind uint8

const (
	keyFirst   keyKind = iota // argument 1 (GET key, SET key value, HGET key field, ...)
	keyNone                   // no keys, or arguments never taken (AUTH, HELLO: credentials)
	keyAll                    // every argument (MGET, DEL, SUBSCRIBE, BLPOP, RENAME, ...)
	keyPairs                  // arguments 1, 3, 5, ... (MSET key value ...)
	keyNumkeys                // argument 2 is the count of keys that follow (EVAL)
)

var keyKinds = func() map[string]keyKind {
	m := map[string]keyKind{}
	for _, c := range []string{"AUTH", "HELLO", "PING", "ECHO", "INFO", "SELECT", "MULTI", "EXEC",
		"DISCARD", "QUIT", "CLIENT", "CONFIG", "CLUSTER", "COMMAND", "DBSIZE", "FLUSHALL", "FLUSHDB",
		"TIME", "SAVE", "BGSAVE", "BGREWRITEAOF", "LASTSAVE", "SCRIPT", "FUNCTION", "ACL", "SLOWLOG",
		"LATENCY", "MONITOR", "SYNC", "PSYNC", "REPLICAOF", "SLAVEOF", "SHUTDOWN", "DEBUG", "RESET",
		"WAIT", "READONLY", "READWRITE", "ROLE", "SWAPDB", "MODULE", "SCAN", "MIGRATE", "RANDOMKEY",
		"REPLCONF", "FAILOVER", "LOLWUT", "MEMORY"} {
		m[c] = keyNone
	}
	for _, c := range []string{"MGET", "DEL", "UNLINK", "EXISTS", "TOUCH", "WATCH", "SINTER", "SUNION",
		"SDIFF", "PFCOUNT", "PFMERGE", "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "BLPOP", "BRPOP",
		"BZPOPMIN", "BZPOPMAX", "RENAME", "RENAMENX", "SMOVE", "RPOPLPUSH", "BRPOPLPUSH", "LMOVE",
		"BLMOVE", "COPY", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE",
		"SUNSUBSCRIBE", "XREAD", "XREADGROUP", "PUBLISH", "SPUBLISH"} {
		m[c] = keyAll
	}
	for _, c := range []string{"MSET", "MSETNX"} {
		m[c] = keyPairs
	}
	for _, c := range []string{"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"} {
		m[c] = keyNumkeys
	}
	return m
}()

// containers are the commands whose label includes the subcommand
// ("redis CLIENT SETNAME").
var containers = map[string]bool{"CLIENT": true, "CONFIG": true, "CLUSTER": true, "COMMAND": true,
	"SCRIPT": true, "MEMORY": true, "OBJECT": true, "XINFO": true, "XGROUP": true, "ACL": true,
	"FUNCTION": true, "MODULE": true, "SLOWLOG": true, "LATENCY": true, "PUBSUB": true, "DEBUG": true}

// isKey reports whether argument i (from 1) of a command of kind k is a
// key; numkeys is EVAL's key count (-1 until read).
func isKey(k keyKind, i int, numkeys int64) bool {
	switch k {
	case keyFirst:
		return i == 1
	case keyAll:
		return i >= 1
	case keyPairs:
		return i%2 == 1
	case keyNumkeys:
		return i >= 3 && int64(i-3) < numkeys
	}
	return false
}
