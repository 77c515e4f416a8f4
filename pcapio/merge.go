package pcapio

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Defaults of Options.
const (
	// DefaultWindow is the dedupe window: copies of one wire packet whose
	// corrected timestamps lie within it of the first copy are grouped.
	DefaultWindow = 5 * time.Millisecond
	// DefaultReorder is how many packets of each input are held back to
	// put a slightly out-of-order capture (tcpdump -i any) back in order.
	DefaultReorder = 64
	// maxWindowWidening caps how much offset uncertainty widens the window.
	maxWindowWidening = int64(time.Second)
	// maxProblemsPerFile caps the problems kept per file; more are counted.
	maxProblemsPerFile = 100
)

// Options configure Open. The zero value reads every file as one sniffer,
// estimates clock offsets against the first file and groups duplicates
// within DefaultWindow.
type Options struct {
	// SplitInterfaces makes each pcapng interface a sniffer of its own
	// instead of each file.
	SplitInterfaces bool
	// Window is the dedupe window (0 means DefaultWindow). It is widened
	// by twice the largest offset uncertainty, up to one second more.
	Window time.Duration
	// NoDedupe returns every observation as a packet of its own.
	NoDedupe bool
	// Reference names the reference sniffer (a Sniffer.Name); "" is the
	// first sniffer.
	Reference string
	// Offsets fixes the offsets of the named sniffers against the
	// reference (sniffer clock minus reference clock); the others are
	// estimated.
	Offsets map[string]time.Duration
	// NoOffsets skips the estimation: offsets not in Offsets are unknown
	// and timestamps are used as they are.
	NoOffsets bool
	// MaxSamples bounds the wire keys sampled per sniffer for the
	// estimation (0 means DefaultMaxSamples).
	MaxSamples int
	// Reorder is the per-input reorder buffer in packets (0 means
	// DefaultReorder, negative means none).
	Reorder int
	// Progress, if set, is called as input is read with the bytes read so
	// far and the total to read (the files' sizes times the passes).
	Progress func(done, total int64)
}

// Merger reads many capture files and returns their packets in corrected
// time order, one Packet per wire packet with every Observation of it.
// It streams: memory is bounded by the dedupe window, the reorder buffers
// and the number of inputs, not by the size of the captures. A Merger is
// not safe for concurrent use.
type Merger struct {
	opts     Options
	files    []*fileIn
	sniffers []Sniffer
	offsets  []Offset
	offNS    []int64 // per sniffer, 0 when unknown
	streams  []*stream
	heads    streamHeap
	pending  ring
	byKey    map[uint64]*Packet
	free     []*Packet
	last     *Packet
	window   int64
	lastT    int64
	started  bool
	stats    Stats
	problems []error
	progress progressCounter
}

// fileIn is one input file.
type fileIn struct {
	path     string
	size     int64
	stats    FileStats
	problems int
	fatal    bool
	sniffer  int         // the file's sniffer when not split
	ifaces   map[int]int // interface index (-1: all) -> sniffer
	ifInfo   []Interface // the file's interfaces, from the first pass
}

