package http2

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	xhttp2 "golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/wirepath/wirepath/proto"
)

// decodeGap is decode with the bytes [from, from+n) of dir's stream
// replaced by a Gap.
func decodeGap(t *testing.T, cfg Config, events []event, dir proto.Dir, from, n int64) ([]proto.Unit, Stats) {
	t.Helper()
	return decodeGapD(t, New(cfg), events, dir, from, n)
}

// decodeGapD is decodeGap with a given Decoder.
func decodeGapD(t *testing.T, d *Decoder, events []event, dir proto.Dir, from, n int64) ([]proto.Unit, Stats) {
	t.Helper()
	var off [2]int64
	var units []proto.Unit
	gapped := false
	for _, e := range events {
		b, o := e.data, off[e.dir]
		off[e.dir] += int64(len(b))
		if e.dir != dir || o+int64(len(b)) <= from || o >= from+n {
			d.Feed(e.dir, o, b)
			continue
		}
		if o < from {
			d.Feed(e.dir, o, b[:from-o])
		}
		if !gapped {
			d.Gap(dir, from, n)
			gapped = true
		}
		if end := o + int64(len(b)); end > from+n {
			d.Feed(e.dir, from+n, b[from+n-o:])
		}
		units = drain(d, units)
	}
	d.Close()
	units = drain(d, units)
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	return units, st
}

// fiveCalls is a connection of five gRPC calls, one after the other.
func fiveCalls() *conv {
	c := newConv(true)
	c.settings(proto.FromServer)
	c.settings(proto.FromClient)
	for i := uint32(1); i <= 9; i += 2 {
		c.unary(i, "/a.B/C", 0)
	}
	return c
}

// offsetOf returns the stream offset of the n-th event of dir whose
// first frame has type typ (n from 0).
func offsetOf(c *conv, dir proto.Dir, typ xhttp2.FrameType, n int) int64 {
	var off int64
	for _, e := range c.events {
		if e.dir != dir {
			continue
		}
		if len(e.data) >= headerLen && xhttp2.FrameType(e.data[3]) == typ && !bytes.HasPrefix(e.data, []byte("PRI")) {
			if n == 0 {
				return off
			}
			n--
		}
		off += int64(len(e.data))
	}
	panic("no such frame")
}

func TestLoss(t *testing.T) {
	c := fiveCalls()
	all := func() []string {
		var s []string
		for i := 1; i <= 9; i += 2 {
			s = append(s, brief(proto.Unit{Dir: proto.FromClient, Kind: proto.KindRequest, Key: uint64(i), Label: "grpc /a.B/C"}),
				brief(proto.Unit{Dir: proto.FromServer, Kind: proto.KindResponse, Key: uint64(i), Label: "grpc OK"}))
		}
		return s
	}
	tests := []struct {
		name     string
		dir      proto.Dir
		from, n  int64
		drop     []string // Units not reported
		unlabel  []string // Units reported without a label
		poisoned int64
	}{
		{"data payload", proto.FromClient, offsetOf(c, 0, xhttp2.FrameData, 1) + 12, 5, nil, nil, 0},
		{"request headers", proto.FromClient, offsetOf(c, 0, xhttp2.FrameHeaders, 1) + 12, 3,
			[]string{"client request 3"}, []string{"client request 5", "client request 7", "client request 9"}, 1},
		{"across a frame boundary", proto.FromServer, offsetOf(c, 1, xhttp2.FrameData, 1) + 20, 15,
			[]string{"server response 3"}, []string{"server response 5", "server response 7", "server response 9"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units, st := decodeGap(t, DefaultConfig(), c.events, tt.dir, tt.from, tt.n)
			var got, want []string
			for _, u := range appUnits(units) {
				got = append(got, brief(u))
			}
			for _, w := range all() {
				if prefixIn(w, tt.drop) {
					continue
				}
				if prefixIn(w, tt.unlabel) {
					w = w[:strings.Index(w, `"`)] + `"" 0`
				}
				want = append(want, w)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got\n%s\nwant\n%s", join(got), join(want))
			}
			if st.HPACKPoisoned != tt.poisoned {
				t.Errorf("HPACKPoisoned = %d, want %d", st.HPACKPoisoned, tt.poisoned)
			}
			if st.GapBytes != tt.n {
				t.Errorf("GapBytes = %d, want %d", st.GapBytes, tt.n)
			}
		})
	}
}

func prefixIn(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p+` `) {
			return true
		}
	}
	return false
}

// TestRecoverTable: a poisoned table is trusted again once the encoder
// empties its table with a size update of 0.
func TestRecoverTable(t *testing.T) {
	c := newConv(true)
	c.settings(proto.FromServer)
	c.settings(proto.FromClient)
	c.unary(1, "/a.B/C", 0)
	c.unary(3, "/a.B/C", 0)
	lost := offsetOf(c, 0, xhttp2.FrameHeaders, 1)
	c.unary(5, "/a.B/C", 0)
	c.enc[0].SetMaxDynamicTableSize(0)
	c.enc[0].SetMaxDynamicTableSize(4096)
	c.unary(7, "/a.B/D", 0)
	c.unary(9, "/a.B/D", 0)
	units, st := decodeGap(t, DefaultConfig(), c.events, proto.FromClient, lost+9, 2)
	var got []string
	for _, u := range appUnits(units) {
		if u.Dir == proto.FromClient {
			got = append(got, brief(u))
		}
	}
	want := []string{`client request 1 "grpc /a.B/C" 0`, `client request 5 "" 0`,
		`client request 7 "grpc /a.B/D" 0`, `client request 9 "grpc /a.B/D" 0`}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", join(got), join(want))
	}
	if st.HPACKPoisoned != 1 || st.HPACKRecovered != 1 {
		t.Errorf("poisoned %d, recovered %d; want 1, 1", st.HPACKPoisoned, st.HPACKRecovered)
	}
}

