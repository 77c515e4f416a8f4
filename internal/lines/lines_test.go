package lines

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

type line struct {
	n    int
	off  int64
	text string
}

func scanAll(t *testing.T, in string, opt Options) ([]line, error) {
	t.Helper()
	s := NewScanner(strings.NewReader(in), "f", opt)
	var got []line
	for s.Scan() {
		got = append(got, line{s.Line(), s.Offset(), string(s.Bytes())})
	}
	return got, s.Err()
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		opt  Options
		want []line
	}{
		{"empty input", "", Options{}, nil},
		{"no final newline", "a\nbc", Options{}, []line{{1, 0, "a"}, {2, 2, "bc"}}},
		{"crlf", "a\r\nb\r\n", Options{}, []line{{1, 0, "a"}, {2, 3, "b"}}},
		// One more trailing CR is dropped, as the trace readers always did.
		{"two crs", "a\r\r\nb\r\r", Options{}, []line{{1, 0, "a"}, {2, 4, "b"}}},
		{"three crs keep one", "a\r\r\r\n", Options{}, []line{{1, 0, "a\r"}}},
		{"empty lines passed over", "\n\na\n\r\nb\n", Options{}, []line{{3, 2, "a"}, {5, 6, "b"}}},
		{"empty lines kept", "\na\n\r\n", Options{KeepEmpty: true}, []line{{1, 0, ""}, {2, 1, "a"}, {3, 3, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanAll(t, tc.in, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTooLong(t *testing.T) {
	in := "ok\n" + strings.Repeat("x", 100) + "\nnever\n"
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{MaxLine: 50}, "f:2: line longer than 50 bytes"},
		{Options{MaxLine: 50, TooLong: errors.New("line longer than 1 MiB")}, "f:2: line longer than 1 MiB"},
	} {
		got, err := scanAll(t, in, tc.opt)
		if len(got) != 1 || got[0].text != "ok" {
			t.Errorf("lines %v before the long one", got)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || err.Error() != tc.want || pe.Offset != 3 {
			t.Errorf("err %v (%+v), want %q at offset 3", err, pe, tc.want)
		}
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\nb\n"), iotest.ErrReader(boom))
	s := NewScanner(r, "f", Options{})
	n := 0
	for s.Scan() {
		n++
	}
	var pe *ParseError
	if n != 2 || !errors.Is(s.Err(), boom) || !errors.As(s.Err(), &pe) || pe.Line != 3 || pe.Offset != 4 {
		t.Errorf("%d lines, err %v (%+v)", n, s.Err(), pe)
	}
	if s.Scan() {
		t.Error("Scan after an error")
	}
}

func TestSkip(t *testing.T) {
	errBad := errors.New("bad")
	in := "good\nbad\nbad\nfatal\ngood\n"
	for _, tc := range []struct {
		name    string
		opt     Options
		good    int
		skipped int64
		kept    int
		stop    string // the error that stops, "" for none
	}{
		{"lenient", Options{}, 1, 2, 2, "f:4: fatal: bad"},
		{"few kept", Options{MaxProblems: 1}, 1, 2, 1, "f:4: fatal: bad"},
		{"strict", Options{Strict: true}, 1, 0, 0, "f:2: bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScanner(strings.NewReader(in), "f", tc.opt)
			good := 0
			for s.Scan() {
				switch string(s.Bytes()) {
				case "good":
					good++
				case "bad":
					s.Skip(errBad)
				case "fatal":
					s.Skip(Fatal(fmt.Errorf("fatal: %w", errBad)))
				}
			}
			if good != tc.good || s.Skipped() != tc.skipped || len(s.Problems()) != tc.kept {
				t.Errorf("good %d, skipped %d, kept %d; want %d, %d, %d", good, s.Skipped(), len(s.Problems()), tc.good, tc.skipped, tc.kept)
			}
			for _, p := range s.Problems() {
				if p.File != "f" || p.Line < 2 || p.Offset != int64(5+4*(p.Line-2)) || p.Err != errBad {
					t.Errorf("problem %+v", p)
				}
			}
			var fe *fatalError
			if err := s.Err(); err == nil || err.Error() != tc.stop || !errors.Is(err, errBad) || errors.As(err, &fe) {
				t.Errorf("err %v, want %q without the fatal mark", err, tc.stop)
			}
		})
	}
}

func TestPosition(t *testing.T) {
	s := NewScanner(strings.NewReader("x\ny\n"), "f", Options{})
	s.Scan()
	s.Scan()
	inner := &ParseError{Err: errors.New("e")}
	pe := s.Position(fmt.Errorf("wrapped: %w", inner))
	if pe != inner || pe.Line != 2 || pe.Offset != 2 || pe.File != "f" {
		t.Errorf("Position = %+v, want the inner error positioned", pe)
	}
	if got := (&ParseError{Err: errors.New("e")}).Error(); got != " e" {
		t.Errorf("unpositioned error %q", got)
	}
	if got := (&ParseError{Line: 3, Err: errors.New("e")}).Error(); got != "3: e" {
		t.Errorf("stream error %q", got)
	}
}

// FuzzScanner checks the scanner against bufio.Scanner with ScanLines:
// the same lines (less one more trailing CR), the same verdict on a line
// too long, and offsets that point at the lines in the input.
func FuzzScanner(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "cmd/wirepath/testdata/traces/*.tsv", "trace/testdata/*.tsv", "preload/testdata/strace/*.strace")
	f.Add([]byte("a\nb\r\n\n"))                           // LF, CR LF, an empty line
	f.Add([]byte("a\r\r\nlast"))                          // two CRs, no final newline
	f.Add([]byte("\r"))                                   // a lone CR
	f.Add([]byte(strings.Repeat("long line", 20) + "\n")) // over MaxLine
	f.Fuzz(func(t *testing.T, in []byte) {
		// Both read a byte or half the input at a time (the latter with
		// io.EOF along with the last bytes), so that lines straddle reads.
		reader := func() io.Reader {
			if len(in) > 0 && in[0]&1 == 1 {
				return iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(in)))
			}
			return iotest.OneByteReader(bytes.NewReader(in))
		}
		ref := bufio.NewScanner(reader())
		ref.Buffer(nil, 128)
		s := NewScanner(reader(), "f", Options{KeepEmpty: true, MaxLine: 128})
		for s.Scan() {
			if !ref.Scan() {
				t.Fatalf("line %d: the reference stopped", s.Line())
			}
			want := bytes.TrimSuffix(ref.Bytes(), []byte{'\r'})
			if !bytes.Equal(s.Bytes(), want) {
				t.Fatalf("line %d: %q, want %q", s.Line(), s.Bytes(), want)
			}
			if !bytes.HasPrefix(in[s.Offset():], s.Bytes()) {
				t.Fatalf("line %d: offset %d does not point at %q", s.Line(), s.Offset(), s.Bytes())
			}
		}
		if ref.Scan() {
			t.Fatalf("scanner stopped before the reference: %v", s.Err())
		}
		if (s.Err() == nil) != (ref.Err() == nil) {
			t.Fatalf("err %v, reference %v", s.Err(), ref.Err())
		}
	})
}

// benchInput is 20,000 lines of a typical trace's length.
func benchInput() []byte {
	var b bytes.Buffer
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "1700000000%09d\t1700000000%09d\t10.0.%d.%d:40000\t10.0.9.1:80\tc%d\tweb\t%d\tCALL\t-\ttcp\n", i, i+400, i%4, i%50, i%200, 100+i%1400)
	}
	return b.Bytes()
}

func BenchmarkScanner(b *testing.B) {
	data := benchInput()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s := NewScanner(bytes.NewReader(data), "bench", Options{})
		n = 0
		for s.Scan() {
			n += len(s.Bytes())
		}
	}
	if n == 0 {
		b.Fatal("no lines")
	}
}

// BenchmarkBufioScanner is the same work through bufio.Scanner, for
// comparison.
func BenchmarkBufioScanner(b *testing.B) {
	data := benchInput()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s := bufio.NewScanner(bytes.NewReader(data))
		s.Buffer(make([]byte, 0, 64<<10), DefaultMaxLine)
		n = 0
		for s.Scan() {
			n += len(s.Bytes())
		}
	}
	if n == 0 {
		b.Fatal("no lines")
	}
}
