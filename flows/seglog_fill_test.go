package flows

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// fillLoop is fill as it was before its one-record step (fillOne): the
// loop over the records from find, which TestSegLogFillOne holds fill to.
func fillLoop(l *segLog, m *msg, start, end, limit int64, sp *span) {
	if l.len() == 0 {
		sp.empty = true
		return
	}
	if l.recs[l.head].off > start {
		sp.clamped = true
	}
	for i := l.find(start); i < len(l.recs) && l.recs[i].off < end; i++ {
		r := &l.recs[i]
		k := min(end, r.end()) - max(start, r.off)
		if k <= 0 {
			continue
		}
		sp.segments++
		if r.psh && r.end() <= end {
			sp.writes++
		}
		if r.gap {
			sp.gapBytes += k
			continue
		}
		if c := r.off + int64(r.capt); c < r.end() {
			sp.trunc += max(min(r.end(), end)-max(c, start), 0)
		}
		for _, o := range r.obs[:r.nobs] {
			s := m.sighting(o)
			if s.Segments == 0 {
				s.FirstBytes = min(k, limit)
			}
			s.Bytes = min(s.Bytes+k, limit)
			s.Segments++
		}
	}
	if sp.segments == 0 {
		sp.empty = true
	}
}

// TestSegLogFillOne holds fill, whose common case (one record, one
// point, no sighting yet) takes a step of its own, to the loop over the
// records, on logs of records with and without PSH, gaps, truncation
// and several points, spans in and out of order, some with a sighting
// already.
func TestSegLogFillOne(t *testing.T) {
	tests := []struct {
		name    string
		ordered bool
		points  int
	}{
		{"in order, one point", true, 1},
		{"in order, two points", true, 2},
		{"any order, one point", false, 1},
		{"any order, three points", false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			var l segLog
			var next, last int64
			ones := 0
			for step := range 5000 {
				switch op := r.IntN(10); {
				case op < 3:
					n := r.IntN(100)
					ch := &chunk{n: uint32(n), data: make([]byte, n-r.IntN(n+1)/4*min(r.IntN(3), 1)), gap: r.IntN(8) == 0, psh: r.IntN(2) == 0}
					for p := range 1 + r.IntN(tt.points) {
						ch.obs = append(ch.obs, segObs{pt: Point{Interface: uint16(p)}, ttl: uint8(p), first: int64(step), last: int64(step + p)})
					}
					l.add(next, ch)
					next += int64(n)
				case op == 3 && l.len() > 0:
					l.trim(l.recs[l.head].off + int64(r.IntN(200)))
				default:
					start := r.Int64N(next + 10)
					if tt.ordered {
						start = min(last+int64(r.IntN(60)), next+5)
						last = start
					}
					end := start + int64(r.IntN(150))
					limit := int64(r.IntN(200))
					var got, want msg
					got.Sightings, want.Sightings = got.sight[:0], want.sight[:0]
					if r.IntN(4) == 0 {
						s := Sighting{First: 7, Last: 9, Bytes: 3, Segments: 1}
						got.Sightings = append(got.Sightings, s)
						want.Sightings = append(want.Sightings, s)
					}
					ref := l
					ref.recs = append([]segRec(nil), l.recs...)
					var gs, ws span
					probe := &msg{}
					probe.Sightings = got.Sightings[:len(got.Sightings):len(got.Sightings)]
					if hint := l.hint; l.len() > 0 && l.fillOne(probe, l.findHint(start), start, end, limit, &span{}) {
						ones++
						l.hint = hint
					}
					l.fill(&got, start, end, limit, &gs)
					fillLoop(&ref, &want, start, end, limit, &ws)
					if gs != ws || !reflect.DeepEqual(got.Sightings, want.Sightings) {
						t.Fatalf("step %d: fill(%d, %d, %d) = %+v %+v, want %+v %+v", step, start, end, limit, gs, got.Sightings, ws, want.Sightings)
					}
				}
			}
			if ones == 0 {
				t.Error("no span took fillOne's step")
			}
		})
	}
}
