package flows

// bufPool recycles the buffers that hold out-of-order data and its
// sightings, so that steady-state reassembly does not allocate. It also
// keeps the total of buffered bytes for the global limit.
type bufPool struct {
	classes  [4][][]byte // free byte buffers of 256 B, 2 KiB, 16 KiB, 64 KiB
	obs      [][]segObs
	buffered int64 // stream bytes buffered out of order, all connections
	// ch is the chunk a stream delivers (chunk), shared by the streams:
	// one is delivered at a time. chBusy guards it: a delivery made
	// while another is under way gets a chunk of its own.
	ch     chunk
	chBusy bool
}

// chunk returns the scratch chunk for a delivery, or a new one if a
// delivery is under way.
func (p *bufPool) chunk() *chunk {
	if p.chBusy {
		return new(chunk)
	}
	p.chBusy = true
	return &p.ch
}

// releaseChunk ends the delivery of c.
func (p *bufPool) releaseChunk(c *chunk) {
	*c = chunk{}
	if c == &p.ch {
		p.chBusy = false
	}
}

var classSizes = [4]int{256, 2 << 10, 16 << 10, 64 << 10}

// maxPooled bounds each free list so an unusual burst does not pin memory.
const maxPooled = 4096

// copyBytes returns a pooled copy of b (nil for empty b).
func (p *bufPool) copyBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	for i, sz := range classSizes {
		if len(b) <= sz {
			fl := p.classes[i]
			var buf []byte
			if n := len(fl); n > 0 {
				buf = fl[n-1][:len(b)]
				p.classes[i] = fl[:n-1]
			} else {
				buf = make([]byte, len(b), sz)
			}
			copy(buf, b)
			return buf
		}
	}
	return append([]byte(nil), b...)
}

// freeBytes returns a buffer from copyBytes to the pool.
func (p *bufPool) freeBytes(b []byte) {
	c := cap(b)
	for i, sz := range classSizes {
		if c == sz {
			if len(p.classes[i]) < maxPooled {
				p.classes[i] = append(p.classes[i], b[:0])
			}
			return
		}
	}
}

// copyObs returns a pooled copy of o.
func (p *bufPool) copyObs(o []segObs) []segObs {
	if len(o) == 0 {
		return nil
	}
	var buf []segObs
	if n := len(p.obs); n > 0 && cap(p.obs[n-1]) >= len(o) {
		buf = p.obs[n-1][:0]
		p.obs = p.obs[:n-1]
	} else {
		buf = make([]segObs, 0, max(4, len(o)))
	}
	return append(buf, o...)
}

// freeObs returns a slice from copyObs to the pool.
func (p *bufPool) freeObs(o []segObs) {
	if o != nil && len(p.obs) < maxPooled {
		p.obs = append(p.obs, o[:0])
	}
}
