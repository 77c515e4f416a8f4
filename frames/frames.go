package frames

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// DefaultTolerance is how far outside a message's time window (ns) a frame
// of its connection may lie and still be counted as the message's, on top
// of the largest clock offset the trace knows: the merged capture's times
// are the first sighting's, the trace's the sender's and the receiver's.
const DefaultTolerance = 2_000_000

// Options tune Build.
type Options struct {
	// Tolerance widens each message's window, ns (0: DefaultTolerance).
	Tolerance int64
}

// Index maps messages of a trace to frame numbers of a capture.
type Index struct {
	frames map[int][]int64
	// Stats counts what Build read and matched.
	Stats Stats
}

// Stats are Build's counters. Frames = Matched + Unmatched + NoPayload
// + Undecoded.
type Stats struct {
	// Frames counts the capture's packet records.
	Frames int64
	// Matched counts frames given to a message; Unmatched frames with a
	// payload that fit no message; NoPayload frames without one (ACKs,
	// SYNs, ...); Undecoded frames that are not TCP or UDP over IP.
	Matched, Unmatched, NoPayload, Undecoded int64
	// Skipped counts records the reader skipped as bad.
	Skipped int64
	// Messages counts the messages that got at least one frame.
	Messages int
}

// Frames returns the frame numbers of message msg (its index in the
// trace), ascending; nil when none was found.
func (x *Index) Frames(msg int) []int64 { return x.frames[msg] }

// FramesOf returns the frame numbers of the messages msgs, ascending and
// without duplicates; negative indices (unseen messages) are skipped.
func (x *Index) FramesOf(msgs []int) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, x.frames[m]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DisplayFilter returns the Wireshark display filter that selects the
// frames fs (Filter), "" when there are none.
func (x *Index) DisplayFilter(fs []int64) string {
	f, _ := Filter(fs)
	return f
}

// window is one message's place in time on its connection.
type window struct {
	msg    int
	lo, hi int64 // the message's own window, ns
}

// flowKey is a direction of a connection as the trace names it: a
// comparable value, so that matching a packet allocates nothing.
type flowKey struct {
	src, dst netip.AddrPort
	proto    trace.Proto
}

// BuildFile reads the capture at path; see Build.
func BuildFile(path string, t *trace.Trace, opt Options) (*Index, error) {
	r, err := pcapio.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return Build(r, t, opt)
}

// Build reads the capture r and maps the messages of t to its frames.
// Records the reader cannot read are skipped and counted; an I/O error
// or a capture that ends inside a record stops it.
func Build(r *pcapio.Reader, t *trace.Trace, opt Options) (*Index, error) {
	mt := newMatcher(t, opt)
	x := &Index{frames: map[int][]int64{}}
	var rec pcapio.Record
	for {
		err := r.ReadRecord(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			if pcapio.IsFatal(err) {
				return nil, err
			}
			x.Stats.Skipped++
			continue
		}
		x.Stats.Frames++
		m, class := mt.match(&rec)
		switch class {
		case matched:
			x.frames[m] = append(x.frames[m], rec.Number)
			x.Stats.Matched++
		case unmatched:
			x.Stats.Unmatched++
		case noPayload:
			x.Stats.NoPayload++
		default:
			x.Stats.Undecoded++
		}
	}
	for m, fs := range x.frames {
		slices.Sort(fs)
		x.frames[m] = slices.Compact(fs)
	}
	x.Stats.Messages = len(x.frames)
	return x, nil
}

// What match found of a record.
const (
	matched = iota
	unmatched
	noPayload
	undecoded
)

// matcher finds the message of a record; it allocates nothing per record.
type matcher struct {
	flows map[flowKey][]window
	al    *aliases
	tol   int64
	p     pcapio.Packet
	keys  []flowKey
}

func newMatcher(t *trace.Trace, opt Options) *matcher {
	tol := opt.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	return &matcher{flows: windows(t), al: newAliases(t.Meta.Aliases), tol: tol + maxOffset(t)}
}

// match decodes rec and returns the message it carries and how it was
// classed (matched, unmatched, noPayload, undecoded).
func (mt *matcher) match(rec *pcapio.Record) (int, int) {
	pcapio.Decode(&mt.p, rec.LinkType, rec.Data, rec.WireLen)
	proto, ok := transport(&mt.p)
	if !ok {
		return -1, undecoded
	}
	if mt.p.PayloadLen == 0 && proto == trace.ProtoTCP {
		return -1, noPayload
	}
	mt.keys = mt.al.keys(mt.keys[:0], &mt.p, proto)
	if m := nearest(mt.flows, mt.keys, rec.TS, mt.tol); m >= 0 {
		return m, matched
	}
	return -1, unmatched
}

// maxOffset is the largest known clock offset of the trace's nodes, ns.
func maxOffset(t *trace.Trace) int64 {
	var m int64
	for _, o := range t.Meta.Offsets {
		if o.Known {
			m = max(m, o.OffsetNS, -o.OffsetNS)
		}
	}
	return m
}

// transport returns the trace's name of p's transport, false when p is not
// TCP or UDP over IP (or is a fragment after the first).
func transport(p *pcapio.Packet) (trace.Proto, bool) {
	if p.Status != pcapio.StatusOK || p.FragOffset != 0 {
		return 0, false
	}
	switch p.Proto {
	case pcapio.ProtoTCP:
		return trace.ProtoTCP, true
	case pcapio.ProtoUDP:
		return trace.ProtoUDP, true
	}
	return 0, false
}

