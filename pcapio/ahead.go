package pcapio

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"
	"unsafe"

	"github.com/wirepath/wirepath/internal/parallel"
)

// Defaults of the read-ahead.
const (
	// DefaultLookAhead is how much capture time of each input Open reads
	// ahead to find the sniffers and estimate the clock offsets (and
	// their drift, which needs a long stretch of time).
	DefaultLookAhead = 10 * time.Minute
	// DefaultLookAheadBytes bounds the memory the read-ahead keeps (the
	// records' bytes and about 100 bytes per record), over all inputs.
	DefaultLookAheadBytes = 32 << 20
	// arenaChunk is the size of the blocks the records read ahead are
	// kept in: each is freed as soon as the merge has gone past it.
	arenaChunk = 1 << 20
	// minLookAheadBytes is the least any one input may read ahead.
	minLookAheadBytes = 1 << 20
	// maxReorderHold caps the packets one input holds back to put its
	// interfaces' differently corrected clocks in order (see fill).
	maxReorderHold = 1 << 20
)

// StdinName is the path that names standard input.
const StdinName = "-"

// aheadRec is one record read ahead (Data nil: its bytes are
// arena[chunk][off:off+n]), or a problem met there (err).
type aheadRec struct {
	rec    Record
	chunk  int
	off, n int32
	err    error
}

// fileScan is what the read-ahead found in one file.
type fileScan struct {
	err   error            // the file could not be opened at all
	whole *sampler         // the file's sample (not split)
	byIf  map[int]*sampler // each interface's sample (split)
	seen  map[int]bool     // interfaces with packets
}

// readAheadAll reads ahead in every file, several at a time: it finds the
// sniffers (every interface that has packets, in order of index, when
// split) and, when estimate is set, samples wire keys. It returns the
// samples per sniffer (nil without estimation).
func (m *Merger) readAheadAll(estimate bool) ([]*sampler, error) {
	scans := make([]fileScan, len(m.files))
	budget := max(int64(m.opts.LookAheadBytes)/int64(len(m.files)), minLookAheadBytes)
	parallel.For(len(m.files), parallel.Workers(0), 1, func(_, i int) {
		scans[i] = m.readAhead(m.files[i], estimate, budget)
	})
	var samplers []*sampler
	for i, f := range m.files {
		sc := &scans[i]
		if sc.err != nil {
			m.closeFiles()
			return nil, sc.err
		}
		if !f.aheadEnd && m.opts.SplitInterfaces {
			// Interfaces declared so far may have packets later.
			for _, ifc := range f.ifInfo {
				sc.seen[ifc.Index] = true
			}
		}
		if !m.opts.SplitInterfaces || len(sc.seen) == 0 {
			// One sniffer for the file; when split, a file without
			// packets (or unreadable) keeps one empty sniffer so that it
			// stays visible in the statistics.
			f.sniffer = len(m.sniffers)
			f.ifaces[-1] = f.sniffer
			m.sniffers = append(m.sniffers, Sniffer{ID: SnifferID(f.sniffer), File: f.path, Interface: -1})
			if m.opts.SplitInterfaces {
				samplers = append(samplers, nil)
			} else {
				samplers = append(samplers, sc.whole)
			}
			continue
		}
		f.sniffer = len(m.sniffers)
		for _, ifc := range slices.Sorted(maps.Keys(sc.seen)) {
			f.ifaces[ifc] = len(m.sniffers)
			m.sniffers = append(m.sniffers, Sniffer{ID: SnifferID(len(m.sniffers)), File: f.path, Interface: ifc})
			samplers = append(samplers, sc.byIf[ifc])
		}
	}
	if !estimate {
		samplers = nil
	}
	return samplers, nil
}

