package tls

import (
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
	"github.com/wirepath/wirepath/proto/http2"
)

// benchTLS decodes a recorded TLS 1.3 connection of 129 gRPC-shaped
// calls over HTTP/2 (128 at once), with or without its key log; bytes/s is the
// throughput on both directions' ciphertext.
func benchTLS(b *testing.B, decrypt bool) {
	events, keylog := grpcOverTLS(b, 128)
	var kl *KeyLog
	if decrypt {
		kl = readKeyLog(b, keylog)
	}
	var total int64
	for _, e := range events {
		total += int64(len(e.Data))
	}
	b.SetBytes(total)
	b.ReportAllocs()
	var apps int
	for b.Loop() {
		apps = decodeEvents(kl, events)
	}
	want := 129 * 2 // a request and a response per call
	if !decrypt {
		want = 0
	}
	if apps != want {
		b.Fatalf("%d requests and responses, want %d", apps, want)
	}
}

// decodeEvents feeds a connection to a Decoder with proto/http2 inside
// and counts the requests and responses.
func decodeEvents(kl *KeyLog, events []grpctest.Event) int {
	d := New(Config{KeyLog: kl, NewInner: func(string) Inner { return http2.New(http2.DefaultConfig()) }})
	var off [2]int64
	var u proto.Unit
	n := 0
	for _, e := range events {
		d.Feed(e.Dir, off[e.Dir], e.Data)
		off[e.Dir] += int64(len(e.Data))
		for d.Next(&u) {
			if u.Kind == proto.KindRequest || u.Kind == proto.KindResponse {
				n++
			}
		}
	}
	d.Close()
	for d.Next(&u) {
		if u.Kind == proto.KindRequest || u.Kind == proto.KindResponse {
			n++
		}
	}
	return n
}

// BenchmarkRecords: the record layer alone (no key log).
func BenchmarkRecords(b *testing.B) { benchTLS(b, false) }

// BenchmarkDecryptHTTP2: TLS 1.3 AES-128-GCM decryption and HTTP/2
// decoding of the plaintext.
func BenchmarkDecryptHTTP2(b *testing.B) { benchTLS(b, true) }
