package flows

// keepCap is the largest capacity of a growable slice that a recycled
// connection state keeps. A state is reused for any later connection, and
// a reused state would otherwise keep the largest of each slice it ever
// had (a keep-alive connection's thousand round-trip samples, its long
// list of messages in flight): the free states, as many as the
// connections once open at a time, would grow through the run towards
// that many times the largest.
const keepCap = 64

// trim lets go of c's slices grown past keepCap, as c is recycled (its
// messages all emitted). The next connection that needs them grows them
// again.
func (c *conn) trim() {
	if cap(c.unsealed.ms) > keepCap {
		c.unsealed.ms, c.unsealed.head = nil, 0
	}
	if f := c.figs; f != nil {
		if cap(f.rtt) > keepCap {
			f.rtt = nil
		}
		for d := range f.tput {
			if cap(f.tput[d]) > keepCap {
				f.tput[d] = nil
			}
		}
	}
	for d := range c.half {
		if s := &c.half[d].starts; cap(s.q) > keepCap {
			s.q, s.head = nil, 0
		}
	}
}
