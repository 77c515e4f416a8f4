package pcapio

import (
	"container/heap"
	"errors"
	"fmt"
	"github.com/wirepath/wirepath/internal/keytab"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/internal/ring"
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
	// DefaultMaxObservations caps the observations one packet keeps: more
	// copies of it (identical frames with equal timestamps, a flood) are
	// counted as dropped copies.
	DefaultMaxObservations = 64
	// DefaultMaxPendingBytes bounds the memory of the packets waiting for
	// their dedupe window to end; past it the oldest leave early.
	DefaultMaxPendingBytes = 256 << 20
	// pendingOverhead is what a pending packet costs besides its frame
	// buffer (the Packet, its observations, the index entry).
	pendingOverhead = 400
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
	// MaxObservations caps the observations one packet keeps (0 means
	// DefaultMaxObservations); further copies are counted
	// (Stats.DroppedCopies), not kept.
	MaxObservations int
	// MaxPendingBytes bounds the memory of the packets waiting for their
	// dedupe window to end (0 means DefaultMaxPendingBytes): packets with
	// one timestamp never let the window end. Past it the oldest leave
	// before their window ends (Stats.EarlyReleases), so a later copy of
	// one of them becomes a packet of its own.
	MaxPendingBytes int
	// Filter, if set, selects the records read (a capture filter
	// expression: package pcapfilter); the others are counted as
	// Counts.Filtered and never decoded.
	Filter RecordFilter
	// Start and End, if set, select the packets whose corrected time is
	// at or after Start and before End (absolute, or relative to the
	// first packet's); the others are counted as Stats.OutsideTime.
	Start, End TimeBound
	// LookAhead is how much capture time of each input is read ahead, and
	// kept, to find the sniffers and estimate the clock offsets before
	// the merge starts (0 means DefaultLookAhead); LookAheadBytes bounds
	// the captured bytes kept over all inputs (0 means
	// DefaultLookAheadBytes; at least 1 MiB per input). Every input is
	// read once: the records read ahead are merged from memory.
	LookAhead      time.Duration
	LookAheadBytes int
	// Refine, if set, is called once the offsets are estimated, if some
	// sniffer's offset is still unknown, before the merge starts (with
	// every offset known there is nothing for it to complete), with a
	// Merger over the records read ahead alone
	// (merged with those offsets; its own statistics). It returns every
	// sniffer's offset as it now knows them (indexed by SnifferID); the
	// ones that were unknown and now are known are taken, and the rest
	// are estimated again, chained from them. Package pipeline completes
	// the offsets across NAT this way.
	Refine func(readAhead *Merger) ([]Offset, error)
	// Progress, if set, is called as input is read with the bytes read so
	// far and the total to read (the files' sizes; -1 when an input is a
	// pipe or standard input, whose size is unknown). It is called from
	// the reading goroutines, one call at a time.
	Progress func(done, total int64)
}

// Merger reads many capture files and returns their packets in corrected
// time order, one Packet per wire packet with every Observation of it.
// It streams: memory is bounded by the dedupe window, the reorder buffers
// and the number of inputs, not by the size of the captures. Each input
// is read and decoded on a goroutine of its own; Close stops them. A
// Merger is not safe for concurrent use.
type Merger struct {
	opts      Options
	files     []*fileIn
	sniffers  []Sniffer
	offsets   []Offset
	models    []clock.Model // per sniffer: Corrected = Local(TS); not Known: TS
	streams   []*stream
	heads     streamHeap
	pending   ring.Ring[*Packet] // packets awaiting the end of their dedupe window
	byKey     keytab.Table[*Packet]
	free      []*Packet      // recycled packets, given back to pool a batch at a time
	pool      chan []*Packet // recycled packets for the producers
	quit      chan struct{}  // closed by Close: producers stop
	closed    bool
	producers sync.WaitGroup
	last      *Packet
	window    int64
	lastT     int64
	started   bool
	stats     Stats
	problems  []error
	progress  progressCounter
	// pendingBytes is what the pending packets hold (their frame buffers
	// and pendingOverhead each).
	pendingBytes int64
	// The time bounds, resolved at the first packet.
	bounded        bool
	startNS, endNS int64
	aheadOnly      bool // merges the records read ahead only (Options.Refine)
}

// fileIn is one input file.
type fileIn struct {
	path     string
	size     int64 // -1 when unknown (a pipe, standard input)
	stats    FileStats
	problems int
	fatal    bool
	sniffer  int         // the file's (first) sniffer
	ifaces   map[int]int // interface index (-1: all) -> sniffer
	ifInfo   []Interface // the file's interfaces, from the read-ahead

	// What the read-ahead left: the open reader (nil before and when it
	// could not be opened), the records it read with their bytes, whether
	// it met the end of the file, and the error that kept the file from
	// being opened as a capture.
	r        *Reader
	ahead    []aheadRec
	arena    [][]byte
	aheadEnd bool
	openErr  error
}

