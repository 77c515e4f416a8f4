package resp

import (
	"testing"

	. "github.com/wirepath/wirepath/proto/internal/dectest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// FuzzDecoder feeds scripted connections (see dectest.Steps) and checks
// that Units stay ordered and paired, that the accounting balances, and
// that feeding the same bytes one at a time gives the same Units.
func FuzzDecoder(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "flows/testdata/*.pcap*")
	get := cmd("GET", "user:42")
	// Pipelined commands and their replies.
	f.Add(Script(C(get+cmd("SET", "k", "v")), S("$5\r\nhello\r\n+OK\r\n")))
	// Inline command, error reply.
	f.Add(Script(C("PING\r\nINCR x\n"), S("+PONG\r\n-ERR not an integer\r\n")))
	// RESP2 pub/sub with a message and unsubscribe of all.
	f.Add(Script(C(cmd("SUBSCRIBE", "a")), S("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n"), C(cmd("UNSUBSCRIBE")), S("*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n")))
	// RESP3 types: map, attribute, push, set, double, boolean, null, verbatim, big number.
	f.Add(Script(C(cmd("HELLO", "3")), S("%1\r\n+a\r\n~2\r\n,1.5\r\n#t\r\n|1\r\n+k\r\n_\r\n=7\r\ntxt:abc\r\n>1\r\n(123\r\n")))
	// A gap inside a bulk string and one across a header.
	f.Add(Script(C("*2\r\n$3\r\nGET\r\n$10\r\n01"), G(0, 6), C("45\r\n"), S("$-1\r\n"), G(1, 3), S("+OK\r\n")))
	// CLIENT REPLY OFF and MONITOR.
	f.Add(Script(C(cmd("CLIENT", "REPLY", "OFF")+cmd("MONITOR")), S("+OK\r\n+1 \"GET\"\r\n")))
	// Garbage in both directions.
	f.Add([]byte("\x01\xff\xfe*\x00\x02\x03$-2\r\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		CheckScript(t, func() *Decoder { return NewDecoder(Config{MaxPending: 8}) },
			func(d *Decoder) error { st := d.Stats(); return st.Check() }, script)
	})
}
