package score

import (
	"testing"
	"time"
)

// BenchmarkScore scores the true instances of 10 s of multi-tier traffic,
// both views.
func BenchmarkScore(b *testing.B) {
	out := generate(b, "multitier", 10*time.Second, nil)
	insts, _ := trueInstances(out)
	res := resultOf(out, insts)
	calls := DefaultOptions()
	calls.View = ViewCalls
	b.ReportAllocs()
	for b.Loop() {
		for _, opt := range []Options{DefaultOptions(), calls} {
			r, err := Score(res, out.Truth, opt)
			if err != nil || r.Instances.FalseNegatives != 0 {
				b.Fatal(err)
			}
		}
	}
}