// readAhead opens f and reads its first records, up to the look-ahead
// (capture time since its first record) or budget bytes, whichever ends
// first: it keeps them to be merged, notes the interfaces with packets and
// samples wire keys when estimate is set. The reader stays open in f for
// the merge. It may run concurrently with the read-ahead of other files.
func (m *Merger) readAhead(f *fileIn, estimate bool, budget int64) fileScan {
	sc := fileScan{byIf: map[int]*sampler{}, seen: map[int]bool{}}
	if estimate {
		sc.whole = newSampler(m.opts.MaxSamples)
	}
	r, err := m.openReader(f)
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			sc.err = err
		}
		f.openErr, f.aheadEnd = err, true
		return sc
	}
	f.r = r
	var p Packet
	var rec Record
	lastIf, lastRes := -1, int64(0)
	first, started := int64(0), false
	var kept int64 // bytes in the arena
	for kept+int64(len(f.ahead))*int64(unsafe.Sizeof(aheadRec{})) < budget {
		err := r.ReadRecord(&rec)
		if err == io.EOF {
			f.aheadEnd = true
			break
		}
		if err != nil {
			f.ahead = append(f.ahead, aheadRec{err: err})
			if IsFatal(err) {
				f.aheadEnd = true
				break
			}
			continue
		}
		a := f.keep(&rec)
		kept += int64(len(rec.Data))
		f.ahead = append(f.ahead, a)
		if m.opts.SplitInterfaces {
			sc.seen[rec.Interface] = true
		}
		if !started {
			first, started = rec.TS, true
		}
		if estimate {
			smp := sc.whole
			if m.opts.SplitInterfaces {
				if smp = sc.byIf[rec.Interface]; smp == nil {
					smp = newSampler(m.opts.MaxSamples)
					sc.byIf[rec.Interface] = smp
				}
			}
			Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
			if p.Status == StatusOK {
				smp.add(p.WireKey, rec.TS, p.Src, p.Dst)
			}
			if rec.Interface != lastIf {
				lastIf, lastRes = rec.Interface, resolutionNS(&r.Interfaces()[rec.Interface])
			}
			smp.res = max(smp.res, lastRes)
		}
		if rec.TS-first > int64(m.opts.LookAhead) {
			break
		}
	}
	f.ifInfo = slices.Clone(r.Interfaces())
	return sc
}

// keep copies rec's bytes into the arena's last chunk (a new one when it
// is full) and returns the record as kept.
func (f *fileIn) keep(rec *Record) aheadRec {
	n := len(rec.Data)
	last := len(f.arena) - 1
	if last < 0 || len(f.arena[last])+n > cap(f.arena[last]) {
		f.arena = append(f.arena, make([]byte, 0, max(arenaChunk, n)))
		last++
	}
	c := f.arena[last]
	a := aheadRec{rec: *rec, chunk: last, off: int32(len(c)), n: int32(n)}
	a.rec.Data = nil
	f.arena[last] = append(c, rec.Data...)
	return a
}

// openInput opens the file at path, or standard input for StdinName.
func openInput(path string) (*os.File, error) {
	if path == StdinName {
		return os.Stdin, nil
	}
	return os.Open(path)
}

// closeFiles closes the readers the read-ahead left open (Open failed).
func (m *Merger) closeFiles() {
	for _, f := range m.files {
		if f.r != nil {
			f.r.Close()
			f.r = nil
		}
	}
}

// refine hands the read-ahead, merged with the offsets estimated so far,
// to Options.Refine, and takes the offsets it completes: sniffers still
// unknown are then estimated again from the read-ahead, chained from every
// known one (as given offsets: exact, so the root's uncertainty is added
// to theirs afterwards), and the dedupe window is widened by the new
// estimates' uncertainty.
func (m *Merger) refine(samplers []*sampler) error {
	pm := m.prefix()
	offs, err := m.opts.Refine(pm)
	pm.Close()
	if err != nil {
		return err
	}
	if len(offs) != len(m.offsets) {
		return fmt.Errorf("pcapio: Refine returned %d offsets for %d sniffers", len(offs), len(m.offsets))
	}
	completed := false
	for i, o := range offs {
		if !m.offsets[i].Known && o.Known {
			m.offsets[i], completed = o, true
		}
	}
	unknown := slices.ContainsFunc(m.offsets, func(o Offset) bool { return !o.Known })
	if completed && unknown && samplers != nil {
		given := make([]*int64, len(m.offsets))
		for i, o := range m.offsets {
			if o.Known {
				v := o.Offset
				given[i] = &v
			}
		}
		ref := int(m.offsets[0].Reference)
		second := offsetsOf(len(m.sniffers), samplers, ref, given)
		var widen int64
		prev := slices.Clone(m.offsets)
		for i, o := range second {
			if prev[i].Known || !o.Known {
				continue
			}
			widen = max(widen, 2*o.Uncertainty)
			if len(o.Via) > 0 && int(o.Via[0]) < len(prev) {
				o.Uncertainty += prev[o.Via[0]].Uncertainty
			}
			m.offsets[i] = o
		}
		m.window += min(widen, maxWindowWidening)
		m.stats.Window = m.window
	}
	for i, o := range m.offsets {
		if o.Known {
			m.models[i] = o.Model
		}
	}
	return nil
}

// prefix returns a Merger over the read-ahead alone: the same sniffers,
// offsets and window; its statistics and problems are its own.
func (m *Merger) prefix() *Merger {
	pm := &Merger{opts: m.opts, sniffers: slices.Clone(m.sniffers),
		offsets: m.offsets, models: m.models, window: m.window, aheadOnly: true}
	pm.opts.Progress = nil
	pm.stats.Window = m.window
	for _, f := range m.files {
		g := *f
		g.stats = FileStats{Name: f.path}
		g.problems, g.fatal, g.r = 0, false, nil
		pm.files = append(pm.files, &g)
	}
	pm.openStreams()
	return pm
}