// windows groups the messages of t by direction of their connection, each
// group in time order. Messages whose endpoints are not IP addresses and
// ports (UNIX sockets, names) are left out: no packet carries them.
func windows(t *trace.Trace) map[flowKey][]window {
	out := map[flowKey][]window{}
	eps := map[trace.Sym]netip.AddrPort{}
	ep := func(s trace.Sym) netip.AddrPort {
		a, ok := eps[s]
		if !ok {
			a, _ = netip.ParseAddrPort(t.Str(s))
			eps[s] = a
		}
		return a
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		src, dst := ep(m.Src), ep(m.Dst)
		if !src.IsValid() || !dst.IsValid() {
			continue
		}
		lo, hi := m.SendTS, m.RecvTS
		if !lo.Known() {
			lo = hi
		}
		if !hi.Known() {
			hi = lo
		}
		if hi < lo {
			lo, hi = hi, lo
		}
		k := flowKey{src, dst, m.Proto}
		out[k] = append(out[k], window{msg: i, lo: int64(lo), hi: int64(hi)})
	}
	for _, ws := range out {
		slices.SortStableFunc(ws, func(a, b window) int {
			if a.lo != b.lo {
				return cmp(a.lo, b.lo)
			}
			return a.msg - b.msg
		})
	}
	return out
}

func cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// nearest returns the message among those of the flows keys whose window,
// widened by tol, holds ts and lies nearest it (0 inside), -1 if none.
func nearest(flows map[flowKey][]window, keys []flowKey, ts, tol int64) int {
	best, bestD := -1, int64(-1)
	for _, k := range keys {
		ws := flows[k]
		// The first window that starts after ts+tol cannot hold it, nor
		// can any later; windows do not nest on one direction of a
		// connection, so look back from there while they may.
		i, _ := slices.BinarySearchFunc(ws, ts+tol+1, func(w window, t int64) int { return cmp(w.lo, t) })
		for j := i - 1; j >= 0; j-- {
			w := ws[j]
			if w.hi+tol < ts {
				if ts-w.hi > 64*tol {
					break // far behind: earlier ones are further still
				}
				continue
			}
			d := int64(0)
			switch {
			case ts < w.lo:
				d = w.lo - ts
			case ts > w.hi:
				d = ts - w.hi
			}
			if bestD < 0 || d < bestD || d == bestD && w.msg < best {
				best, bestD = w.msg, d
			}
		}
	}
	return best
}

// aliases maps a wire endpoint to the endpoints the trace may name it by.
type aliases struct {
	// exact maps an endpoint to its other names; wild maps an address
	// whose every port translates ("10.20.0.1:*") to other addresses.
	exact map[netip.AddrPort][]netip.AddrPort
	wild  map[netip.Addr][]netip.Addr
	// Scratch space of keys, reused from packet to packet.
	srcs, dsts []netip.AddrPort
}

func newAliases(as []trace.Alias) *aliases {
	a := &aliases{exact: map[netip.AddrPort][]netip.AddrPort{}, wild: map[netip.Addr][]netip.Addr{}}
	for _, x := range as {
		oh, owild := strings.CutSuffix(x.Outside, ":*")
		ih, iwild := strings.CutSuffix(x.Inside, ":*")
		if owild && iwild {
			o, err1 := netip.ParseAddr(strings.Trim(oh, "[]"))
			i, err2 := netip.ParseAddr(strings.Trim(ih, "[]"))
			if err1 == nil && err2 == nil {
				a.wild[o] = append(a.wild[o], i)
			}
			continue
		}
		o, err1 := netip.ParseAddrPort(x.Outside)
		i, err2 := netip.ParseAddrPort(x.Inside)
		if err1 != nil || err2 != nil {
			continue
		}
		a.exact[o] = append(a.exact[o], i)
		// A translation is seen from both sides: the inside name may
		// stand for the outside one in a trace that kept it.
		a.exact[i] = append(a.exact[i], o)
	}
	return a
}

// names appends the endpoint addr:port and the names it stands for.
func (a *aliases) names(dst []netip.AddrPort, addr netip.Addr, port uint16) []netip.AddrPort {
	ep := netip.AddrPortFrom(addr, port)
	dst = append(dst, ep)
	dst = append(dst, a.exact[ep]...)
	for _, in := range a.wild[addr] {
		dst = append(dst, netip.AddrPortFrom(in, port))
	}
	return dst
}

// keys returns the flow keys packet p may belong to, in dst.
func (a *aliases) keys(dst []flowKey, p *pcapio.Packet, proto trace.Proto) []flowKey {
	a.srcs = a.names(a.srcs[:0], p.Src, p.SrcPort)
	a.dsts = a.names(a.dsts[:0], p.Dst, p.DstPort)
	for _, s := range a.srcs {
		for _, d := range a.dsts {
			dst = append(dst, flowKey{s, d, proto})
		}
	}
	return dst
}

// ErrNoFrames is returned by Filter for an empty set of frames.
var ErrNoFrames = errors.New("no frames")

// Filter returns the Wireshark display filter that selects the frames fs
// (ascending): "frame.number in {32, 33, 85..88}", runs of consecutive
// numbers as ranges. Wireshark 4 reads it (earlier versions want the set's
// members separated by spaces).
func Filter(fs []int64) (string, error) {
	if len(fs) == 0 {
		return "", ErrNoFrames
	}
	var b strings.Builder
	b.WriteString("frame.number in {")
	for i := 0; i < len(fs); {
		j := i
		for j+1 < len(fs) && fs[j+1] == fs[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(fs[i], 10))
		if j > i {
			fmt.Fprintf(&b, "..%d", fs[j])
		}
		i = j + 1
	}
	b.WriteString("}")
	return b.String(), nil
}
