package nesting

import (
	"testing"

	"github.com/wirepath/wirepath/causal/internal/enginetest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

func FuzzNesting(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "cmd/wirepath/testdata/traces/*.tsv", "trace/testdata/*.tsv")
	// a call and its return
	f.Add([]byte{0, 10, 0x48, 1, 100, 0, 20, 0x81, 1, 100})
	// Figure 3: A calls B, B calls C then D, then returns
	f.Add([]byte{
		0, 10, 0x48, 1, 0, 0, 20, 0x51, 2, 0, 0, 20, 0x8a, 2, 0,
		0, 20, 0x59, 3, 0, 0, 20, 0x8b, 3, 0, 0, 20, 0x81, 1, 0,
	})
	// no call ids, endpoints, receive times and a skewed sender
	f.Add([]byte{0, 1, 0x48, 0xb0, 7, 0, 1, 0x48, 0x30, 9, 0, 5, 0x81, 0x30, 7, 0, 5, 0x81, 0x30, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := enginetest.FuzzTrace(data, 100e3)
		opt := DefaultOptions()
		if len(data) > 0 && data[0]&1 != 0 {
			opt.SkewWindow = 3 * ms
			opt.Smooth = 1
			opt.SameExp, opt.GenericExp = 1, 0.5
		}
		res, err := mustNew(opt).Run(bgCtx, tr)
		if err != nil {
			t.Fatal(err)
		}
		checkNestingBalance(t, res.Result)
		enginetest.CheckPatterns(t, res.Result)
		msgs := int64(0)
		for _, p := range res.Patterns {
			msgs += int64(p.Count * len(p.Hops))
		}
		if msgs != 2*enginetest.Count(res.Result, "call_pairs") {
			t.Fatalf("patterns hold %d messages, %d call pairs", msgs, enginetest.Count(res.Result, "call_pairs"))
		}
		paths := 0
		for _, cp := range res.CallPaths {
			paths += cp.Count
		}
		if int64(paths) != enginetest.Count(res.Result, "call_paths") {
			t.Fatalf("call-path table holds %d paths, %d roots", paths, enginetest.Count(res.Result, "call_paths"))
		}
	})
}