// Open reads the headers of every file and, unless opts say otherwise,
// makes a first pass over all of them to estimate the clock offsets (and,
// with SplitInterfaces, to find the interfaces). It fails only when a file
// cannot be opened or an option is invalid; bad content is reported by
// Problems and the file's sniffer has no (or fewer) packets.
func Open(paths []string, opts Options) (*Merger, error) {
	if len(paths) == 0 {
		return nil, errors.New("no capture files")
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.Window < 0 {
		return nil, fmt.Errorf("negative dedupe window %v", opts.Window)
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = DefaultMaxSamples
	}
	if opts.Reorder == 0 {
		opts.Reorder = DefaultReorder
	}
	m := &Merger{opts: opts, byKey: make(map[uint64]*Packet)}
	m.progress.fn = opts.Progress
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory", p)
		}
		m.files = append(m.files, &fileIn{path: p, size: fi.Size(), stats: FileStats{Name: p}, ifaces: map[int]int{}})
	}
	given := len(opts.Offsets) > 0
	estimate := !opts.NoOffsets && len(paths) > 1 || opts.SplitInterfaces && !opts.NoOffsets
	var size int64
	for _, f := range m.files {
		size += f.size
	}
	m.progress.total = 2 * size
	var samplers []*sampler
	if opts.SplitInterfaces || estimate {
		var err error
		if samplers, err = m.firstPass(estimate); err != nil {
			return nil, err
		}
	} else {
		for i, f := range m.files {
			f.sniffer = i
			f.ifaces[-1] = i
			m.sniffers = append(m.sniffers, Sniffer{ID: SnifferID(i), File: f.path, Interface: -1})
		}
	}
	m.nameSniffers()
	ref := 0
	if opts.Reference != "" {
		ref = m.snifferByName(opts.Reference)
		if ref < 0 {
			return nil, fmt.Errorf("reference sniffer %q is none of %s", opts.Reference, m.snifferNames())
		}
	}
	gv := make([]*int64, len(m.sniffers))
	if given {
		for name, d := range opts.Offsets {
			i := m.snifferByName(name)
			if i < 0 {
				return nil, fmt.Errorf("offset given for %q, which is none of %s", name, m.snifferNames())
			}
			ns := int64(d)
			gv[i] = &ns
		}
	}
	m.offsets = solveOffsets(len(m.sniffers), ref, gv, func(i, j int) pairEstimate {
		if samplers == nil || samplers[i] == nil || samplers[j] == nil {
			return pairEstimate{}
		}
		return estimatePair(samplers[i], samplers[j])
	})
	samplers = nil
	m.offNS = make([]int64, len(m.sniffers))
	var widen int64
	for i, o := range m.offsets {
		if o.Known {
			m.offNS[i] = o.Offset
			widen = max(widen, 2*o.Uncertainty)
		}
	}
	m.window = int64(opts.Window) + min(widen, maxWindowWidening)
	m.stats.Window = m.window
	if err := m.openStreams(); err != nil {
		return nil, err
	}
	return m, nil
}

// firstPass reads every file once: it finds the sniffers (every
// interface that has packets, in order of index, when split) and, when
// estimate is set, samples wire keys.
func (m *Merger) firstPass(estimate bool) ([]*sampler, error) {
	var samplers []*sampler
	var p Packet
	var rec Record
	for _, f := range m.files {
		local := map[int]*sampler{}
		seen := map[int]bool{}
		whole := newSampler(m.opts.MaxSamples)
		lastIf, lastRes := -1, int64(0)
		r, err := m.openReader(f)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				return nil, err
			}
			r = nil
		}
		for r != nil {
			err := r.ReadRecord(&rec)
			if err == io.EOF || IsFatal(err) {
				break
			}
			if err != nil {
				continue
			}
			smp := whole
			if m.opts.SplitInterfaces {
				seen[rec.Interface] = true
				if smp = local[rec.Interface]; smp == nil && estimate {
					smp = newSampler(m.opts.MaxSamples)
					local[rec.Interface] = smp
				}
			}
			if estimate {
				Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
				if p.Status == StatusOK {
					smp.add(p.WireKey, rec.TS, p.Src, p.Dst)
				}
				if rec.Interface != lastIf {
					lastIf, lastRes = rec.Interface, resolutionNS(&r.Interfaces()[rec.Interface])
				}
				smp.res = max(smp.res, lastRes)
			}
		}
		if r != nil {
			f.ifInfo = slices.Clone(r.Interfaces())
			r.Close()
		}
		if !m.opts.SplitInterfaces || len(seen) == 0 {
			// One sniffer for the file; when split, a file without
			// packets (or unreadable) keeps one empty sniffer so that it
			// stays visible in the statistics.
			f.sniffer = len(m.sniffers)
			f.ifaces[-1] = f.sniffer
			m.sniffers = append(m.sniffers, Sniffer{ID: SnifferID(f.sniffer), File: f.path, Interface: -1})
			if estimate && !m.opts.SplitInterfaces {
				samplers = append(samplers, whole)
			} else {
				samplers = append(samplers, nil)
			}
			continue
		}
		ifs := slices.Sorted(maps.Keys(seen))
		for _, i := range ifs {
			f.ifaces[i] = len(m.sniffers)
			m.sniffers = append(m.sniffers, Sniffer{ID: SnifferID(len(m.sniffers)), File: f.path, Interface: i})
			samplers = append(samplers, local[i])
		}
	}
	if !estimate {
		samplers = nil
	}
	return samplers, nil
}

// openReader opens f with progress counting.
func (m *Merger) openReader(f *fileIn) (*Reader, error) {
	osf, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(&countingReader{r: osf, c: &m.progress}, f.path)
	if err != nil {
		osf.Close()
		return nil, err
	}
	r.closers = append([]io.Closer{osf}, r.closers...)
	return r, nil
}

