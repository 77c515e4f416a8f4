package http2

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGolden decodes fixed conversations and compares every Unit and
// the counters with testdata/<name>.golden (go test -update rewrites them).
func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		build  func() *conv
		gapDir proto.Dir
		gap    func(c *conv) (int64, int64)
	}{
		{"five-calls", fiveCalls, 0, nil},
		{"five-calls-server-framing-lost", fiveCalls, proto.FromServer, func(c *conv) (int64, int64) {
			return offsetOf(c, 1, xhttp2.FrameData, 1) + 20, 15
		}},
		{"control-frames", func() *conv {
			c := newConv(true)
			c.settings(proto.FromServer, xhttp2.Setting{ID: xhttp2.SettingMaxConcurrentStreams, Val: 100},
				xhttp2.Setting{ID: xhttp2.SettingInitialWindowSize, Val: 100})
			c.settings(proto.FromClient)
			must(c.fr[0].WriteSettingsAck())
			must(c.fr[1].WriteSettingsAck())
			c.flush(0)
			c.flush(1)
			c.headers(proto.FromClient, 1, false, ":method: POST", ":scheme: http", ":authority: a", ":path: /upload/7f3e9a2b4c5d6e7f8a9b",
				"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x-request-id: r-1")
			c.data(proto.FromClient, 1, false, 150) // the server allows 100 bytes: a stall
			must(c.fr[1].WriteWindowUpdate(1, 1000))
			must(c.fr[1].WriteWindowUpdate(0, 1000))
			must(c.fr[1].WritePing(false, [8]byte{1}))
			c.flush(1)
			must(c.fr[0].WritePing(true, [8]byte{1}))
			c.flush(0)
			c.data(proto.FromClient, 1, true, 50)
			c.headers(proto.FromServer, 1, true, ":status: 201")
			must(c.fr[1].WriteGoAway(1, xhttp2.ErrCodeNo, nil))
			c.flush(1)
			return c
		}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.build()
			cfg := DefaultConfig()
			cfg.Evidence = true
			var units []proto.Unit
			var st Stats
			if tt.gap != nil {
				from, n := tt.gap(c)
				units, st = decodeGap(t, cfg, c.events, tt.gapDir, from, n)
			} else {
				units, st = decode(t, cfg, c.events, 0)
			}
			got := format(units) + fmt.Sprintf("%+v\n", st)
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}