// Open reads the headers of every file and, unless opts say otherwise,
// reads ahead in each (Options.LookAhead) to estimate the clock offsets
// (and, with SplitInterfaces, to find the interfaces). Every file is read
// once: what was read ahead is merged from memory, so a path may be a
// named pipe, /dev/fd/N (a shell's <(...)) or StdinName ("-", standard
// input). It fails only when a file cannot be opened or an option is
// invalid (a name that names no sniffer is a *SnifferNameError); bad
// content is reported by Problems and the file's sniffer has no (or
// fewer) packets.
func Open(paths []string, opts Options) (*Merger, error) {
	if len(paths) == 0 {
		return nil, errors.New("no capture files")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Merger{opts: opts}
	m.progress.fn = opts.Progress
	if err := m.addFiles(paths); err != nil {
		return nil, err
	}
	samplers, err := m.findSniffers()
	if err != nil {
		return nil, err
	}
	m.nameSniffers()
	if err := m.solveClocks(samplers); err != nil {
		m.closeFiles()
		return nil, err
	}
	if opts.Refine != nil && slices.ContainsFunc(m.offsets, func(o Offset) bool { return !o.Known }) {
		// Refine only completes unknown offsets: with none, its pass over
		// the read-ahead (nat's learner in the pipeline, 1-9 % of
		// `wirepath messages`) would change nothing.
		if err := m.refine(samplers); err != nil {
			m.closeFiles()
			return nil, err
		}
	}
	m.openStreams()
	return m, nil
}

// RecordFilter selects records by their bytes (pcapfilter.Filter). Match
// is called from several goroutines at once; an error (the expression
// does not apply to the link type) is reported once per file and link
// type, and the record does not pass.
type RecordFilter interface {
	Match(linkType uint16, data []byte, wireLen int) (bool, error)
}

// TimeBound is a point in capture time: absolute (ns since the epoch on
// the reference clock) or, when Relative, Offset after the first packet.
// The zero value is no bound.
type TimeBound struct {
	Set      bool
	Relative bool
	At       int64         // absolute, ns
	Offset   time.Duration // relative
}

// resolve returns the bound's time given the first packet's.
func (b TimeBound) resolve(first int64) int64 {
	if b.Relative {
		return first + int64(b.Offset)
	}
	return b.At
}

// withDefaults fills in the defaults of the zero options and checks the
// window.
func (o Options) withDefaults() (Options, error) {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Window < 0 {
		return o, fmt.Errorf("negative dedupe window %v", o.Window)
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.Reorder == 0 {
		o.Reorder = DefaultReorder
	}
	if o.MaxObservations <= 0 {
		o.MaxObservations = DefaultMaxObservations
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if o.LookAhead <= 0 {
		o.LookAhead = DefaultLookAhead
	}
	if o.LookAheadBytes <= 0 {
		o.LookAheadBytes = DefaultLookAheadBytes
	}
	return o, nil
}

// addFiles notes the input files and their sizes, and sets the progress
// total to their sum (-1 when one has no size: a pipe, standard input).
func (m *Merger) addFiles(paths []string) error {
	var size int64
	stdin := false
	for _, p := range paths {
		var fi os.FileInfo
		var err error
		if p == StdinName {
			if stdin {
				return errors.New("standard input (-) given twice")
			}
			stdin = true
			fi, err = os.Stdin.Stat()
		} else {
			fi, err = os.Stat(p)
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", p)
		}
		f := &fileIn{path: p, size: -1, stats: FileStats{Name: p}, ifaces: map[int]int{}}
		if fi.Mode().IsRegular() && size >= 0 {
			f.size = fi.Size()
			size += fi.Size()
		} else {
			size = -1
		}
		m.files = append(m.files, f)
	}
	m.progress.setTotal(size)
	return nil
}

// findSniffers finds the sniffers: one per file, or with SplitInterfaces
// one per interface with packets, which takes the read-ahead. The
// read-ahead also samples wire keys for the offset estimate when there is
// something to estimate; the samples are returned per sniffer (nil
// without estimation).
func (m *Merger) findSniffers() ([]*sampler, error) {
	opts := &m.opts
	estimate := !opts.NoOffsets && len(m.files) > 1 || opts.SplitInterfaces && !opts.NoOffsets
	if opts.SplitInterfaces || estimate || opts.Refine != nil {
		return m.readAheadAll(estimate)
	}
	for i, f := range m.files {
		f.sniffer = i
		f.ifaces[-1] = i
		m.sniffers = append(m.sniffers, Sniffer{ID: SnifferID(i), File: f.path, Interface: -1})
	}
	return nil, nil
}

// solveClocks works out every sniffer's clock offset against the
// reference from the given ones and the sampled wire keys, and widens the
// dedupe window by the largest uncertainty.
func (m *Merger) solveClocks(samplers []*sampler) error {
	opts := &m.opts
	ref := m.defaultReference(samplers)
	if opts.Reference != "" {
		ref = m.snifferByName(opts.Reference)
		if ref < 0 {
			return &SnifferNameError{Name: opts.Reference, Known: m.snifferNames()}
		}
	}
	gv := make([]*int64, len(m.sniffers))
	for name, d := range opts.Offsets {
		i := m.snifferByName(name)
		if i < 0 {
			return &SnifferNameError{Name: name, Offset: true, Known: m.snifferNames()}
		}
		ns := int64(d)
		gv[i] = &ns
	}
	m.offsets = offsetsOf(len(m.sniffers), samplers, ref, gv)
	samplers = nil
	m.models = make([]clock.Model, len(m.sniffers))
	var widen int64
	for i, o := range m.offsets {
		if o.Known {
			m.models[i] = o.Model
			widen = max(widen, 2*o.Uncertainty)
		}
	}
	m.window = int64(opts.Window) + min(widen, maxWindowWidening)
	m.stats.Window = m.window
	return nil
}

// openReader opens f with progress counting.
func (m *Merger) openReader(f *fileIn) (*Reader, error) {
	osf, err := openInput(f.path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(&countingReader{r: osf, c: &m.progress}, f.path, fileBufferSize(osf))
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
		bases[baseName(f.path)]++
	}
	for i := range m.sniffers {
		s := &m.sniffers[i]
		name := baseName(s.File)
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

// baseName is the file name of path, "stdin" for standard input.
func baseName(path string) string {
	if path == StdinName {
		return "stdin"
	}
	return filepath.Base(path)
}

// defaultReference is the first sniffer that has packets in the
// read-ahead: an unreadable (or empty) first input must not become the
// clock every other is measured against, leaving them all unknown. The
// first sniffer without a read-ahead, or when none has packets.
func (m *Merger) defaultReference(samplers []*sampler) int {
	if samplers == nil {
		return 0
	}
	for i, smp := range samplers {
		if smp != nil && smp.n > 0 {
			return i
		}
	}
	return 0
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

// Close stops reading and closes every input. Call it when done, also
// after Next returned io.EOF: it ends the reading goroutines.
func (m *Merger) Close() error {
	if m.quit != nil && !m.closed {
		m.closed = true
		close(m.quit)
		m.producers.Wait()
	}
	return nil
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

// stream is one input of the k-way merge: a file. A producer goroutine
// reads and decodes it into batches; the merging goroutine consumes them.
// When its interfaces are sniffers with different clock offsets (split),
// their corrected times interleave out of file order: the stream holds
// packets back until no later record can come before them (fill).
type stream struct {
	idx     int
	file    *fileIn
	ch      chan *batch
	cur     *batch
	pos     int
	ended   bool
	reorder reorderBuf
	// multi is set when the file's sniffers have different clock
	// models (models); maxTS is the latest own timestamp read.
	multi  bool
	models []*clock.Model
	maxTS  int64
}

// openStreams starts a producer for every file: it merges the records
// read ahead, then reads on with the reader the read-ahead left open (or
// opens the file when there was no read-ahead).
func (m *Merger) openStreams() {
	for _, f := range m.files {
		s := &stream{idx: len(m.streams), file: f}
		s.multi, s.models = m.fileModels(f)
		m.streams = append(m.streams, s)
	}
	for i := range m.sniffers {
		s := &m.sniffers[i]
		s.Packets, s.Bytes, s.First, s.Last, s.LinkTypes = 0, 0, 0, 0, nil
	}
	m.stats.Shared = make([][]int64, len(m.sniffers))
	for i := range m.stats.Shared {
		m.stats.Shared[i] = make([]int64, len(m.sniffers))
	}
	m.quit = make(chan struct{})
	m.pool = make(chan []*Packet, 4*len(m.streams)+4)
	for _, s := range m.streams {
		f := s.file
		r := f.r
		if !m.aheadOnly {
			f.r = nil // the producer owns it now
		}
		if f.openErr == nil && r == nil && !m.aheadOnly {
			var err error
			if r, err = m.openReader(f); err != nil {
				f.openErr = err
			}
		}
		if f.openErr != nil {
			m.problem(f, f.openErr)
			f.fatal = true
			s.ended = true
			continue
		}
		if r != nil {
			f.stats.Format = r.Format().String()
			f.stats.Compression = r.Compression().String()
		}
		if m.aheadOnly {
			r = nil // the prefix merges the records read ahead only
		}
		s.ch = make(chan *batch, streamBatches)
		m.producers.Add(1)
		go m.produce(s, r)
	}
}

// fileModels reports whether f's sniffers have different clock models,
// and returns them.
func (m *Merger) fileModels(f *fileIn) (bool, []*clock.Model) {
	var models []*clock.Model
	multi := false
	for _, sn := range f.ifaces {
		md := &m.models[sn]
		if len(models) > 0 && !slices.EqualFunc(md.Segments, models[0].Segments, func(a, b clock.Segment) bool { return a == b }) {
			multi = true
		}
		models = append(models, md)
	}
	return multi, models
}

// lowBound is the earliest corrected time a record of s read after one
// with own timestamp s.maxTS can have: its earliest sniffer's.
func (s *stream) lowBound() int64 {
	low := int64(math.MaxInt64)
	for _, md := range s.models {
		low = min(low, md.Local(s.maxTS))
	}
	return low
}

// fill moves packets from s's batches into its reorder buffer until the
// buffer is full or the input ends. A file whose sniffers have different
// offsets keeps filling while its front packet could still be preceded
// by a later record: while it is after the latest own timestamp read
// corrected by the earliest sniffer clock (at most maxReorderHold packets).
func (m *Merger) fill(s *stream) {
	limit := max(m.opts.Reorder, 1)
	for s.reorder.len() < limit || s.multi && s.reorder.len() < maxReorderHold &&
		s.reorder.front().Obs[0].Corrected > s.lowBound() {
		p := m.nextRaw(s)
		if p == nil {
			return
		}
		o := &p.Obs[0]
		m.sniffers[o.Sniffer].observe(p, o.TS)
		s.maxTS = max(s.maxTS, o.TS)
		s.reorder.insert(p)
	}
}

// nextRaw returns s's next packet in file order, or nil at its end.
func (m *Merger) nextRaw(s *stream) *Packet {
	for {
		if s.cur != nil && s.pos < len(s.cur.pkts) {
			p := s.cur.pkts[s.pos]
			s.cur.pkts[s.pos] = nil
			s.pos++
			return p
		}
		if s.ended || s.cur != nil && s.cur.end {
			s.ended = true
			return nil
		}
		var b *batch
		select {
		case b = <-s.ch:
		case <-m.quit: // closed: nothing more will come
			s.ended = true
			return nil
		}
		s.cur, s.pos = b, 0
		f := s.file
		for _, err := range b.probs {
			m.problem(f, err)
		}
		f.stats.add(b.counts)
		if b.fatal {
			f.fatal = true
		}
	}
}

// pop returns the next observation in corrected time order within the
// time bounds (Options.Start, End), or nil; those outside are counted.
func (m *Merger) pop() *Packet {
	for {
		p := m.popAny()
		if p == nil {
			return nil
		}
		if !m.opts.Start.Set && !m.opts.End.Set {
			return p
		}
		t := p.Obs[0].Corrected
		if !m.bounded {
			m.bounded = true
			m.startNS, m.endNS = math.MinInt64, math.MaxInt64
			if m.opts.Start.Set {
				m.startNS = m.opts.Start.resolve(t)
			}
			if m.opts.End.Set {
				m.endNS = m.opts.End.resolve(t)
			}
		}
		if t >= m.startNS && t < m.endNS {
			return p
		}
		m.stats.OutsideTime++
		m.recycle(p)
	}
}

// popAny returns the next observation in corrected time order, or nil.
func (m *Merger) popAny() *Packet {
	if !m.started {
		m.started = true
		for _, s := range m.streams {
			m.fill(s)
			if s.reorder.len() > 0 {
				m.heads = append(m.heads, s)
			}
		}
		heap.Init(&m.heads)
	}
	if len(m.heads) == 0 {
		return nil
	}
	s := m.heads[0]
	p := s.reorder.pop()
	m.fill(s)
	// heap.Pop and heap.Fix at the root, without their interface calls
	// (about 170 instructions a packet on the mix of
	// scripts/bench-commands.sh): the same swaps in the same order.
	n := len(m.heads)
	if s.reorder.len() == 0 {
		n--
		m.heads.Swap(0, n)
		m.heads.down(0, n)
		m.heads[n] = nil
		m.heads = m.heads[:n]
	} else {
		m.heads.down(0, n)
	}
	return p
}

// frontier is the corrected time of the next observation, if any.
func (m *Merger) frontier() (int64, bool) {
	if len(m.heads) == 0 {
		return 0, false
	}
	return m.heads[0].reorder.front().Obs[0].Corrected, true
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
		if m.pending.Len() > 0 {
			g := *m.pending.Front()
			t, ok := m.frontier()
			full := m.pendingBytes > int64(m.opts.MaxPendingBytes)
			if !ok || t-g.TS() > m.window || full {
				if full && ok && t-g.TS() <= m.window {
					m.stats.EarlyReleases++
				}
				m.pending.Pop()
				m.pendingBytes -= pendingCost(g)
				m.byKey.DeleteIf(g.WireKey, g)
				m.account(g)
				m.last = g
				return g, nil
			}
		}
		p := m.pop()
		if p == nil {
			if m.pending.Len() == 0 {
				return nil, io.EOF
			}
			continue
		}
		m.add(p)
	}
}

// Keep makes the packet Next returned last the caller's: the Merger does
// not reuse it at the next call. Release gives it back once the caller is
// done with it (a packet never given back is left to the garbage
// collector). A stage that holds packets (nat's delay, a hand-over to
// another goroutine) keeps them this way instead of copying them.
func (m *Merger) Keep() { m.last = nil }

// Release gives back a packet kept with Keep, for the readers to reuse. It
// must not be called concurrently with Next.
func (m *Merger) Release(p *Packet) { m.recycle(p) }

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
		if g, _ := m.byKey.Get(p.WireKey); g != nil && absDiff(t, g.TS()) <= m.window {
			if len(g.Obs) >= m.opts.MaxObservations {
				m.stats.DroppedCopies++
				m.recycle(p)
				return
			}
			g.Obs = append(g.Obs, p.Obs[0])
			// Keep Obs ordered by corrected time (it nearly always is).
			for i := len(g.Obs) - 1; i > 0 && g.Obs[i].Corrected < g.Obs[i-1].Corrected; i-- {
				g.Obs[i], g.Obs[i-1] = g.Obs[i-1], g.Obs[i]
			}
			m.recycle(p)
			return
		}
		m.byKey.Set(p.WireKey, p)
	}
	m.pending.Push(p)
	m.pendingBytes += pendingCost(p)
}

// pendingCost is the memory a pending packet is charged.
func pendingCost(p *Packet) int64 { return int64(cap(p.buf)) + pendingOverhead }

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

// recycle gives p back to the producers, a batch at a time.
func (m *Merger) recycle(p *Packet) {
	m.free = append(m.free, p)
	if len(m.free) == batchSize {
		select {
		case m.pool <- m.free:
		default: // the pool is full: let the garbage collector have them
		}
		m.free = make([]*Packet, 0, batchSize)
	}
}

// streamHeap orders streams by their next packet: corrected time, then
// input index, then record number.
type streamHeap []*stream

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	a, b := h[i].reorder.front(), h[j].reorder.front()
	if a.Obs[0].Corrected != b.Obs[0].Corrected {
		return a.Obs[0].Corrected < b.Obs[0].Corrected
	}
	if h[i].idx != h[j].idx {
		return h[i].idx < h[j].idx
	}
	return a.num < b.num
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// down moves h[i0] down among h[:n] as container/heap's down does.
func (h streamHeap) down(i0, n int) {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && h.Less(j2, j1) {
			j = j2
		}
		if !h.Less(j, i) {
			break
		}
		h.Swap(i, j)
		i = j
	}
}
func (h *streamHeap) Push(x any) { *h = append(*h, x.(*stream)) }
func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

// progressCounter adds up the bytes read from every file, by every
// goroutine, and calls the Progress callback (one call at a time).
type progressCounter struct {
	fn          func(done, total int64)
	mu          sync.Mutex
	done, total int64
}

// setTotal sets the bytes to read; -1 when unknown.
func (c *progressCounter) setTotal(total int64) {
	c.mu.Lock()
	c.total = total
	c.mu.Unlock()
}

func (c *progressCounter) add(n int) {
	c.mu.Lock()
	c.done += int64(n)
	if c.fn != nil && n > 0 {
		total := int64(-1)
		if c.total >= 0 {
			total = max(c.total, c.done)
		}
		c.fn(c.done, total)
	}
	c.mu.Unlock()
}

type countingReader struct {
	r io.Reader
	c *progressCounter
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.c.add(n)
	return n, err
}
