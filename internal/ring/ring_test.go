package ring

import (
	"math/rand/v2"
	"testing"
)

// TestAgainstSlice drives a ring and a plain slice queue with the same
// random pushes and pops and checks they agree at every step.
func TestAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		var r Ring[int]
		var ref []int
		next := 0
		for step := 0; step < 2000; step++ {
			if len(ref) > 0 && rng.IntN(100) < 45+round { // drifting push/pop mix
				if got, want := *r.Front(), ref[0]; got != want {
					t.Fatalf("round %d step %d: front %d, want %d", round, step, got, want)
				}
				if got, want := r.Pop(), ref[0]; got != want {
					t.Fatalf("round %d step %d: pop %d, want %d", round, step, got, want)
				}
				ref = ref[1:]
			} else {
				r.Push(next)
				ref = append(ref, next)
				next++
			}
			if r.Len() != len(ref) {
				t.Fatalf("round %d step %d: len %d, want %d", round, step, r.Len(), len(ref))
			}
			if c := len(r.buf); c != 0 && c&(c-1) != 0 {
				t.Fatalf("capacity %d is not a power of two", c)
			}
		}
	}
}

func TestFrontIsInPlace(t *testing.T) {
	var r Ring[[2]int]
	r.Push([2]int{1, 2})
	r.Front()[1] = 5
	if got := r.Pop(); got != [2]int{1, 5} {
		t.Errorf("popped %v, want the value changed through Front", got)
	}
}

func TestPopClearsSlot(t *testing.T) {
	var r Ring[*int]
	x := 1
	r.Push(&x)
	r.Pop()
	for i, p := range r.buf {
		if p != nil {
			t.Errorf("slot %d still holds a pointer after Pop", i)
		}
	}
}

func TestNoAllocsOnceGrown(t *testing.T) {
	var r Ring[int]
	for i := 0; i < 100; i++ {
		r.Push(i)
	}
	for r.Len() > 0 {
		r.Pop()
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 100; i++ {
			r.Push(i)
		}
		for r.Len() > 0 {
			r.Pop()
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkPushPop(b *testing.B) {
	var r Ring[*int]
	x := 0
	b.ReportAllocs()
	for b.Loop() {
		for range 64 {
			r.Push(&x)
		}
		for r.Len() > 0 {
			r.Pop()
		}
	}
	if r.Len() != 0 {
		b.Fatal("queue not empty")
	}
}
