// Package ring is the FIFO queue the streaming stages share: a growable
// ring buffer whose capacity is a power of two, so that pushing and
// popping cost no division and, once it has grown to the stage's high
// water mark, no allocation.
package ring

// minCap is the capacity of a ring's first buffer.
const minCap = 16

// Ring is a FIFO queue of T. The zero value is an empty queue. It is not
// safe for concurrent use.
type Ring[T any] struct {
	buf  []T // len(buf) is 0 or a power of two
	head int
	n    int
}

// Len returns the number of values queued.
func (r *Ring[T]) Len() int { return r.n }

// Push adds v at the back, growing the buffer when it is full.
func (r *Ring[T]) Push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// grow doubles the buffer, moving the values to its start.
func (r *Ring[T]) grow() {
	nb := make([]T, max(minCap, 2*len(r.buf)))
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}

// Front returns a pointer to the value at the front, which stays valid
// until the next Push or Pop. The queue must not be empty.
func (r *Ring[T]) Front() *T { return &r.buf[r.head] }

// Pop removes the value at the front and returns it; its slot is cleared
// so that the queue keeps nothing alive. The queue must not be empty.
func (r *Ring[T]) Pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v
}
