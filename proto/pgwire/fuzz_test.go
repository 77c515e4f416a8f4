package pgwire

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
	q := msg('Q', "SELECT a FROM t WHERE b = 'x'\x00")
	resp := rowDesc + row("x") + msg('C', "SELECT 1\x00") + ready
	// Start-up, a simple query and its response.
	f.Add(Script(C(hello), S(authOK), C(q), S(resp)))
	// SSLRequest refused, start-up, pipelined extended protocol.
	f.Add(Script(C(startup(codeSSL, "")), S("N"), C(hello), S(authOK),
		C(msg('P', "s\x00SELECT 1\x00", u16(0))+msg('B', "\x00s\x00", u16(0), u16(1), u32(1), "7", u16(0))+msg('E', "\x00", u32(0))+msg('S')+msg('S')),
		S(msg('1')+msg('2')+row("1")+msg('C', "SELECT 1\x00")+ready+ready)))
	// COPY in and out, a notification, an error.
	f.Add(Script(C(hello), S(authOK), C(msg('Q', "COPY t FROM STDIN\x00")), S(msg('G', "\x00", u16(0))), C(msg('d', "x")+msg('c')),
		S(msg('C', "COPY 1\x00")+ready+msg('A', u32(1), "c\x00p\x00")+msg('E', "C42P01\x00\x00")+ready)))
	// Gaps in a body and across headers.
	f.Add(Script(C(hello), S(authOK), C(q[:7]), G(0, 5), C(q[12:]+q), G(1, 9), S(resp)))
	// Replication start (CopyBoth) and garbage.
	f.Add(Script(C(hello), S(authOK), C(msg('Q', "START_REPLICATION 0/0\x00")), S(msg('W', "\x00", u16(0))+"\xff\xff")))
	f.Fuzz(func(t *testing.T, script []byte) {
		CheckScript(t, func() *Decoder { return NewDecoder(Config{MaxPending: 8}) },
			func(d *Decoder) error { st := d.Stats(); return st.Check() }, script)
	})
}
