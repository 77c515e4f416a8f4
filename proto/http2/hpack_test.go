package http2

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// hpackScript runs a script against x/net's decoder and ours and fails
// when they disagree: an error at a different step, or different fields.
// The script is a config byte (bits 0-1: the string limit, 2-3: the
// table size), then steps: an op byte (0-1: Write the next fragment, 2:
// Close, 3: allow a new table size), a length byte and that many bytes.
func hpackScript(t *testing.T, script []byte) int {
	if len(script) == 0 {
		return 0
	}
	strLen := [4]int{0, 16, 64, 64 << 10}[script[0]&3]
	table := [4]uint32{4096, 0, 100, 64 << 10}[script[0]>>2&3]
	var want, got []string
	seen := 0 // fields compared
	x := hpack.NewDecoder(table, func(f hpack.HeaderField) { want = append(want, f.Name+": "+f.Value) })
	x.SetMaxStringLength(strLen)
	refs := map[uint64]string{} // what each ref named: a ref names one field, forever
	var refErr string
	d := newHPACK(table, strLen, func(name, value string, ref uint64) {
		f := name + ": " + value
		got = append(got, f)
		if ref == 0 {
			return
		}
		if old, ok := refs[ref]; ok && old != f && refErr == "" {
			refErr = fmt.Sprintf("ref %d named %q, now %q", ref, old, f)
		}
		refs[ref] = f
	})
	// hit takes every other indexed field it was shown before, as
	// dirState.memoHit does, so that both ways are compared with x/net.
	var hits int
	d.hit = hitFunc(func(ref uint64, size int) bool {
		f, ok := refs[ref]
		if !ok {
			return false
		}
		if hits++; hits%2 == 0 {
			return false
		}
		if name, value, _ := strings.Cut(f, ": "); len(name)+len(value) != size && refErr == "" {
			refErr = fmt.Sprintf("ref %d (%q) offered with size %d", ref, f, size)
		}
		got = append(got, f)
		return true
	})
	for p, step := script[1:], 0; len(p) >= 2; step++ {
		op, n := p[0]%4, min(int(p[1]), len(p)-2)
		b := p[2 : 2+n]
		p = p[2+n:]
		var errX, errD error
		switch op {
		case 0, 1:
			_, errX = x.Write(b)
			errD = d.Write(b)
		case 2:
			errX, errD = x.Close(), d.Close()
		case 3:
			v := uint32(n) * 64
			x.SetAllowedMaxDynamicTableSize(v)
			d.setAllowedMaxDynamicTableSize(v)
		}
		if (errX != nil) != (errD != nil) {
			t.Fatalf("step %d (op %d, %x): error %v, x/net's %v", step, op, b, errD, errX)
		}
		if len(got) != len(want) || strings.Join(got[seen:], "\n") != strings.Join(want[seen:], "\n") {
			t.Fatalf("step %d (op %d, %x): fields\n%s\nx/net's\n%s", step, op, b, strings.Join(got[seen:], "\n"), strings.Join(want[seen:], "\n"))
		}
		if refErr != "" {
			t.Fatalf("step %d (op %d, %x): %s", step, op, b, refErr)
		}
		seen = len(got)
		if errX != nil {
			break
		}
	}
	return len(got)
}

// hpackSeed encodes header blocks (one per list) into a script, each
// block written in fragments of at most frag bytes and closed.
func hpackSeed(cfg byte, frag int, sizeUpdate uint32, blocks ...[]string) []byte {
	var buf bytes.Buffer
	e := hpack.NewEncoder(&buf)
	if sizeUpdate > 0 {
		e.SetMaxDynamicTableSizeLimit(sizeUpdate)
		e.SetMaxDynamicTableSize(sizeUpdate)
	}
	out := []byte{cfg}
	for _, blk := range blocks {
		buf.Reset()
		for _, f := range blk {
			name, value, _ := strings.Cut(f, ": ")
			if err := e.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: strings.HasPrefix(name, "x-secret")}); err != nil {
				panic(err)
			}
		}
		b := buf.Bytes()
		for len(b) > 0 {
			n := min(len(b), frag, 255)
			out = append(out, 0, byte(n))
			out = append(out, b[:n]...)
			b = b[n:]
		}
		out = append(out, 2, 0)
	}
	return out
}

// grpcBlocks are the header blocks of n gRPC calls.
func grpcBlocks(n int) [][]string {
	var out [][]string
	for i := range n {
		out = append(out,
			[]string{":method: POST", ":scheme: http", ":path: /search.Search/Nearby", ":authority: search:8082",
				"content-type: application/grpc", "te: trailers", "grpc-timeout: 9999m",
				fmt.Sprintf("traceparent: 00-%032x-%016x-01", i*7919, i)},
			[]string{":status: 200", "content-type: application/grpc"},
			[]string{"grpc-status: 0", "grpc-message: ", fmt.Sprintf("x-secret-%d: %s", i%3, strings.Repeat("v", i*13%90))})
	}
	return out
}

