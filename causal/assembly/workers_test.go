package assembly

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// configCases are causal/gen's configurations the engine-wide tests run
// on, each for a duration that keeps it quick.
var configCases = []struct {
	config string
	d      time.Duration
}{
	{"multitier", 20 * time.Second},
	{"hotel", 2 * time.Second},
	{"media", time.Second},
}

// TestWorkersAgree: the engine solves its nodes in parallel, and its
// result does not depend on how many goroutines it uses: every request,
// link, confidence, alternative and counter is the single-threaded run's.
func TestWorkersAgree(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.config, func(t *testing.T) {
			tr := configTrace(t, tc.config, tc.d)
			var want []byte
			for _, w := range []int{1, 2, 4} {
				o := DefaultOptions()
				o.Workers = w
				res := inferWith(t, o, tr)
				got, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				if w == 1 {
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
