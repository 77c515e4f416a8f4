package http2

import (
	"bytes"
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/wirepath/wirepath/proto"
)

// TestIsText holds isText to its definition: non-empty UTF-8 without
// control bytes, whichever of the two it checks first.
func TestIsText(t *testing.T) {
	for _, in := range []string{"", "a", "hello world", "a=1&b=x", "\x00", "a\x00b", "ab\x7f",
		"\t", "café", "caf\xe9", "\xff\xfe", "日本語", "日本\x01", "\xe6\x97", string(make([]byte, 64)),
		"0123456789abcdef0123456789abcdef\x1f"} {
		want := len(in) > 0 && utf8.ValidString(in) && !bytes.ContainsFunc([]byte(in), func(r rune) bool { return r < 0x20 || r == 0x7f })
		if got := isText([]byte(in)); got != want {
			t.Errorf("isText(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestRequestLabelRecent checks the labels of a connection calling more
// methods than the recent labels' sets hold, in turn, and that a
// connection's four methods are found among them after their first
// call (by a hash into one slot each, as before, two of them sharing a
// slot took each other's place call after call).
func TestRequestLabelRecent(t *testing.T) {
	paths := []string{"/hotel.Search/Nearby", "/hotel.Geo/Near", "/hotel.Rate/GetRates", "/hotel.Profile/GetProfiles"}
	for _, n := range []int{4, 12} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			d := New(DefaultConfig())
			var misses int
			for i := range 200 {
				p := paths[i%len(paths)]
				if n > len(paths) {
					p = fmt.Sprintf("/s.S/M%d", i%n)
				}
				h := &half{}
				h.kept[keptMethod] = d.intern("POST")
				h.kept[keptPath] = d.intern(p)
				h.kept[keptCType] = d.intern("application/grpc")
				before := d.recent
				if got, want := d.requestLabel(h), "grpc "+p; got != want {
					t.Fatalf("call %d: label %q, want %q", i, got, want)
				}
				if i >= n && !recentHeld(&before, h) {
					misses++
				}
			}
			if n == len(paths) && misses > 0 {
				t.Errorf("%d of the calls after the first four not among the recent labels", misses)
			}
		})
	}
}

// recentHeld reports whether the recent labels r held h's.
func recentHeld(r *[8]recentLabel, h *half) bool {
	for _, l := range r {
		if l.ok && l.key.path == h.kept[keptPath] && l.key.method == h.kept[keptMethod] {
			return true
		}
	}
	return false
}

// BenchmarkGRPCBodyEvidence takes the evidence of a gRPC request's body
// that is no protocol buffer nor text (64 zero bytes, as bench-grpc's
// capture has): isText turns it down.
func BenchmarkGRPCBodyEvidence(b *testing.B) {
	body := make([]byte, 5+64)
	body[4] = 64
	var ev proto.Evidence
	var num [20]byte
	for b.Loop() {
		ev.Tokens = ev.Tokens[:0]
		grpcBodyEvidence(&ev, body, &num)
	}
}

// BenchmarkGRPCBlockMemo is BenchmarkGRPCEvidence with the block memo
// on and off: the server's header blocks (response headers, trailers)
// are taken whole by it.
func BenchmarkGRPCBlockMemo(b *testing.B) {
	for _, memo := range []bool{true, false} {
		b.Run(fmt.Sprintf("memo=%v", memo), func(b *testing.B) {
			c := newConv(true)
			c.settings(proto.FromServer)
			c.settings(proto.FromClient)
			events := grpcLoad(c, 1, 64)
			cfg := DefaultConfig()
			cfg.Evidence = true
			noBlockMemo = !memo
			defer func() { noBlockMemo = false }()
			for b.Loop() {
				d := New(cfg)
				var off [2]int64
				feedAll(d, events, &off)
				d.Close()
			}
		})
	}
}