// FuzzHPACK checks our HPACK decoder against x/net's, which it replaces.
func FuzzHPACK(f *testing.F) {
	f.Add(hpackSeed(0, 1000, 0, grpcBlocks(6)...))
	f.Add(hpackSeed(4|1, 7, 0, grpcBlocks(3)...))
	f.Add(hpackSeed(8, 3, 100, grpcBlocks(4)...))
	f.Add(hpackSeed(12|2, 50, 0, grpcBlocks(5)...))
	f.Add([]byte{0, 0, 3, 0x3f, 0xe1, 0x1f, 2, 0})                                            // a size update to 4096
	f.Add([]byte{0, 0, 2, 0x82, 0x20, 2, 0, 3, 1, 0, 1, 0x21, 2, 0})                          // a late size update, then an allowed one
	f.Add([]byte{0, 0, 4, 0x40, 0x81, 0x1f, 0x81})                                            // an invalid Huffman string
	f.Add([]byte{0, 0, 11, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}) // an overflowing index
	f.Fuzz(func(t *testing.T, script []byte) { hpackScript(t, script) })
}

// TestHPACKMatchesXNet runs the seeds and long conversations through both
// decoders, with tables small enough that every call evicts.
func TestHPACKMatchesXNet(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        byte
		frag       int
		sizeUpdate uint32
		calls      int
		fields     int // decoded before an error
	}{
		{"default table", 0, 1000, 0, 500, 500 * 13},
		{"fragments of 5 bytes", 0, 5, 0, 200, 200 * 13},
		{"table of 100 bytes", 8, 13, 100, 200, 200 * 13},
		{"size update to 100", 0, 64, 100, 200, 200 * 13},
		{"strings of at most 16 bytes", 1, 64, 0, 10, 2}, // ":path: /search..." is too long
		{"large table", 12, 255, 0, 2000, 2000 * 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := hpackScript(t, hpackSeed(tc.cfg, tc.frag, tc.sizeUpdate, grpcBlocks(tc.calls)...)); n != tc.fields {
				t.Errorf("%d fields decoded, want %d", n, tc.fields)
			}
		})
	}
}

// TestHPACKLiteralToTable holds the path of fields added to the table
// with an indexed name and a Huffman-coded value (literalToTable, which
// decodes the value into the table's bytes) to x/net's decoder: values
// that fit, values longer than the string limit, entries larger than
// the table (evicted at once), tables compacted and grown under them,
// and an invalid Huffman string.
func TestHPACKLiteralToTable(t *testing.T) {
	tp := func(n int) string { return "traceparent: " + strings.Repeat("0a1b2c3d4e5f6789", 8)[:n] }
	var grow [][]string
	for i := range 300 {
		grow = append(grow, []string{fmt.Sprintf("x-%d: %s", i%7, strings.Repeat("e", 40+i%90)), tp(55 - i%9)})
	}
	for _, tc := range []struct {
		name   string
		script []byte
		fields int
	}{
		{"values that fit", hpackSeed(0, 1000, 0, []string{tp(55)}, []string{tp(55)}, []string{tp(40), tp(55)}), 4},
		{"a value past the limit", hpackSeed(2, 1000, 0, []string{tp(55)}, []string{tp(60)}, []string{tp(70)}), 2},
		{"entries larger than the table", hpackSeed(8, 1000, 100, []string{tp(50)}, []string{tp(60)}, []string{tp(60)}, []string{tp(45)}), 4},
		{"tables compacted and grown", hpackSeed(0, 1000, 0, grow...), 600},
		{"fragments of 3 bytes", hpackSeed(0, 3, 0, grow[:50]...), 100},
		// :authority (static index 1) with incremental indexing, a
		// Huffman-coded value of one byte that is no code (EOS's prefix).
		{"an invalid Huffman string", []byte{0, 0, 3, 0x41, 0x81, 0xff, 2, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := hpackScript(t, tc.script); n != tc.fields {
				t.Errorf("%d fields decoded, want %d", n, tc.fields)
			}
		})
	}
}