func (m *Merger) nameSniffers() {
	bases := map[string]int{}
	for _, f := range m.files {
		bases[filepath.Base(f.path)]++
	}
	for i := range m.sniffers {
		s := &m.sniffers[i]
		name := filepath.Base(s.File)
		if bases[name] > 1 {
			name = s.File
		}
		s.Name = name
	}
	// Interface names, where unique within the file, else indexes.
	for _, f := range m.files {
		names := map[string]int{}
		for _, ifc := range f.ifInfo {
			names[ifc.Name]++
		}
		for i := range m.sniffers {
			s := &m.sniffers[i]
			if s.File != f.path || s.Interface < 0 {
				continue
			}
			if len(f.ifInfo) == 1 {
				continue // one interface: the file name says it all
			}
			suffix := strconv.Itoa(s.Interface)
			if s.Interface < len(f.ifInfo) {
				if n := f.ifInfo[s.Interface].Name; n != "" && names[n] == 1 {
					suffix = n
				}
			}
			s.Name += "#" + suffix
		}
	}
}

func (m *Merger) snifferByName(name string) int {
	for i, s := range m.sniffers {
		if s.Name == name || s.File == name {
			return i
		}
	}
	return -1
}

func (m *Merger) snifferNames() string {
	s := ""
	for i, sn := range m.sniffers {
		if i > 0 {
			s += ", "
		}
		s += strconv.Quote(sn.Name)
	}
	return s
}

// Sniffers returns the capture points, indexed by SnifferID. Their
// counters are complete once Next has returned io.EOF.
func (m *Merger) Sniffers() []Sniffer { return m.sniffers }

// Offsets returns each sniffer's clock offset, indexed by SnifferID.
func (m *Merger) Offsets() []Offset { return m.offsets }

// Stats returns the accounting so far; it is complete once Next has
// returned io.EOF.
func (m *Merger) Stats() Stats {
	s := m.stats
	s.Files = make([]FileStats, len(m.files))
	s.Total = Counts{}
	for i, f := range m.files {
		s.Files[i] = f.stats
		s.Files[i].Problems = f.problems
		s.Files[i].Complete = !f.fatal
		s.Total.add(f.stats.Counts)
	}
	return s
}

// Problems returns the problems found in the input so far, each a
// *ParseError naming the file and byte offset (at most 100 per file; the
// FileStats count them all).
func (m *Merger) Problems() []error { return m.problems }

// Close closes every input.
func (m *Merger) Close() error {
	var err error
	for _, s := range m.streams {
		if s.rd != nil {
			if cerr := s.rd.Close(); err == nil {
				err = cerr
			}
			s.rd = nil
		}
	}
	return err
}

func (m *Merger) problem(f *fileIn, err error) {
	f.problems++
	if f.problems <= maxProblemsPerFile {
		var pe *ParseError
		if !errors.As(err, &pe) {
			err = &ParseError{File: f.path, Err: err}
		}
		m.problems = append(m.problems, err)
	}
}

// stream is one input of the k-way merge: a file, or one interface of a
// file when interfaces are split.
type stream struct {
	idx     int
	file    *fileIn
	rd      *Reader
	iface   int  // -1: every interface
	primary bool // reports the file's problems and drops
	sniffer int  // when iface == -1
	done    bool
	rec     Record
	reorder packetHeap
}

func (m *Merger) openStreams() error {
	passes := int64(0)
	for _, f := range m.files {
		first := true
		add := func(iface, sn int) {
			s := &stream{idx: len(m.streams), file: f, iface: iface, primary: first, sniffer: sn}
			first = false
			m.streams = append(m.streams, s)
			passes += f.size
		}
		if m.opts.SplitInterfaces {
			for i := range m.sniffers {
				sn := &m.sniffers[i]
				if sn.File == f.path {
					add(sn.Interface, i)
				}
			}
		} else {
			add(-1, f.sniffer)
		}
	}
	m.progress.total = m.progress.done + passes
	for i := range m.sniffers {
		s := &m.sniffers[i]
		s.Packets, s.Bytes, s.First, s.Last, s.LinkTypes = 0, 0, 0, 0, nil
	}
	m.stats.Shared = make([][]int64, len(m.sniffers))
	for i := range m.stats.Shared {
		m.stats.Shared[i] = make([]int64, len(m.sniffers))
	}
	for _, s := range m.streams {
		r, err := m.openReader(s.file)
		if err != nil {
			if s.primary {
				m.problem(s.file, err)
				s.file.fatal = true
			}
			s.done = true
			continue
		}
		s.rd = r
		if s.primary {
			s.file.stats.Format = r.Format().String()
			s.file.stats.Compression = r.Compression().String()
		}
	}
	return nil
}

