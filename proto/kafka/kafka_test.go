package kafka

import (
	"encoding/binary"
	"testing"

	"github.com/wirepath/wirepath/proto"
	. "github.com/wirepath/wirepath/proto/internal/dectest"
)

// Encoders of the protocol's primitive types, after the Kafka protocol
// guide ("Protocol Primitive Types").
func i8(v int8) string      { return string([]byte{byte(v)}) }
func i16(v int16) string    { return string(binary.BigEndian.AppendUint16(nil, uint16(v))) }
func i32(v int32) string    { return string(binary.BigEndian.AppendUint32(nil, uint32(v))) }
func i64(v int64) string    { return string(binary.BigEndian.AppendUint64(nil, uint64(v))) }
func str(s string) string   { return i16(int16(len(s))) + s }               // STRING
func uv(v uint64) string    { return string(binary.AppendUvarint(nil, v)) } // UNSIGNED_VARINT
func cstr(s string) string  { return uv(uint64(len(s))+1) + s }             // COMPACT_STRING
func frame(s string) string { return i32(int32(len(s))) + s }               // size-prefixed

// reqHeader is request header v1; reqHeader2 is v2 (flexible: tagged
// fields after the client id, which stays a classic nullable string).
func reqHeader(api, version int16, corr int32) string {
	return i16(api) + i16(version) + i32(corr) + str("app")
}
func reqHeader2(api, version int16, corr int32) string { return reqHeader(api, version, corr) + uv(0) }

// produce7 is a Produce v7 request with acks and one topic.
func produce7(corr int32, acks int16, topic string) string {
	return frame(reqHeader(0, 7, corr) + i16(-1) + i16(acks) + i32(1000) + i32(1) + str(topic) + i32(0))
}

// produce9 is a flexible Produce v9 request.
func produce9(corr int32, acks int16, topic string) string {
	return frame(reqHeader2(0, 9, corr) + uv(0) + i16(acks) + i32(1000) + uv(2) + cstr(topic) + uv(1) + uv(0) + uv(0))
}

// resp is a response with header v0 and a body.
func resp(corr int32, body string) string { return frame(i32(corr) + body) }

func run(t *testing.T, steps []Step) ([]proto.Unit, Stats) {
	t.Helper()
	d := NewDecoder(Config{})
	units := Run(d, steps, nil)
	Check(t, units, false)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	for i, cut := range []func(int) []int{Bytewise, Random(1), Random(2)} {
		if u2 := Run(NewDecoder(Config{}), steps, cut); !Same(units, u2) {
			t.Fatalf("cut %d gives other units:\n%s\nwant:\n%s", i, Lines(u2), Lines(units))
		}
	}
	return units, st
}

func TestDecoder(t *testing.T) {
	apiVersions := frame(reqHeader2(18, 3, 0) + cstr("franz-go") + cstr("1.0") + uv(0))
	metadata := frame(reqHeader(3, 1, 1) + i32(1) + str("orders"))
	fetch := frame(reqHeader(1, 11, 4) + i32(-1) + i32(500) + i32(1) + i32(1<<20) + i8(0) + i32(0) + i32(-1) + i32(1) + str("orders") + i32(0))
	tests := []struct {
		name  string
		steps []Step
	}{
		{"ApiVersions (flexible header, id 0), Metadata, Produce v7 and v9, Fetch", []Step{
			C(apiVersions), S(resp(0, i16(0)+uv(1)+uv(0))),
			C(metadata), S(resp(1, i32(0))),
			C(produce7(2, 1, "orders") + produce9(3, -1, "events")), S(resp(2, i32(0)) + resp(3, uv(0))),
			C(fetch), S(resp(4, i32(0)+i16(0))),
		}},
		{"responses out of order pair by id; acks=0 is one-way", []Step{
			C(produce7(5, 1, "a") + produce7(6, 1, "b") + produce7(7, 0, "c") + metadata),
			S(resp(6, "") + resp(1, "") + resp(5, "")),
		}},
		{"SaslHandshake v0, then raw SASL tokens", []Step{
			C(frame(reqHeader(17, 0, 9) + str("PLAIN"))), S(resp(9, i16(0)+i32(1)+str("PLAIN"))),
			C(frame("\x00app\x00secret")), S(frame("")),
			C(metadata), S(resp(1, "")),
		}},
		{"a gap across a size: resynchronised by the waiting id", []Step{
			C(produce7(10, 1, "x") + produce7(11, 1, "y")),
			S(resp(10, "abc")[:2]), G(proto.FromServer, 5), S(resp(10, "abc")[7:] + resp(11, "")),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, _ := run(t, tt.steps)
			Golden(t, t.Name(), Lines(units))
		})
	}
}

func TestEvidence(t *testing.T) {
	units, st := run(t, []Step{C(produce9(1, 1, "orders")), S(resp(1, ""))})
	if !HasTokens(units[0], "orders") || units[0].Label != "kafka Produce orders" || units[1].Key != units[0].Key || st.Reordered != 0 {
		t.Errorf("units:\n%s", Lines(units))
	}
}

func TestNoAllocs(t *testing.T) {
	d := NewDecoder(Config{})
	var off [2]int64
	corr := int32(0)
	c := []byte(produce7(0, 1, "orders"))
	s := []byte(resp(0, i32(0)))
	step := func() {
		binary.BigEndian.PutUint32(c[8:], uint32(corr))
		binary.BigEndian.PutUint32(s[4:], uint32(corr))
		corr++
		d.Feed(proto.FromClient, off[0], c)
		Drain(d)
		off[0] += int64(len(c))
		d.Feed(proto.FromServer, off[1], s)
		Drain(d)
		off[1] += int64(len(s))
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("%v allocations per exchange", n)
	}
}

func BenchmarkDecoder(b *testing.B) {
	c := []byte(produce7(0, 1, "orders") + i64(0))
	s := []byte(resp(0, i32(1)+str("orders")+i32(1)+i32(0)+i16(0)+i64(42)))
	d := NewDecoder(Config{})
	var off [2]int64
	corr := int32(0)
	b.SetBytes(int64(len(c) + len(s)))
	b.ReportAllocs()
	for b.Loop() {
		binary.BigEndian.PutUint32(c[8:], uint32(corr))
		binary.BigEndian.PutUint32(s[4:], uint32(corr))
		corr++
		d.Feed(proto.FromClient, off[0], c)
		Drain(d)
		off[0] += int64(len(c))
		d.Feed(proto.FromServer, off[1], s)
		Drain(d)
		off[1] += int64(len(s))
	}
	if st := d.Stats(); st.Requests != st.Responses || st.Unpaired != 0 {
		b.Fatalf("stats %+v", st)
	}
}
