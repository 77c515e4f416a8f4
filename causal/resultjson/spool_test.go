package resultjson

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// spoolWindows are the requests of three windows, as a windowed run's
// engine lists them: not in order of their roots, background trees among
// them, labels that JSON escapes, alternatives.
func spoolWindows() [][]causal.Request {
	win := func(i int) *int { return &i }
	lat := 12.5
	msg := func(label string) []causal.RequestMessage {
		return []causal.RequestMessage{
			{Msg: 3, Parent: -1, Call: 0, CallParent: -1, Kind: "CALL", Label: label, Confidence: 1, Evidence: "root"},
			{Msg: 5, Parent: 0, Call: 1, CallParent: 0, Kind: "CALL", Confidence: 0.75, Evidence: "joint-timing",
				Alternatives: []causal.Alternative{{Call: 7, Probability: 0.2}, {Call: -1, Probability: 0.05}}},
			{Msg: -1, Parent: 1, Call: 1, CallParent: 0, Kind: "RETURN", Confidence: 1, Evidence: "unseen"},
			{Msg: 4, Parent: 2, Call: 0, CallParent: -1, Kind: "RETURN", Label: "200 <ok> & \"done\" é", Confidence: 1, Evidence: "stream"},
		}
	}
	var ws [][]causal.Request
	for w := range 3 {
		base := int64(w) * 1000
		ws = append(ws, []causal.Request{
			{ID: 0, Root: 3, StartNS: base + 30, Window: win(w), Label: "GET /a?x=<1>", Kind: "GET", Latency: &lat, Confidence: 0.75, Unseen: 1, Messages: msg("GET /a?x=<1>")},
			{ID: 1, Root: 8, StartNS: base + 10, Window: win(w), Background: true, Confidence: 1, Messages: msg("")},
			{ID: 2, Root: 9, StartNS: base + 10, Window: win(w), Confidence: 0.5, Messages: msg("PUT")},
			{ID: 3, Root: -1, StartNS: base + 20, Window: win(w), Confidence: 0.25, Messages: msg("")},
		})
	}
	return ws
}

// TestWriteSpooled checks that a result whose requests were spooled is
// written byte for byte as the same result with its requests in memory,
// alone and in the envelope of several engines, and with none spooled.
func TestWriteSpooled(t *testing.T) {
	cases := []struct {
		name    string
		windows int
		engines int
	}{
		{"one engine", 3, 1},
		{"several engines", 3, 2},
		{"one window", 1, 1},
		{"no requests", 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var kept, spooled []*causal.Result
			var spools []*RequestSpool
			for e := range tc.engines {
				res := sample(fmt.Sprintf("engine%d", e))
				mk := causal.NewResultMerger(causal.RankCount, 0)
				ms := causal.NewResultMerger(causal.RankCount, 0)
				sp, err := NewRequestSpool(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer sp.Remove()
				ms.SendRequests(sp.Add)
				for _, rs := range spoolWindows()[:tc.windows] {
					w := *res
					if e == 0 {
						w.Requests = rs
					}
					mk.Add(&w)
					ms.Add(&w)
				}
				if tc.windows == 0 {
					mk.Add(res)
					ms.Add(res)
				}
				if err := ms.Err(); err != nil {
					t.Fatal(err)
				}
				kept, spooled, spools = append(kept, mk.Result()), append(spooled, ms.Result()), append(spools, sp)
			}
			if n := len(spooled[0].Requests); n != 0 {
				t.Fatalf("the spooled result lists %d requests", n)
			}
			var want, got bytes.Buffer
			var err error
			if tc.engines == 1 {
				err = Write(&want, kept[0])
			} else {
				err = WriteAnalysis(&want, kept)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteSpooled(&got, spooled, spools); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("spooled:\n%s\nwant:\n%s", got.String(), want.String())
			}
			if n := len(kept[0].Requests); n != 4*tc.windows {
				t.Errorf("%d requests kept, want %d", n, 4*tc.windows)
			}
		})
	}
}