// fill reads from s until its reorder buffer is full or the input ends.
func (m *Merger) fill(s *stream) {
	limit := max(m.opts.Reorder, 1)
	for !s.done && len(s.reorder) < limit {
		err := s.rd.ReadRecord(&s.rec)
		if err == io.EOF {
			s.done = true
			break
		}
		if err != nil {
			if s.primary {
				m.problem(s.file, err)
				switch {
				case errors.Is(err, io.ErrUnexpectedEOF):
					s.file.stats.CutRecords++
				case errors.Is(err, ErrBadLength) || errors.Is(err, ErrBadBlock) || errors.Is(err, ErrUnknownInterface):
					var pe *ParseError
					if errors.As(err, &pe) && pe.Packet > 0 {
						s.file.stats.BadRecords++
					}
				}
				if IsFatal(err) {
					s.file.fatal = true
				}
			}
			if IsFatal(err) {
				s.done = true
			}
			continue
		}
		rec := &s.rec
		sn := s.sniffer
		if s.iface >= 0 && rec.Interface != s.iface {
			continue
		}
		p := m.get()
		if cap(p.buf) < len(rec.Data) {
			p.buf = make([]byte, len(rec.Data), max(len(rec.Data), 2048))
		}
		buf := p.buf[:len(rec.Data)]
		copy(buf, rec.Data)
		Decode(p, rec.LinkType, buf, rec.WireLen)
		o := &p.Obs[0]
		o.Sniffer = SnifferID(sn)
		o.Interface = uint16(rec.Interface)
		o.TS = rec.TS
		o.Corrected = rec.TS - m.offNS[sn]
		p.num = rec.Number
		p.stream = int32(s.idx)
		s.file.stats.count(p)
		m.sniffers[sn].observe(p, rec.TS)
		if m.opts.Reorder < 0 {
			s.reorder = append(s.reorder, p)
			break
		}
		heap.Push(&s.reorder, p)
	}
	if s.done && s.rd != nil {
		s.rd.Close()
		s.rd = nil
	}
}

// pop returns the next observation in corrected time order, or nil.
func (m *Merger) pop() *Packet {
	if !m.started {
		m.started = true
		for _, s := range m.streams {
			m.fill(s)
			if len(s.reorder) > 0 {
				m.heads = append(m.heads, s)
			}
		}
		heap.Init(&m.heads)
	}
	if len(m.heads) == 0 {
		return nil
	}
	s := m.heads[0]
	var p *Packet
	if m.opts.Reorder < 0 {
		p = s.reorder[0]
		s.reorder = s.reorder[:0]
	} else {
		p = heap.Pop(&s.reorder).(*Packet)
	}
	m.fill(s)
	if len(s.reorder) == 0 {
		heap.Pop(&m.heads)
	} else {
		heap.Fix(&m.heads, 0)
	}
	return p
}

// frontier is the corrected time of the next observation, if any.
func (m *Merger) frontier() (int64, bool) {
	if len(m.heads) == 0 {
		return 0, false
	}
	return m.heads[0].reorder[0].Obs[0].Corrected, true
}

// Next returns the next packet in corrected time order, or io.EOF after
// the last. The packet is owned by the Merger and valid until the next
// call; use Packet.Clone to keep it. Problems in the input do not stop
// Next (see Problems); Next returns no other error.
func (m *Merger) Next() (*Packet, error) {
	if m.last != nil {
		m.recycle(m.last)
		m.last = nil
	}
	if m.opts.NoDedupe {
		p := m.pop()
		if p == nil {
			return nil, io.EOF
		}
		m.order(p)
		m.account(p)
		m.last = p
		return p, nil
	}
	for {
		if m.pending.len() > 0 {
			g := m.pending.front()
			if t, ok := m.frontier(); !ok || t-g.TS() > m.window {
				m.pending.pop()
				if m.byKey[g.WireKey] == g {
					delete(m.byKey, g.WireKey)
				}
				m.account(g)
				m.last = g
				return g, nil
			}
		}
		p := m.pop()
		if p == nil {
			if m.pending.len() == 0 {
				return nil, io.EOF
			}
			continue
		}
		m.add(p)
	}
}

