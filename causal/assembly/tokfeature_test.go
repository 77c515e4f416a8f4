package assembly

import "testing"

// TestTokFeature: what a call shares with its candidate request and what
// it shares only with the request's last call or reply are binned apart,
// so that a request's first call to a service, repeating the request's
// value, and a health check to that service, repeating the service's
// name and host from the request's previous call, do not share a bin
// although both share about as much.
func TestTokFeature(t *testing.T) {
	const value, host, service, unique, health = 1, 2, 3, 4, 5
	idf := map[uint64]float64{value: 4, host: 2.5, service: 2, unique: 11, health: 3}
	req := []uint64{value, unique}
	part := []uint64{host, service, value} // the request's previous call
	cases := []struct {
		name string
		ct   []uint64
		pool [3][]uint64
		want int
	}{
		{"nothing shared", []uint64{health}, [3][]uint64{req, part, nil}, 0},
		{"the request's value, first call", []uint64{host, service, value}, [3][]uint64{req, nil, nil}, 2 * tokBins0},
		{"the previous call's host and service", []uint64{health, host, service}, [3][]uint64{req, part, nil}, 2},
		{"both", []uint64{host, service, value}, [3][]uint64{req, part, nil}, 2*tokBins0 + 2},
		{"the service, from the last reply", []uint64{service}, [3][]uint64{req, nil, {service}}, 1},
		{"a unique id", []uint64{unique}, [3][]uint64{req, nil, nil}, 4 * tokBins0},
		{"shared with the request and the last call, counted as the request's", []uint64{value}, [3][]uint64{req, part, nil}, 2 * tokBins0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tokFeature(idf, tc.ct, tc.pool); got != tc.want {
				t.Errorf("tokFeature = %d, want %d", got, tc.want)
			}
		})
	}
}