func TestDetect(t *testing.T) {
	h1 := []event{{proto.FromClient, []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")}, {proto.FromServer, []byte("HTTP/1.1 200 OK\r\n\r\n")}}
	serverFirst := fiveCalls()
	serverFirst.events[0], serverFirst.events[1] = serverFirst.events[1], serverFirst.events[0]
	tests := []struct {
		name   string
		mode   Mode
		events []event
		state  State
		apps   int
	}{
		{"http/1.1", Detect, h1, NotHTTP2, 0},
		{"http/1.1 prior knowledge", PriorKnowledge, h1, NotHTTP2, 0},
		{"server speaks first", Detect, serverFirst.events, Active, 10},
		{"prior knowledge without preface", PriorKnowledge, fiveCalls().events[1:], Active, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Mode = tt.mode
			for _, chunk := range []int{0, 1, 5} {
				d := New(cfg)
				var off [2]int64
				var units []proto.Unit
				for _, e := range tt.events {
					feedEvent(d, &off, e, chunk)
				}
				d.Close()
				units = drain(d, units)
				if d.State() != tt.state || len(appUnits(units)) != tt.apps {
					t.Errorf("chunk %d: state %s with %d application Units, want %s with %d", chunk, d.State(), len(appUnits(units)), tt.state, tt.apps)
				}
				if err := d.Stats().Check(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestMidway: a connection seen from its middle is not HTTP/2 to Detect;
// with prior knowledge the decoder finds the framing and reports the
// streams that start after it, without labels (the tables are unknown).
func TestMidway(t *testing.T) {
	c := fiveCalls()
	var off [2]int64
	start := [2]int64{offsetOf(c, 0, xhttp2.FrameHeaders, 2) - 5, offsetOf(c, 1, xhttp2.FrameHeaders, 4) - 3}
	d := New(Config{Mode: PriorKnowledge})
	for _, e := range c.events {
		o := off[e.dir]
		off[e.dir] += int64(len(e.data))
		if end := off[e.dir]; end > start[e.dir] {
			skip := max(0, start[e.dir]-o)
			d.Feed(e.dir, o+skip, e.data[skip:])
		}
	}
	d.Close()
	units := appUnits(drain(d, nil))
	var got []string
	for _, u := range units {
		got = append(got, brief(u))
	}
	slices.Sort(got)
	want := []string{`client request 5 "" 0`, `client request 7 "" 0`, `client request 9 "" 0`,
		`server response 5 "" 0`, `server response 7 "" 0`, `server response 9 "" 0`}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", join(got), join(want))
	}
	if err := d.Stats().Check(); err != nil {
		t.Fatal(err)
	}
}

func TestHPACKBounds(t *testing.T) {
	t.Run("header list too large", func(t *testing.T) {
		c := newConv(true)
		big := strings.Repeat("v", 3000)
		fields := []string{":method: POST", ":path: /a.B/C", "content-type: application/grpc"}
		for range 30 {
			fields = append(fields, "x-big: "+big) // indexed after the first: 1 byte each
		}
		c.headers(proto.FromClient, 1, true, fields...)
		c.request(3, "/a.B/D", true)
		units, st := decode(t, DefaultConfig(), c.events, 0)
		got := []string{}
		for _, u := range appUnits(units) {
			got = append(got, brief(u))
		}
		want := []string{`client request 1 "grpc /a.B/C" 0`, `client request 3 "grpc /a.B/D" 0`}
		if !slices.Equal(got, want) || st.HeaderListTooLarge != 1 || st.HPACKPoisoned != 0 {
			t.Fatalf("got %v, %+v", got, st)
		}
	})
	t.Run("table larger than allowed", func(t *testing.T) {
		c := newConv(true)
		c.enc[0].SetMaxDynamicTableSizeLimit(1 << 20)
		c.enc[0].SetMaxDynamicTableSize(1 << 20)
		c.request(1, "/a.B/C", true)
		units, st := decode(t, DefaultConfig(), c.events, 0)
		if st.HPACKErrors != 1 || st.HPACKPoisoned != 1 || len(appUnits(units)) != 1 || appUnits(units)[0].Label != "" {
			t.Fatalf("%s %+v", format(units), st)
		}
	})
	t.Run("string too long", func(t *testing.T) {
		c := newConv(true)
		c.headers(proto.FromClient, 1, true, ":method: GET", ":path: /"+strings.Repeat("p", 5000))
		cfg := DefaultConfig()
		cfg.MaxHeaderList = 1024
		_, st := decode(t, cfg, c.events, 0)
		if st.HPACKErrors != 1 || st.HPACKPoisoned != 1 {
			t.Fatalf("%+v", st)
		}
	})
	t.Run("many indexed fields", func(t *testing.T) {
		// A bomb: one byte of block per 4 KB of header list.
		c := newConv(true)
		c.enc[0].SetMaxDynamicTableSize(4096)
		var blk bytes.Buffer
		e := hpack.NewEncoder(&blk)
		must(e.WriteField(hpack.HeaderField{Name: "x", Value: strings.Repeat("b", 4000)}))
		for range 16000 {
			blk.WriteByte(0x80 | 62) // indexed: the entry just added
		}
		must(c.fr[0].WriteHeaders(xhttp2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true, EndStream: true}))
		c.flush(0)
		units, st := decode(t, DefaultConfig(), c.events, 0)
		if st.HeaderListTooLarge != 1 || len(appUnits(units)) != 1 {
			t.Fatalf("%s %+v", format(units), st)
		}
	})
}