// TestHPACKNoAllocs checks that a warm decoder decodes gRPC header blocks
// without allocating.
func TestHPACKNoAllocs(t *testing.T) {
	var buf bytes.Buffer
	e := hpack.NewEncoder(&buf)
	var blocks [][]byte
	for _, blk := range grpcBlocks(400) {
		buf.Reset()
		for _, f := range blk {
			name, value, _ := strings.Cut(f, ": ")
			must(e.WriteField(hpack.HeaderField{Name: name, Value: value}))
		}
		blocks = append(blocks, bytes.Clone(buf.Bytes()))
	}
	n := 0
	d := newHPACK(4096, 64<<10, func(name, value string, _ uint64) { n += len(name) + len(value) })
	for _, b := range blocks[:30] {
		must(d.Write(b))
		must(d.Close())
	}
	i := 30
	allocs := testing.AllocsPerRun(300, func() {
		must(d.Write(blocks[i]))
		must(d.Close())
		i++
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations per header block, want 0", allocs)
	}
}

// FuzzHuffman checks our Huffman decoder against x/net's.
func FuzzHuffman(f *testing.F) {
	for _, s := range []string{"", "a", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"application/grpc", "\x00\xff\x80 ~!\"#", strings.Repeat("\xfe", 9)} {
		f.Add(hpack.AppendHuffmanString(nil, s))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}) // EOS
	f.Add([]byte{0x1f, 0xff})             // padding longer than 7 bits
	f.Add([]byte{0x00})                   // "0" and padding of zeros
	f.Fuzz(func(t *testing.T, v []byte) {
		want, wantErr := hpack.HuffmanDecodeToString(v)
		got, err := appendHuffman([]byte("prefix"), v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%x: error %v, x/net's %v", v, err, wantErr)
		}
		if err == nil && string(got) != "prefix"+want {
			t.Fatalf("%x: %q, x/net's %q", v, got[6:], want)
		}
	})
}

// BenchmarkHuffman decodes a Huffman-coded traceparent value, the one
// literal a gRPC client's request adds to the table on every call.
func BenchmarkHuffman(b *testing.B) {
	v := hpack.AppendHuffmanString(nil, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	dst := make([]byte, 0, 256)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		dst, _ = appendHuffman(dst[:0], v)
	}
}

// TestHuffmanMatchesXNet decodes every string of two symbols, and
// longer ones of every symbol around a run of hex digits (the fast
// path's entries of up to three symbols), as x/net does; the
// truncations of each encoding must fail or succeed as x/net's do.
func TestHuffmanMatchesXNet(t *testing.T) {
	var strs []string
	for a := range 256 {
		for b := range 256 {
			strs = append(strs, string([]byte{byte(a), byte(b)}))
		}
		strs = append(strs, "4bf92f35"+string([]byte{byte(a)})+"-00f067aa0b", string([]byte{byte(a), byte(a), byte(a)})+"e3")
	}
	for _, s := range strs {
		enc := hpack.AppendHuffmanString(nil, s)
		for k := len(enc); k >= len(enc)-1 && k >= 0; k-- {
			v := enc[:k]
			want, wantErr := hpack.HuffmanDecodeToString(v)
			got, err := appendHuffman(nil, v)
			if (err != nil) != (wantErr != nil) || err == nil && string(got) != want {
				t.Fatalf("%x: %q, %v; x/net: %q, %v", v, got, err, want, wantErr)
			}
		}
	}
}

// hitFunc is a func taking indexed fields as dirState.memoHit does.
type hitFunc func(ref uint64, size int) bool

func (f hitFunc) memoHit(ref uint64, size int) bool { return f(ref, size) }

// TestBuildFastMatchesTables holds hufFast to a table built by finding
// each entry's symbols through hufTables, as it was built before
// buildFast's look-ups in the table of one code.
func TestBuildFastMatchesTables(t *testing.T) {
	first := func(x uint32, w uint) (sym byte, n uint, ok bool) {
		if w < 5 {
			return 0, 0, false
		}
		b := byte(x << 8 >> w)
		if w >= 8 {
			b = byte(x >> (w - 8))
		}
		e := hufTables[0][b]
		switch {
		case e.kind == hufLeaf && uint(e.length) <= w:
			return e.sym, uint(e.length), true
		case e.kind == hufNext && w > 8:
			r := w - 8
			e2 := hufTables[e.next][byte(x>>max(int(r)-8, 0)<<max(8-int(r), 0))&byte(0xff<<max(8-int(r), 0))]
			if e2.kind == hufLeaf && uint(e2.length) <= r {
				return e2.sym, 8 + uint(e2.length), true
			}
		}
		return 0, 0, false
	}
	for x := range uint32(1 << hufFastBits) {
		var syms [4]byte
		var count, bits uint
		for count < 3 {
			w := hufFastBits - bits
			s, n, ok := first(x&(1<<w-1), w)
			if !ok {
				break
			}
			syms[count] = s
			count++
			bits += n
		}
		var want uint32
		if count > 0 {
			want = binary.NativeEndian.Uint32(syms[:])&(1<<24-1) | uint32(count)<<24 | uint32(bits)<<27
		}
		if hufFast[x] != want {
			t.Fatalf("hufFast[%#04x] = %#08x, want %#08x", x, hufFast[x], want)
		}
	}
}
