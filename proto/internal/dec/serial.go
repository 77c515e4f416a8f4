package dec

// DefaultMaxPending is how many requests a serial decoder keeps waiting
// for their responses by default.
const DefaultMaxPending = 16384

// Pending is a bounded FIFO of the requests waiting for a response, each
// with its Key and what the decoder needs to frame its response. It grows
// on demand up to its bound.
type Pending[T any] struct {
	buf     []pend[T]
	head, n int
	max     int
}

type pend[T any] struct {
	key uint64
	v   T
}

// SetMax sets the bound (DefaultMaxPending if n <= 0).
func (p *Pending[T]) SetMax(n int) {
	if n <= 0 {
		n = DefaultMaxPending
	}
	p.max = n
}

// Len returns how many requests are waiting.
func (p *Pending[T]) Len() int { return p.n }

// Push adds a request; it reports false when the queue is at its bound.
func (p *Pending[T]) Push(key uint64, v T) bool {
	if p.max == 0 {
		p.SetMax(0)
	}
	if p.n == p.max {
		return false
	}
	if p.n == len(p.buf) {
		nb := make([]pend[T], max(8, 2*len(p.buf)))
		for i := range p.n {
			nb[i] = p.buf[(p.head+i)%len(p.buf)]
		}
		p.buf, p.head = nb, 0
	}
	p.buf[(p.head+p.n)%len(p.buf)] = pend[T]{key, v}
	p.n++
	return true
}

// Front returns the oldest request without removing it.
func (p *Pending[T]) Front() (key uint64, v *T, ok bool) {
	if p.n == 0 {
		return 0, nil, false
	}
	e := &p.buf[p.head]
	return e.key, &e.v, true
}

// At returns the i-th oldest request (0 is the oldest).
func (p *Pending[T]) At(i int) (key uint64, v *T) {
	e := &p.buf[(p.head+i)%len(p.buf)]
	return e.key, &e.v
}

// Pop removes and returns the oldest request.
func (p *Pending[T]) Pop() (key uint64, v T, ok bool) {
	if p.n == 0 {
		return 0, v, false
	}
	e := p.buf[p.head]
	p.buf[p.head] = pend[T]{}
	p.head = (p.head + 1) % len(p.buf)
	p.n--
	return e.key, e.v, true
}

// RemoveAt removes the i-th oldest request.
func (p *Pending[T]) RemoveAt(i int) {
	for j := i; j > 0; j-- {
		p.buf[(p.head+j)%len(p.buf)] = p.buf[(p.head+j-1)%len(p.buf)]
	}
	p.Pop()
}

// Clear empties the queue and returns how many requests it held.
func (p *Pending[T]) Clear() int {
	n := p.n
	for p.n > 0 {
		p.Pop()
	}
	p.head = 0
	return n
}

// Serial pairs the requests and responses of a protocol whose responses
// come in request order (RESP, memcached, PostgreSQL, MySQL): a request's
// Key is its ordinal on the connection, from 1, and a response takes the
// oldest waiting request's.
//
// After framing is lost in either direction (Lose), requests may have
// been lost unseen, so no response can be paired for certain: pairing is
// suspended (Keys are 0, counted Unpaired) and the waiting requests are
// dropped as unanswered. It resumes at a request that starts when no
// request the decoder saw is still waiting and the server is between
// messages, provided the connection was never seen to pipeline (a request
// sent while another waited): then each response that follows answers
// the requests that follow, in order. A connection that pipelines stays
// unpaired until it ends.
type Serial[T any] struct {
	Q         Pending[T]
	ord       uint64
	suspended bool
	pipelined bool
	needResp  bool // resumption waits for a response (Suspend)
	stats     *Stats
}

// Init binds s to the stats it counts in and sets its bound.
func (s *Serial[T]) Init(st *Stats, maxPending int) {
	*s = Serial[T]{stats: st}
	s.Q.SetMax(maxPending)
}

// Request registers a request that expects a response; serverIdle says
// whether the server direction is between messages. It returns the
// request's Key (0 while pairing is suspended).
func (s *Serial[T]) Request(v T, serverIdle bool) uint64 {
	if s.Q.Len() > 0 {
		s.pipelined = true
	}
	if s.suspended && s.Q.Len() == 0 && serverIdle && !s.pipelined && !s.needResp {
		s.suspended = false
	}
	var key uint64
	if !s.suspended {
		s.ord++
		key = s.ord
	} else {
		s.stats.Unpaired++
	}
	if !s.Q.Push(key, v) {
		// More requests waiting than the bound: the oldest are dropped,
		// which breaks order, so pairing is suspended.
		s.Lose()
		s.Q.Push(0, v)
		s.stats.Unpaired++
		return 0
	}
	return key
}

// Response takes the oldest waiting request: its Key (0 when pairing is
// suspended or none waits) and its value.
func (s *Serial[T]) Response() (uint64, T, bool) {
	s.needResp = false
	key, v, ok := s.Q.Pop()
	if key == 0 {
		s.stats.Unpaired++
	}
	return key, v, ok
}

// Lose suspends pairing after a loss of framing and drops the waiting
// requests.
func (s *Serial[T]) Lose() {
	s.suspended = true
	s.Close()
}

// Suspend suspends pairing without a loss: a connection seen from its
// middle, where responses may be owed to requests never seen. Pairing
// resumes as after a loss, but only once a response was seen: the server
// is then known to have been between messages.
func (s *Serial[T]) Suspend() { s.suspended, s.needResp = true, true }

// Suspended reports whether pairing is suspended.
func (s *Serial[T]) Suspended() bool { return s.suspended }

// Close counts the requests still waiting as unanswered.
func (s *Serial[T]) Close() {
	for s.Q.Len() > 0 {
		if k, _, _ := s.Q.Pop(); k != 0 {
			s.stats.Unanswered++
		}
	}
}
