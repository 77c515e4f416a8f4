package accuracy

import (
	"testing"
)

// TestInflight runs a short version of the in-flight sweep: at 16
// requests in flight, with propagated ids and content tokens, the
// assembly engine gets most requests exactly right (on 300 requests; 90 %
// on the sweep's 1,000) where linking and nesting get under a fifth, and
// with timing alone it is still ahead of both.
func TestInflight(t *testing.T) {
	engs := map[string]Engine{"linking": Linking(), "nesting": Nesting(0, 0), "assembly": Assembly()}
	order := []string{"linking", "nesting", "assembly"}
	vs := []InflightVariant{InflightVariants[1], InflightVariants[2]}
	pts, err := InflightSweep(ctx, vs, []int{16}, 300, engs, order)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 6 {
		t.Fatalf("%d points, want 6", len(pts))
	}
	by := map[string]InflightPoint{}
	for _, p := range pts {
		by[p.Variant+"/"+p.Engine] = p
		if p.Score.Requests == 0 || p.Score.Right > p.Score.Requests || p.Score.CallsRight > p.Score.Calls {
			t.Errorf("%s %s: score %+v", p.Variant, p.Engine, p.Score)
		}
		calls := 0
		for _, c := range p.Links {
			calls += c[1]
		}
		if calls != p.Score.Calls-p.Score.Requests {
			t.Errorf("%s %s: the links hold %d calls, the score %d and %d roots", p.Variant, p.Engine, calls, p.Score.Calls, p.Score.Requests)
		}
	}
	ids := vs[0].Name
	if s := by[ids+"/assembly"].Score.Share(); s < 0.7 {
		t.Errorf("assembly with ids and tokens at 16 in flight: %.1f %% of requests right, want at least 70 %% (linking and nesting: under 20 %%)", 100*s)
	}
	for _, v := range vs {
		a := by[v.Name+"/assembly"].Score
		for _, e := range []string{"linking", "nesting"} {
			if o := by[v.Name+"/"+e].Score; a.Right < o.Right || a.CallsRight < o.CallsRight {
				t.Errorf("%s: assembly %d requests and %d calls right, %s %d and %d", v.Name, a.Right, a.CallsRight, e, o.Right, o.CallsRight)
			}
		}
	}
}
