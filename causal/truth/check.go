package truth

import "fmt"

// Check verifies that f is consistent: ids number the records in order,
// references point to records that exist, each request is one tree of its
// own messages rooted at its Root (parents before children), a RETURN
// shares its CALL's connection and ordinal, a message's call parent is its
// call's, and no two messages share a connection, direction and ordinal.
func (f *File) Check() error {
	for i, c := range f.Conns {
		if c.ID != i {
			return fmt.Errorf("%w: conn %d has id %d", ErrFormat, i, c.ID)
		}
		if c.Proto != "tcp" && c.Proto != "udp" {
			return fmt.Errorf("%w: conn %d: proto %q", ErrFormat, i, c.Proto)
		}
	}
	roots := make([]int, len(f.Requests))
	for i, r := range f.Requests {
		if r.ID != i {
			return fmt.Errorf("%w: request %d has id %d", ErrFormat, i, r.ID)
		}
		roots[i] = -1
	}
	type slot struct {
		conn, ord int
		dir       string
	}
	seen := make(map[slot]int, len(f.Messages))
	for i := range f.Messages {
		if err := f.checkMessage(i, roots); err != nil {
			return err
		}
		m := &f.Messages[i]
		s := slot{m.Conn, m.Ordinal, m.Dir}
		if j, dup := seen[s]; dup {
			return fmt.Errorf("%w: messages %d and %d are both %s %d on conn %d", ErrFormat, j, i, m.Dir, m.Ordinal, m.Conn)
		}
		seen[s] = i
	}
	for i, r := range f.Requests {
		if roots[i] != r.Root {
			return fmt.Errorf("%w: request %d: root %d, but its parentless message is %d", ErrFormat, i, r.Root, roots[i])
		}
	}
	return nil
}

func (f *File) checkMessage(i int, roots []int) error {
	m := &f.Messages[i]
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: message %d: %s", ErrFormat, i, fmt.Sprintf(format, a...))
	}
	if err := f.checkRefs(i, bad); err != nil {
		return err
	}
	if m.Parent == -1 {
		if roots[m.Request] != -1 {
			return bad("second root of request %d (the first is %d)", m.Request, roots[m.Request])
		}
		roots[m.Request] = i
		if m.Dir != Call || m.CallParent != -1 {
			return bad("a root must be a CALL without call parent")
		}
	} else if f.Messages[m.Parent].Request != m.Request {
		return bad("parent %d is in another request", m.Parent)
	}
	return f.checkCall(i, bad)
}

// checkRefs checks that message i's ids and references are in range.
func (f *File) checkRefs(i int, bad func(string, ...any) error) error {
	m := &f.Messages[i]
	switch {
	case m.ID != i:
		return bad("id %d", m.ID)
	case m.Request < 0 || m.Request >= len(f.Requests):
		return bad("request %d does not exist", m.Request)
	case m.Conn < 0 || m.Conn >= len(f.Conns):
		return bad("conn %d does not exist", m.Conn)
	case m.Dir != Call && m.Dir != Return:
		return bad("dir %q", m.Dir)
	case m.Ordinal < 0:
		return bad("ordinal %d", m.Ordinal)
	case m.Parent >= i || m.Parent < -1:
		return bad("parent %d is not an earlier message", m.Parent)
	case m.Call < 0 || m.Call > i:
		return bad("call %d is not an earlier message", m.Call)
	}
	return nil
}

// checkCall checks message i's call and call parent.
func (f *File) checkCall(i int, bad func(string, ...any) error) error {
	m := &f.Messages[i]
	c := &f.Messages[m.Call]
	if m.Dir == Call && m.Call != i {
		return bad("a CALL's call must be itself")
	}
	if c.Dir != Call || c.Request != m.Request || c.Conn != m.Conn || c.Stream != m.Stream || c.Stream == 0 && c.Ordinal != m.Ordinal {
		return bad("call %d is not the CALL of this message's connection and ordinal (or stream)", m.Call)
	}
	if m.Dir == Return && m.CallParent != c.CallParent {
		return bad("call parent %d differs from its CALL's %d", m.CallParent, c.CallParent)
	}
	if p := m.CallParent; p != -1 {
		if p < 0 || p >= i || f.Messages[p].Dir != Call || f.Messages[p].Request != m.Request {
			return bad("call parent %d is not an earlier CALL of the request", p)
		}
	}
	return nil
}
