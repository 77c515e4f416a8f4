package pgc

import (
	"fmt"
	"sync"
	"testing"

	"github.com/wirepath/wirepath/internal/realserver"
)

// TestPool runs queries through a pool of two connections against a real
// PostgreSQL: each answer is its query's, and each connection's queries
// are numbered 0, 1, 2, ...
func TestPool(t *testing.T) {
	srv := realserver.Postgres(t)
	p, err := NewPool(srv.Addr, "postgres", "postgres", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Query("CREATE TABLE prices (k text PRIMARY KEY, price int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Query("INSERT INTO prices SELECT 'p' || i, i * 10 FROM generate_series(0, 99) i"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ords := map[string][]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.Query(fmt.Sprintf("SELECT price FROM prices WHERE k = 'p%d'", i))
			if err != nil || r.Value != fmt.Sprint(i*10) {
				t.Errorf("query %d: %+v %v", i, r, err)
			}
			mu.Lock()
			ords[r.Local] = append(ords[r.Local], r.Ord)
			mu.Unlock()
		}()
	}
	wg.Wait()
	n := 0
	for _, os := range ords {
		n += len(os)
	}
	if len(ords) != 2 || n != 40 {
		t.Errorf("ordinals %v", ords)
	}
	if _, err := p.Query("SELECT nope"); err == nil {
		t.Error("no error for a bad query")
	}
}
