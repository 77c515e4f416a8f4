package assembly

import (
	"testing"

	"github.com/wirepath/wirepath/causal/internal/enginetest"
)

// FuzzAssembly: whatever the trace (calls without returns, returns before
// their calls, unknown times, no kinds, offsets), the engine neither fails
// nor loses a message, its requests are trees of the trace's messages and
// its patterns hold the requests' messages.
func FuzzAssembly(f *testing.F) {
	// a call and its return
	f.Add([]byte{0, 10, 0x48, 1, 100, 0, 20, 0x81, 1, 100})
	// A calls B, B calls C then D, then returns
	f.Add([]byte{
		0, 10, 0x48, 1, 0, 0, 20, 0x51, 2, 0, 0, 20, 0x8a, 2, 0,
		0, 20, 0x59, 3, 0, 0, 20, 0x8b, 3, 0, 0, 20, 0x81, 1, 0,
	})
	// no call ids, endpoints, receive times and a skewed sender
	f.Add([]byte{0, 1, 0x48, 0xb0, 7, 0, 1, 0x48, 0x30, 9, 0, 5, 0x81, 0x30, 7, 0, 5, 0x81, 0x30, 9})
	// no kinds at all
	f.Add([]byte{0, 1, 0x08, 0x20, 7, 0, 1, 0x01, 0x20, 7, 0, 5, 0x08, 0x20, 9, 0, 5, 0x01, 0x20, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := enginetest.FuzzTrace(data, 100e3)
		opt := DefaultOptions()
		if len(data) > 0 && data[0]&1 != 0 {
			opt.Beam, opt.Passes, opt.Tolerance = 2, 1, 0
		}
		e, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Infer(bgCtx, tr)
		if err != nil {
			t.Fatal(err)
		}
		checkBalance(t, res)
		checkRequests(t, res, tr)
		enginetest.CheckPatterns(t, res)
		msgs := 0
		for _, p := range res.Patterns {
			msgs += p.Count * len(p.Hops)
		}
		if int64(msgs) != enginetest.Count(res, "messages_in_requests") {
			t.Fatalf("patterns hold %d messages, requests %d", msgs, enginetest.Count(res, "messages_in_requests"))
		}
	})
}
