package assembly

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestWorkersAgree: the engine solves its nodes in parallel, and its
// result does not depend on how many goroutines it uses: every request,
// link, confidence, alternative and counter is the single-threaded run's.
func TestWorkersAgree(t *testing.T) {
	cases := []struct {
		config string
		d      time.Duration
	}{
		{"multitier", 20 * time.Second},
		{"hotel", 2 * time.Second},
		{"media", time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			tr := configTrace(t, tc.config, tc.d)
			var want []byte
			for _, w := range []int{1, 2, 4} {
				o := DefaultOptions()
				o.Workers = w
				e, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Infer(context.Background(), tr)
				if err != nil {
					t.Fatal(err)
				}
				got, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				if w == 1 {
					if len(res.Requests) == 0 {
						t.Fatal("no requests")
					}
					want = got
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%d workers: the result differs from the single-threaded run's", w)
				}
			}
		})
	}
}
