package resultjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"

	"github.com/wirepath/wirepath/causal"
)

// RequestSpool holds the requests of a merged result (a windowed run's,
// causal.ResultMerger.SendRequests) in a temporary file, each as its
// compact JSON, with 24 bytes per request in memory to order them, so
// that WriteSpooled writes them into the result's JSON without holding
// them: the memory of a windowed run does not grow with its requests.
// Remove deletes the file.
type RequestSpool struct {
	f   *os.File
	w   *bufio.Writer
	off int64
	idx []spoolEntry
	buf bytes.Buffer
	enc *json.Encoder
}

// spoolEntry is one request of a spool: what orders it, and where its
// JSON is.
type spoolEntry struct {
	start int64
	off   int64
	n     int32
	bg    bool
}

// spoolIDPrefix is how a request's compact JSON begins when its ID is 0:
// the spool keeps what follows, and WriteSpooled writes the merged ID.
var spoolIDPrefix = []byte(`{"id":0,`)

// NewRequestSpool returns an empty spool whose file is in dir (the
// system's temporary directory when empty).
func NewRequestSpool(dir string) (*RequestSpool, error) {
	f, err := os.CreateTemp(dir, "wirepath-requests-*.json")
	if err != nil {
		return nil, fmt.Errorf("spool of requests: %w", err)
	}
	s := &RequestSpool{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s, nil
}

// Len returns how many requests the spool holds.
func (s *RequestSpool) Len() int { return len(s.idx) }

// Add writes the requests rs (one window's, in the engine's order) to
// the spool; their IDs are set when they are written out.
func (s *RequestSpool) Add(rs []causal.Request) error {
	for i := range rs {
		q := rs[i]
		q.ID = 0
		s.buf.Reset()
		if err := s.enc.Encode(&q); err != nil {
			return fmt.Errorf("spool of requests: %w", err)
		}
		b := bytes.TrimSuffix(s.buf.Bytes(), []byte("\n"))
		if !bytes.HasPrefix(b, spoolIDPrefix) {
			return errors.New("spool of requests: a request's JSON does not begin with its id")
		}
		b = b[len(spoolIDPrefix):]
		if _, err := s.w.Write(b); err != nil {
			return fmt.Errorf("spool of requests: %s: %w", s.f.Name(), err)
		}
		s.idx = append(s.idx, spoolEntry{start: q.StartNS, off: s.off, n: int32(len(b)), bg: q.Background})
		s.off += int64(len(b))
	}
	return nil
}

// Remove deletes the spool's file.
func (s *RequestSpool) Remove() error {
	s.f.Close()
	return os.Remove(s.f.Name())
}

// writeTo writes the spooled requests as the elements of a JSON array
// indented as WriteSpooled's document: each on a new line after prefix,
// in the merged result's order (causal.MergedRequestOrder), numbered
// from 0.
func (s *RequestSpool) writeTo(w io.Writer, prefix string) error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spool of requests: %s: %w", s.f.Name(), err)
	}
	order := make([]int32, len(s.idx))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := &s.idx[a], &s.idx[b]
		return causal.MergedRequestOrder(x.bg, y.bg, x.start, y.start)
	})
	var rec, out bytes.Buffer
	for k, i := range order {
		e := &s.idx[i]
		rec.Reset()
		rec.WriteString(`{"id":`)
		rec.WriteString(strconv.Itoa(k))
		rec.WriteByte(',')
		rec.Grow(int(e.n))
		raw := rec.AvailableBuffer()[:e.n]
		if _, err := s.f.ReadAt(raw, e.off); err != nil {
			return fmt.Errorf("spool of requests: %s: %w", s.f.Name(), err)
		}
		rec.Write(raw)
		out.Reset()
		if k > 0 {
			out.WriteByte(',')
		}
		out.WriteString("\n" + prefix)
		if err := json.Indent(&out, rec.Bytes(), prefix, "  "); err != nil {
			return fmt.Errorf("spool of requests: %s: request %d: %w", s.f.Name(), k, err)
		}
		if _, err := w.Write(out.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// WriteSpooled writes the results rs as Write (one) or WriteAnalysis
// (several) do, the requests of rs[i] read from spools[i] when it is not
// nil (rs[i] then lists none of its own): the document is the same,
// byte for byte, as the one written with the requests in rs[i].Requests,
// but only the rest of it is held in memory.
func WriteSpooled(w io.Writer, rs []*causal.Result, spools []*RequestSpool) error {
	cps := make([]*causal.Result, len(rs))
	nonce := rand.Uint64()
	markers := make([]string, len(rs))
	for i, r := range rs {
		cp := *r
		if i < len(spools) && spools[i] != nil && spools[i].Len() > 0 {
			markers[i] = fmt.Sprintf("wirepath-spooled-requests-%d-%016x", i, nonce)
			cp.Requests = []causal.Request{{ID: -1, Root: -1, Label: markers[i]}}
		}
		cps[i] = &cp
	}
	var doc bytes.Buffer
	var err error
	if len(cps) == 1 {
		err = encode(&doc, withPatterns(cps[0]))
	} else {
		err = encode(&doc, NewAnalysis(cps))
	}
	if err != nil {
		return err
	}
	b := doc.Bytes()
	for i, mk := range markers {
		if mk == "" {
			continue
		}
		open, close, prefix, err := spliceAt(b, mk)
		if err != nil {
			return err
		}
		if _, err := w.Write(b[:open]); err != nil {
			return err
		}
		if err := spools[i].writeTo(w, prefix); err != nil {
			return err
		}
		b = b[close:]
	}
	_, err = w.Write(b)
	return err
}

// spliceAt finds, in the indented document b, the requests array that
// holds only the marker request: it returns the offset just after its
// "[", the offset of the line break before its "]", and the indentation
// of its elements.
func spliceAt(b []byte, marker string) (open, close int, prefix string, err error) {
	m := bytes.Index(b, []byte(strconv.Quote(marker)))
	key := []byte(`"requests": [`)
	k := bytes.LastIndex(b[:max(m, 0)], key)
	if m < 0 || k < 0 {
		return 0, 0, "", errors.New("spooled requests: no place for them in the result's JSON (a bug)")
	}
	open = k + len(key)
	brace := bytes.IndexByte(b[open:], '{')
	end := bytes.IndexByte(b[m:], ']')
	if brace < 1 || end < 0 {
		return 0, 0, "", errors.New("spooled requests: no place for them in the result's JSON (a bug)")
	}
	prefix = string(b[open+1 : open+brace])
	close = bytes.LastIndexByte(b[:m+end], '\n')
	return open, close, prefix, nil
}
