package tls

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
)

var update = flag.Bool("update", false, "record the fixtures again and rewrite the golden files under testdata/")

// writeFixture stores a recorded connection, one event a line: "c" or
// "s" and the bytes in hex.
func writeFixture(t *testing.T, path string, events []grpctest.Event) {
	var b bytes.Buffer
	for _, e := range events {
		fmt.Fprintf(&b, "%c %x\n", "cs"[e.Dir], e.Data)
	}
	must(t, os.WriteFile(path, b.Bytes(), 0o644))
}

func readFixture(t *testing.T, path string) []grpctest.Event {
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	var events []grpctest.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		dir, hx, ok := strings.Cut(sc.Text(), " ")
		b, err := hex.DecodeString(hx)
		if !ok || err != nil || dir != "c" && dir != "s" {
			t.Fatalf("%s:%d: want c|s HEX", path, line)
		}
		events = append(events, grpctest.Event{Dir: proto.Dir(strings.Index("cs", dir)), Data: b})
	}
	must(t, sc.Err())
	return events
}

// TestGolden decodes stored connections (Go's TLS 1.3 and 1.2, recorded
// by go test -update with their key logs) with and without their key
// logs, and compares the Units, counters and plaintext sizes with
// testdata/<name>.golden.
func TestGolden(t *testing.T) {
	for _, tt := range []struct {
		name    string
		version uint16
	}{{"tls13-echo", tls.VersionTLS13}, {"tls12-echo", tls.VersionTLS12}} {
		t.Run(tt.name, func(t *testing.T) {
			conn, keys := filepath.Join("testdata", tt.name+".conn"), filepath.Join("testdata", tt.name+".keylog")
			if *update {
				cert, pool := testCert(t)
				events, keylog, _ := echo(t, &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tt.version, NextProtos: []string{"h2", "http/1.1"}},
					&tls.Config{RootCAs: pool, ServerName: serverName, MaxVersion: tt.version, NextProtos: []string{"h2", "http/1.1"}}, 10, 300, 3000, 20)
				writeFixture(t, conn, events)
				must(t, os.WriteFile(keys, keylog, 0o644))
			}
			events := readFixture(t, conn)
			kb, err := os.ReadFile(keys)
			must(t, err)
			var got strings.Builder
			for _, kl := range []*KeyLog{readKeyLog(t, kb), nil} {
				r := decode(t, kl, events, 0)
				fmt.Fprintf(&got, "key log %v: %+v\n%s%+v\nplaintext %d+%d bytes\n\n", kl != nil, r.info, format(r.units), r.stats,
					r.sink.buf[0].Len(), r.sink.buf[1].Len())
			}
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				must(t, os.WriteFile(path, []byte(got.String()), 0o644))
			}
			want, err := os.ReadFile(path)
			must(t, err)
			if got.String() != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got.String(), want)
			}
		})
	}
}
