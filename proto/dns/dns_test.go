package dns

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	. "github.com/wirepath/wirepath/proto/internal/dectest"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// build encodes a message with golang.org/x/net/dns/dnsmessage.
func build(t testing.TB, id uint16, response bool, rcode dnsmessage.RCode, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, Response: response, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	if response && rcode == dnsmessage.RCodeSuccess {
		b.StartAnswers()
		b.AResource(dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{10, 0, 0, 1}})
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// tcp prefixes a message with its length.
func tcp(m []byte) string {
	return string(binary.BigEndian.AppendUint16(nil, uint16(len(m)))) + string(m)
}

func TestParseAndLabel(t *testing.T) {
	b := evidence.NewBuilder(evidence.Config{})
	b.Reset()
	m, ok := Parse(build(t, 7, false, 0, "WWW.Example.COM.", dnsmessage.TypeAAAA), nil)
	if !ok || m.ID != 7 || m.Response || string(m.Name) != "www.example.com" || Label(m, nil) != "dns AAAA www.example.com" {
		t.Fatalf("%+v %q", m, Label(m, nil))
	}
	AddEvidence(b, m)
	if len(b.Tokens()) != 1 {
		t.Error("no name token")
	}
	r, ok := Parse(build(t, 7, true, dnsmessage.RCodeNameError, "nope.example.", dnsmessage.TypeA), nil)
	if !ok || !r.Response || Label(r, nil) != "NXDOMAIN" || r.Rcode != 3 {
		t.Fatalf("%+v", r)
	}
	if _, ok := Parse([]byte("\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c"), nil); ok {
		t.Error("a name pointing at itself parsed")
	}
}

func run(t *testing.T, steps []Step) ([]proto.Unit, Stats) {
	t.Helper()
	d := NewDecoder(Config{})
	units := Run(d, steps, nil)
	Check(t, units, false)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	for i, cut := range []func(int) []int{Bytewise, Random(1)} {
		if u2 := Run(NewDecoder(Config{}), steps, cut); !Same(units, u2) {
			t.Fatalf("cut %d gives other units:\n%s\nwant:\n%s", i, Lines(u2), Lines(units))
		}
	}
	return units, st
}

func TestDecoder(t *testing.T) {
	q1 := tcp(build(t, 0, false, 0, "a.example.", dnsmessage.TypeA))
	q2 := tcp(build(t, 2, false, 0, "b.example.", dnsmessage.TypeMX))
	r1 := tcp(build(t, 0, true, 0, "a.example.", dnsmessage.TypeA))
	r2 := tcp(build(t, 2, true, dnsmessage.RCodeServerFailure, "b.example.", dnsmessage.TypeMX))
	axfr := tcp(build(t, 9, false, 0, "zone.example.", dnsmessage.TypeAXFR))
	xr := tcp(build(t, 9, true, 0, "zone.example.", dnsmessage.TypeAXFR))
	tests := []struct {
		name  string
		steps []Step
	}{
		{"pipelined queries answered out of order", []Step{C(q1 + q2), S(r2 + r1)}},
		{"a zone transfer answered by several messages", []Step{C(axfr), S(xr + xr + xr)}},
		{"a gap across a length: resynchronised by the waiting id", []Step{C(q1 + q2), S(r1[:1]), G(proto.FromServer, int64(len(r1)-1)), S(r2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, _ := run(t, tt.steps)
			Golden(t, t.Name(), Lines(units))
		})
	}
}

// FuzzParse checks Parse against golang.org/x/net/dns/dnsmessage: on a
// message both accept, the id, the QR bit and the first question agree.
func FuzzParse(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "testdata/nat/*.pcap")
	f.Add(build(f, 1, false, 0, "example.com.", dnsmessage.TypeA))                    // a query
	f.Add(build(f, 2, true, 0, "x.example.com.", dnsmessage.TypeA))                   // a response with a compressed answer
	f.Add([]byte("\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01")) // a pointer loop
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := Parse(b, nil)
		label := Label(m, nil)
		if len(label) > 300 {
			t.Fatalf("label of %d bytes", len(label))
		}
		var p dnsmessage.Parser
		h, err := p.Start(b)
		if err != nil || !ok {
			return
		}
		if h.ID != m.ID || h.Response != m.Response || uint8(h.RCode&0xf) != m.Rcode {
			t.Fatalf("header %+v, parsed %+v", h, m)
		}
		q, err := p.Question()
		if err != nil {
			return
		}
		want := asciiLower(strings.TrimSuffix(q.Name.String(), "."))
		if want == "" {
			want = "."
		}
		if uint16(q.Type) != m.QType || (want != string(m.Name) && !strings.Contains(q.Name.String(), "\\")) {
			t.Fatalf("question %v %q, parsed %d %q", q.Type, want, m.QType, m.Name)
		}
	})
}

// FuzzDecoder feeds scripted TCP connections and checks pairing and
// accounting, and that byte-wise feeding agrees.
func FuzzDecoder(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "testdata/nat/*.pcap")
	q := tcp(build(f, 5, false, 0, "a.example.", dnsmessage.TypeA))
	r := tcp(build(f, 5, true, 0, "a.example.", dnsmessage.TypeA))
	f.Add(Script(C(q), S(r)))
	f.Add(Script(C(q+q), G(1, 3), S(r+r)))
	f.Fuzz(func(t *testing.T, script []byte) {
		steps := Steps(script)
		d := NewDecoder(Config{})
		units := Run(d, steps, nil)
		Check(t, units, false)
		st := d.Stats()
		if err := st.Check(); err != nil {
			t.Fatal(err)
		}
		if u2 := Run(NewDecoder(Config{}), steps, Bytewise); !Same(units, u2) {
			t.Fatalf("bytewise feeding differs:\n%s\nwhole:\n%s", Lines(u2), Lines(units))
		}
	})
}

func BenchmarkParse(b *testing.B) {
	msg := build(b, 1, false, 0, "api.shop.svc.cluster.local.", dnsmessage.TypeA)
	name := make([]byte, 0, 256)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	var label string
	for b.Loop() {
		m, _ := Parse(msg, name)
		label = Label(m, name[len(m.Name):len(m.Name)])
	}
	if label != "dns A api.shop.svc.cluster.local" {
		b.Fatal(label)
	}
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
