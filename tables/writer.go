package tables

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Options tune a Writer; the zero value means the defaults.
type Options struct {
	// RowGroupRows is how many rows a row group holds (default 65536): a
	// file's buffered rows are at most one row group.
	RowGroupRows int64
	// MaxOpenParts is how many files of one table are open at once
	// (default 2: the current hour and the one before, for rows that come
	// a little late).
	MaxOpenParts int
}

const bufferRows = 1024

// Writer writes the four tables under a directory. It is not safe for
// concurrent use. The first error is sticky: later calls do nothing and
// Close returns it.
type Writer struct {
	dir, tmp string
	opts     Options
	obs      *table[Observation]
	msgs     *table[Message]
	conns    *table[Connection]
	reqs     *table[Request]
	err      error
}

// Create starts writing the tables of directory dir, which must be absent
// or empty: they are written in a temporary directory beside it and put in
// place by Close.
func Create(dir string, opts Options) (*Writer, error) {
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = 1 << 16
	}
	if opts.MaxOpenParts <= 0 {
		opts.MaxOpenParts = 2
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("parquet directory %s is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("parquet directory: %w", err)
	}
	w := &Writer{dir: dir, tmp: tmp, opts: opts}
	w.obs = newTable[Observation](w, TableObservations, func(r *Observation) int64 { return r.TS })
	w.msgs = newTable[Message](w, TableMessages, messageTime)
	w.conns = newTable[Connection](w, TableConnections, func(r *Connection) int64 { return r.Start })
	w.reqs = newTable[Request](w, TableRequests, func(r *Request) int64 { return r.Start })
	return w, nil
}

func messageTime(m *Message) int64 {
	if m.SendTS != 0 {
		return m.SendTS
	}
	return m.RecvTS
}

// Observation adds a row to observations (copied).
func (w *Writer) Observation(r *Observation) { w.obs.add(r) }

// Message adds a row to messages (copied).
func (w *Writer) Message(r *Message) { w.msgs.add(r) }

// Connection adds a row to connections (copied).
func (w *Writer) Connection(r *Connection) { w.conns.add(r) }

// Request adds a row to requests (copied; its Messages slice is kept until
// the row is written, so the caller must not reuse it).
func (w *Writer) Request(r *Request) { w.reqs.add(r) }

// Rows returns how many rows each table got, by table name.
func (w *Writer) Rows() map[string]int64 {
	return map[string]int64{TableObservations: w.obs.rows, TableMessages: w.msgs.rows,
		TableConnections: w.conns.rows, TableRequests: w.reqs.rows}
}

// Err returns the first error met, if any.
func (w *Writer) Err() error { return w.err }

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Close writes every open file out and puts the tables in place at the
// Writer's directory (replacing it if it is an empty directory). On error
// nothing is put in place.
func (w *Writer) Close() error {
	if w.tmp == "" {
		return w.err
	}
	for _, c := range []func() error{w.obs.closeAll, w.msgs.closeAll, w.conns.closeAll, w.reqs.closeAll} {
		if err := c(); err != nil {
			w.fail(err)
		}
	}
	if w.err != nil {
		w.Abort()
		return w.err
	}
	_ = os.Remove(w.dir) // an empty directory is replaced
	if err := os.Rename(w.tmp, w.dir); err != nil {
		w.fail(fmt.Errorf("parquet directory: %w", err))
		w.Abort()
		return w.err
	}
	w.tmp = ""
	return nil
}

// Abort stops writing and removes what was written; the directory is left
// as it was.
func (w *Writer) Abort() {
	if w.tmp == "" {
		return
	}
	for _, t := range []interface{ abort() }{w.obs, w.msgs, w.conns, w.reqs} {
		t.abort()
	}
	os.RemoveAll(w.tmp)
	w.tmp = ""
	w.fail(errors.New("parquet tables aborted"))
}

// table is one table's open files, by hour.
type table[T any] struct {
	w     *Writer
	name  string
	when  func(*T) int64
	open  map[int64]*part[T] // by hour (Unix seconds of its start)
	parts map[int64]int      // files started per hour
	rows  int64
}

// part is one Parquet file being written.
type part[T any] struct {
	hour int64
	f    *os.File
	pw   *parquet.GenericWriter[T]
	buf  []T
	used int64 // sequence of last use, to close the least recent
}

func newTable[T any](w *Writer, name string, when func(*T) int64) *table[T] {
	return &table[T]{w: w, name: name, when: when, open: map[int64]*part[T]{}, parts: map[int64]int{}}
}

func (t *table[T]) add(r *T) {
	if t.w.err != nil {
		return
	}
	hour := floorHour(t.when(r))
	p := t.open[hour]
	if p == nil {
		var err error
		if p, err = t.start(hour); err != nil {
			t.w.fail(err)
			return
		}
	}
	t.rows++
	p.used = t.rows
	p.buf = append(p.buf, *r)
	if len(p.buf) == cap(p.buf) {
		t.w.fail(p.flush())
	}
}

// floorHour returns the start of ns's UTC hour, in Unix seconds.
func floorHour(ns int64) int64 {
	s := ns / 1e9
	if ns < 0 && ns%1e9 != 0 {
		s--
	}
	h := s / 3600 * 3600
	if s < 0 && s%3600 != 0 {
		h -= 3600
	}
	return h
}

// start opens a new file for hour, closing the least recently used one
// if too many are open.
func (t *table[T]) start(hour int64) (*part[T], error) {
	if len(t.open) >= t.w.opts.MaxOpenParts {
		var lru *part[T]
		for _, p := range t.open {
			if lru == nil || p.used < lru.used {
				lru = p
			}
		}
		delete(t.open, lru.hour)
		if err := lru.close(); err != nil {
			return nil, err
		}
	}
	hs := time.Unix(hour, 0).UTC()
	dir := filepath.Join(t.w.tmp, t.name, "date="+hs.Format("2006-01-02"), "hour="+hs.Format("15"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n := t.parts[hour]
	t.parts[hour] = n + 1
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", n)))
	if err != nil {
		return nil, err
	}
	pw := parquet.NewGenericWriter[T](f,
		parquet.MaxRowsPerRowGroup(t.w.opts.RowGroupRows),
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.CreatedBy("wirepath", "", ""),
		parquet.KeyValueMetadata("wirepath.table", t.name),
		parquet.KeyValueMetadata("wirepath.schema_version", strconv.Itoa(SchemaVersion)))
	p := &part[T]{hour: hour, f: f, pw: pw, buf: make([]T, 0, bufferRows)}
	t.open[hour] = p
	return p, nil
}

func (p *part[T]) flush() error {
	if len(p.buf) == 0 {
		return nil
	}
	_, err := p.pw.Write(p.buf)
	clear(p.buf)
	p.buf = p.buf[:0]
	if err != nil {
		return fmt.Errorf("parquet %s: %w", p.f.Name(), err)
	}
	return nil
}

func (p *part[T]) close() error {
	err := p.flush()
	if cerr := p.pw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("parquet %s: %w", p.f.Name(), cerr)
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (t *table[T]) closeAll() error {
	var first error
	for h, p := range t.open {
		if err := p.close(); err != nil && first == nil {
			first = err
		}
		delete(t.open, h)
	}
	return first
}

func (t *table[T]) abort() {
	for h, p := range t.open {
		p.f.Close()
		delete(t.open, h)
	}
}
