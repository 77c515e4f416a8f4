package nesting

import (
	"slices"
	"sync"
	"testing"
)

// TestProgress: each long step reports from 0 to its total, in order and
// never backwards, one call at a time.
func TestProgress(t *testing.T) {
	type report struct {
		step        string
		done, total int
	}
	var (
		mu      sync.Mutex
		reports []report
		inside  bool
	)
	o := DefaultOptions()
	o.Progress = func(step string, done, total int) {
		mu.Lock()
		if inside {
			t.Error("two progress calls at once")
		}
		inside = true
		reports = append(reports, report{step, done, total})
		inside = false
		mu.Unlock()
	}
	const n = 40_000 // call paths of two calls each
	res, err := mustNew(o).Run(bgCtx, distinctNames(n))
	if err != nil {
		t.Fatal(err)
	}
	wantTotal := map[string]int{"candidates": 4 * n, "parents": 2 * n, "call paths": n}
	var steps []string
	for i, r := range reports {
		if i == 0 || reports[i-1].step != r.step {
			steps = append(steps, r.step)
			if r.done != 0 {
				t.Errorf("%s starts at %d", r.step, r.done)
			}
		} else if r.done < reports[i-1].done {
			t.Errorf("%s went back from %d to %d", r.step, reports[i-1].done, r.done)
		}
		if r.total != wantTotal[r.step] {
			t.Errorf("%s: total %d, want %d", r.step, r.total, wantTotal[r.step])
		}
		if i+1 == len(reports) || reports[i+1].step != r.step {
			if r.done != r.total {
				t.Errorf("%s ends at %d of %d", r.step, r.done, r.total)
			}
		}
	}
	if !slices.Equal(steps, []string{"candidates", "parents", "call paths"}) {
		t.Errorf("steps %q", steps)
	}
	if len(reports) < 10 {
		t.Errorf("only %d reports", len(reports))
	}
	if len(res.CallPaths) == 0 {
		t.Error("no call paths")
	}
}