// order counts observations that come out of time order.
func (m *Merger) order(p *Packet) {
	if t := p.Obs[0].Corrected; t < m.lastT {
		m.stats.OutOfOrder++
	} else {
		m.lastT = t
	}
}

// add puts one observation into its packet: an existing one with the same
// wire key within the window, or a new one.
func (m *Merger) add(p *Packet) {
	m.order(p)
	t := p.Obs[0].Corrected
	{
		if g := m.byKey[p.WireKey]; g != nil && absDiff(t, g.TS()) <= m.window {
			g.Obs = append(g.Obs, p.Obs[0])
			// Keep Obs ordered by corrected time (it nearly always is).
			for i := len(g.Obs) - 1; i > 0 && g.Obs[i].Corrected < g.Obs[i-1].Corrected; i-- {
				g.Obs[i], g.Obs[i-1] = g.Obs[i-1], g.Obs[i]
			}
			m.recycle(p)
			return
		}
		m.byKey[p.WireKey] = p
	}
	m.pending.push(p)
}

// account counts a packet that is being returned.
func (m *Merger) account(g *Packet) {
	m.stats.Packets++
	if len(g.Obs) == 1 {
		return
	}
	m.stats.Duplicates += int64(len(g.Obs) - 1)
	for i, o := range g.Obs {
		if f := firstOf(g.Obs, o.Sniffer); f != i {
			if secondOf(g.Obs, o.Sniffer) == i {
				m.stats.Shared[o.Sniffer][o.Sniffer]++
			}
			continue
		}
		for j := range i {
			q := g.Obs[j].Sniffer
			if firstOf(g.Obs, q) == j {
				m.stats.Shared[o.Sniffer][q]++
				m.stats.Shared[q][o.Sniffer]++
			}
		}
	}
}

func firstOf(obs []Observation, s SnifferID) int {
	for i, o := range obs {
		if o.Sniffer == s {
			return i
		}
	}
	return -1
}

func secondOf(obs []Observation, s SnifferID) int {
	n := 0
	for i, o := range obs {
		if o.Sniffer == s {
			if n++; n == 2 {
				return i
			}
		}
	}
	return -1
}

func (m *Merger) get() *Packet {
	if n := len(m.free); n > 0 {
		p := m.free[n-1]
		m.free = m.free[:n-1]
		return p
	}
	return &Packet{Obs: make([]Observation, 0, 2)}
}

func (m *Merger) recycle(p *Packet) {
	m.free = append(m.free, p)
}

// ring is a FIFO of packets awaiting the end of their dedupe window.
type ring struct {
	buf        []*Packet
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) front() *Packet { return r.buf[r.head] }

func (r *ring) push(p *Packet) {
	if r.size == len(r.buf) {
		nb := make([]*Packet, max(16, 2*len(r.buf)))
		for i := range r.size {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = p
	r.size++
}

func (r *ring) pop() *Packet {
	p := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return p
}

// packetHeap orders one stream's buffered packets by corrected time, then
// record number.
type packetHeap []*Packet

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.Obs[0].Corrected != b.Obs[0].Corrected {
		return a.Obs[0].Corrected < b.Obs[0].Corrected
	}
	return a.num < b.num
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(*Packet)) }
func (h *packetHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}

// streamHeap orders streams by their next packet: corrected time, then
// input index, then record number.
type streamHeap []*stream

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	a, b := h[i].reorder[0], h[j].reorder[0]
	if a.Obs[0].Corrected != b.Obs[0].Corrected {
		return a.Obs[0].Corrected < b.Obs[0].Corrected
	}
	if h[i].idx != h[j].idx {
		return h[i].idx < h[j].idx
	}
	return a.num < b.num
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)   { *h = append(*h, x.(*stream)) }
func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

// progressCounter adds up the bytes read from every file.
type progressCounter struct {
	fn          func(done, total int64)
	done, total int64
}

type countingReader struct {
	r io.Reader
	c *progressCounter
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.c.done += int64(n)
	if c.c.fn != nil && n > 0 {
		c.c.fn(c.c.done, max(c.c.total, c.c.done))
	}
	return n, err
}
