package flows

// msgList is a list of messages in the order they were added, from which
// the oldest are removed in O(1) (the common case: messages are emitted
// in the order they were made); any other removal costs a copy.
type msgList struct {
	ms   []*msg
	head int
}

// all returns the messages, oldest first.
func (l *msgList) all() []*msg { return l.ms[l.head:] }

// len returns how many messages the list holds.
func (l *msgList) len() int { return len(l.ms) - l.head }

// push adds m at the end.
func (l *msgList) push(m *msg) {
	if l.head > 0 && l.head >= len(l.ms)/2 {
		n := copy(l.ms, l.ms[l.head:])
		clear(l.ms[n:])
		l.ms, l.head = l.ms[:n], 0
	}
	l.ms = append(l.ms, m)
}

// remove takes m out of the list, if it is there.
func (l *msgList) remove(m *msg) {
	if l.head < len(l.ms) && l.ms[l.head] == m {
		l.ms[l.head] = nil
		l.head++
		return
	}
	for i := l.head; i < len(l.ms); i++ {
		if l.ms[i] == m {
			copy(l.ms[i:], l.ms[i+1:])
			l.ms[len(l.ms)-1] = nil
			l.ms = l.ms[:len(l.ms)-1]
			return
		}
	}
}

// reset empties the list, keeping its memory.
func (l *msgList) reset() {
	clear(l.ms)
	l.ms, l.head = l.ms[:0], 0
}

// startMin is a sliding-window minimum of the first offsets of a
// direction's decoded messages waiting to be emitted, which leave in the
// order they came (Config.Settle after they were cut): the oldest byte
// whose late sightings must still be told from retransmissions.
type startMin struct {
	q    []startEntry
	head int
}

type startEntry struct {
	start int64
	index uint32 // the message's Index, to recognise it when it leaves
}

// push adds a message's first offset.
func (s *startMin) push(start int64, index uint32) {
	for len(s.q) > s.head && s.q[len(s.q)-1].start >= start {
		s.q = s.q[:len(s.q)-1]
	}
	if s.head > 0 && s.head >= len(s.q)/2 {
		n := copy(s.q, s.q[s.head:])
		s.q, s.head = s.q[:n], 0
	}
	s.q = append(s.q, startEntry{start, index})
}

// pop removes the message index, which leaves now, if it is the oldest
// entry.
func (s *startMin) pop(index uint32) {
	if s.head < len(s.q) && s.q[s.head].index == index {
		s.head++
	}
}

// min returns the smallest first offset of the messages waiting.
func (s *startMin) min() (int64, bool) {
	if s.head == len(s.q) {
		return 0, false
	}
	return s.q[s.head].start, true
}

// reset empties s, keeping its memory.
func (s *startMin) reset() { s.q, s.head = s.q[:0], 0 }

// before returns the message just before m, nil when m is the oldest or
// not in the list.
func (l *msgList) before(m *msg) *msg {
	ms := l.all()
	for i := len(ms) - 1; i > 0; i-- {
		if ms[i] == m {
			return ms[i-1]
		}
	}
	return nil
}
