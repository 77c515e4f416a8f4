package pcapio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// scenario is generated ground truth: packets crossing a path with two
// capture points a (client side) and b (server side) one router apart,
// a second sniffer c beside a, and a sniffer d that sees other traffic.
type scenario struct {
	dir             string
	paths           []string
	offB, offC      int64 // true clock offsets of b and c against a
	delay           int64 // one-way delay between a's and b's capture points
	distinct        int   // distinct wire packets seen by a, b or c
	obs             int   // observations in all files
	sharedAB        int   // packets both a and b saw
	sharedAC        int   // packets both a and c saw
	doubledB        int   // packets b saw twice (-i any)
	dPackets        int
	observationsSet map[[2]int64]int // (sniffer, ts) -> count
}

func makeScenario(t testing.TB, seed uint64, n int) *scenario {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &scenario{dir: t.TempDir(), offB: 137_250_000_000, offC: -3_000_000_123, delay: 200_000, observationsSet: map[[2]int64]int{}}
	var pa, pb, pc, pd []testPkt
	t0 := int64(1700000000_000000000)
	now := t0
	seqC, seqS := uint32(1000), uint32(9000)
	for i := range n {
		now += int64(rng.IntN(2_000_000)) + 1000 // up to 2 ms apart
		toServer := rng.IntN(2) == 0
		payload := make([]byte, rng.IntN(200))
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		h := v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(i), df: true, proto: ProtoTCP}
		var seg, segB []byte
		if toServer {
			seg = tcpSeg(40000, 80, seqC, seqS, FlagACK|FlagPSH, 512, nil, payload)
			seqC += uint32(len(payload))
		} else {
			h.src, h.dst = h.dst, h.src
			seg = tcpSeg(80, 40000, seqS, seqC, FlagACK|FlagPSH, 512, nil, payload)
			seqS += uint32(len(payload))
		}
		hb := h
		hb.ttl = 63 // one router between a and b
		segB = seg
		frameA := eth(etherTypeIPv4, ipv4(h, seg))
		frameB := sll2(etherTypeIPv4, 3, ipv4(hb, segB))
		frameC := ipv4(h, seg)
		jitter := int64(rng.IntN(50_000))
		ta, tb := now, now+s.delay+jitter
		if !toServer {
			tb, ta = now, now+s.delay+jitter
		}
		ta = ta / 1000 * 1000 // a's file has microsecond resolution
		seenA := rng.IntN(10) != 0
		seenB := rng.IntN(10) != 0
		seenC := rng.IntN(3) == 0
		if !seenA && !seenB && !seenC {
			seenA = true
		}
		s.distinct++
		if seenA {
			pa = append(pa, testPkt{ts: ta, data: frameA})
			s.observationsSet[[2]int64{0, ta}]++
		}
		if seenB {
			pb = append(pb, testPkt{ts: tb + s.offB, data: frameB})
			s.observationsSet[[2]int64{1, tb + s.offB}]++
			if rng.IntN(8) == 0 { // forwarded: seen again on another interface
				pb = append(pb, testPkt{ts: tb + s.offB + 4000, data: sll2(etherTypeIPv4, 4, ipv4(hb, segB))})
				s.observationsSet[[2]int64{1, tb + s.offB + 4000}]++
				s.doubledB++
			}
		}
		if seenC {
			tc := ta + 700 + s.offC // beside a, 700 ns later
			pc = append(pc, testPkt{ts: tc, data: frameC})
			s.observationsSet[[2]int64{2, tc}]++
		}
		if seenA && seenB {
			s.sharedAB++
		}
		if seenA && seenC {
			s.sharedAC++
		}
	}
	for i := range n / 10 {
		f := eth(etherTypeIPv4, ipv4(v4{src: "10.9.9.1", dst: "10.9.9.2", ttl: 64, id: uint16(i), proto: ProtoUDP}, udpDgram(1, 2, []byte{byte(i)})))
		ts := t0 + int64(i)*7_000_000 + 999
		pd = append(pd, testPkt{ts: ts, data: f})
		s.observationsSet[[2]int64{3, ts}]++
	}
	s.dPackets = len(pd)
	slices.SortStableFunc(pb, func(x, y testPkt) int { return cmpInt(x.ts, y.ts) })
	s.obs = len(pa) + len(pb) + len(pc) + len(pd)
	write := func(name string, data []byte) {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s.paths = append(s.paths, p)
	}
	write("a.pcap", pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, pa))
	nb := &ngBuilder{order: binary.BigEndian}
	nb.shb().idb(LinkTypeSLL2, 262144, "any", 9, 0)
	for _, p := range pb {
		nb.epb(0, uint64(p.ts), p.data, len(p.data))
	}
	write("b.pcapng", nb.bytes())
	write("c.pcap", pcapFile(binary.BigEndian, true, LinkTypeRaw, 65535, pc))
	write("d.pcap", pcapFile(binary.LittleEndian, true, LinkTypeEthernet, 65535, pd))
	return s
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// drain reads every packet and checks the invariants every merge must
// keep: corrected time order, observations ordered within a packet, and
// every observation of the input returned exactly once.
func drain(t *testing.T, m *Merger, obsWant map[[2]int64]int) []*Packet {
	t.Helper()
	var out []*Packet
	last := int64(-1 << 63)
	got := map[[2]int64]int{}
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.TS() < last {
			t.Fatalf("packet %d at %d after %d", len(out), p.TS(), last)
		}
		last = p.TS()
		for i, o := range p.Obs {
			if i > 0 && o.Corrected < p.Obs[i-1].Corrected {
				t.Fatalf("observations out of order: %+v", p.Obs)
			}
			if off := m.Offsets()[o.Sniffer]; o.Corrected != off.Model.Local(o.TS) || !off.DriftKnown && len(off.Steps) == 0 && off.Known && o.Corrected != o.TS-off.Offset {
				t.Fatalf("corrected %d, ts %d, offset %d", o.Corrected, o.TS, off.Offset)
			}
			got[[2]int64{int64(o.Sniffer), o.TS}]++
		}
		out = append(out, p.Clone())
	}
	if obsWant != nil {
		for k, n := range obsWant {
			if got[k] != n {
				t.Fatalf("observation %v returned %d times, want %d", k, got[k], n)
			}
		}
		if len(got) != len(obsWant) {
			t.Fatalf("%d distinct observations returned, want %d", len(got), len(obsWant))
		}
	}
	return out
}

func TestMergeScenario(t *testing.T) {
	s := makeScenario(t, 1, 3000)
	m, err := Open(s.paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pkts := drain(t, m, s.observationsSet)
	st := m.Stats()
	offs := m.Offsets()

	// Offsets: within the stated uncertainty (plus a's microsecond
	// resolution) of the truth, and the uncertainty is about the jitter.
	for _, c := range []struct {
		sn    int
		truth int64
	}{{1, s.offB}, {2, s.offC}} {
		o := offs[c.sn]
		if !o.Known || o.Method != "symmetric" {
			t.Errorf("sniffer %d: %+v", c.sn, o)
			continue
		}
		if err := absDiff(o.Offset, c.truth); err > o.Uncertainty+1000 {
			t.Errorf("sniffer %d: offset %d, truth %d: error %d beyond uncertainty %d", c.sn, o.Offset, c.truth, err, o.Uncertainty)
		}
		if o.Uncertainty > s.delay+60_000 {
			t.Errorf("sniffer %d: uncertainty %d ns is larger than the delay", c.sn, o.Uncertainty)
		}
	}
	if offs[0].Method != "reference" || offs[3].Known || offs[3].Method != "unknown" {
		t.Errorf("offsets %+v", offs)
	}

	// Exact duplicate counts from the ground truth.
	if st.Packets != int64(s.distinct+s.dPackets) || int64(len(pkts)) != st.Packets {
		t.Errorf("%d packets, want %d", st.Packets, s.distinct+s.dPackets)
	}
	if st.Duplicates != int64(s.obs-s.distinct-s.dPackets) {
		t.Errorf("%d duplicates, want %d", st.Duplicates, s.obs-s.distinct-s.dPackets)
	}
	if st.Shared[0][1] != int64(s.sharedAB) || st.Shared[1][0] != int64(s.sharedAB) {
		t.Errorf("a and b share %d, want %d", st.Shared[0][1], s.sharedAB)
	}
	if st.Shared[0][2] != int64(s.sharedAC) {
		t.Errorf("a and c share %d, want %d", st.Shared[0][2], s.sharedAC)
	}
	if st.Shared[1][1] != int64(s.doubledB) {
		t.Errorf("b doubled %d, want %d", st.Shared[1][1], s.doubledB)
	}
	if st.Shared[0][3] != 0 || st.Shared[3][3] != 0 {
		t.Errorf("d shares packets: %v", st.Shared)
	}
	// Accounting: in = out + dropped.
	if st.Total.Records != int64(s.obs) || st.Total.Records != st.Packets+st.Duplicates {
		t.Errorf("records %d, packets %d + duplicates %d, observations %d", st.Total.Records, st.Packets, st.Duplicates, s.obs)
	}
	if st.Total.Decoded != st.Total.Records || st.Total.BadRecords+st.Total.CutRecords != 0 || len(m.Problems()) != 0 {
		t.Errorf("accounting %+v, problems %v", st.Total, m.Problems())
	}
	// TTLs survive per observation: b sees one less.
	for _, p := range pkts {
		for _, o := range p.Obs {
			want := uint8(64)
			if o.Sniffer == 1 {
				want = 63
			}
			if o.TTL != want {
				t.Fatalf("sniffer %d ttl %d", o.Sniffer, o.TTL)
			}
		}
	}
	sn := m.Sniffers()
	if sn[1].Name != "b.pcapng" || sn[1].LinkTypes[0] != LinkTypeSLL2 || sn[0].Packets == 0 {
		t.Errorf("sniffers %+v", sn)
	}
}

func TestMergeMatchesSlowOracle(t *testing.T) {
	for seed := range uint64(4) {
		s := makeScenario(t, seed+10, 400)
		m, err := Open(s.paths, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fast := drain(t, m, s.observationsSet)
		slow := slowMerge(t, s.paths, m.Offsets(), m.Stats().Window)
		m.Close()
		if len(fast) != len(slow) {
			t.Fatalf("seed %d: %d packets, oracle %d", seed, len(fast), len(slow))
		}
		for i := range fast {
			if !slices.Equal(fast[i].Obs, slow[i]) {
				t.Fatalf("seed %d: packet %d: %+v, oracle %+v", seed, i, fast[i].Obs, slow[i])
			}
		}
	}
}

// slowMerge is the readable reference: read everything, correct, sort by
// (corrected time, file, record), then group greedily: an observation
// joins the most recent packet with its wire key if that packet's first
// observation is within the window.
func slowMerge(t *testing.T, paths []string, offs []Offset, window int64) [][]Observation {
	type item struct {
		o    Observation
		key  uint64
		file int
		num  int64
	}
	var all []item
	for fi, path := range paths {
		r, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rec Record
		for r.ReadRecord(&rec) == nil {
			var p Packet
			Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
			o := p.Obs[0]
			o.Sniffer, o.Interface, o.TS = SnifferID(fi), uint16(rec.Interface), rec.TS
			o.Corrected = rec.TS - offs[fi].Offset
			all = append(all, item{o, p.WireKey, fi, rec.Number})
		}
		r.Close()
	}
	slices.SortStableFunc(all, func(a, b item) int {
		if c := cmpInt(a.o.Corrected, b.o.Corrected); c != 0 {
			return c
		}
		if a.file != b.file {
			return a.file - b.file
		}
		return cmpInt(a.num, b.num)
	})
	var groups [][]Observation
	latest := map[uint64]int{}
	for _, it := range all {
		if g, ok := latest[it.key]; ok && it.o.Corrected-groups[g][0].Corrected <= window {
			groups[g] = append(groups[g], it.o)
			continue
		}
		latest[it.key] = len(groups)
		groups = append(groups, []Observation{it.o})
	}
	return groups
}

func TestMergeOptions(t *testing.T) {
	s := makeScenario(t, 7, 300)
	t.Run("no offsets", func(t *testing.T) {
		m, err := Open(s.paths, Options{NoOffsets: true})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		drain(t, m, s.observationsSet)
		if o := m.Offsets()[1]; o.Known {
			t.Errorf("offset estimated with NoOffsets: %+v", o)
		}
		// Without offsets only a and c... no: c is 3 s off too; only b's
		// doubled packets and nothing across sniffers can group.
		if st := m.Stats(); st.Shared[0][1] != 0 || st.Shared[1][1] != int64(s.doubledB) {
			t.Errorf("shared %v", st.Shared)
		}
	})
	t.Run("given offset", func(t *testing.T) {
		m, err := Open(s.paths, Options{Offsets: map[string]time.Duration{"b.pcapng": time.Duration(s.offB)}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		drain(t, m, s.observationsSet)
		if o := m.Offsets()[1]; o.Method != "given" || o.Offset != s.offB {
			t.Errorf("%+v", o)
		}
	})
	t.Run("reference", func(t *testing.T) {
		m, err := Open(s.paths, Options{Reference: "b.pcapng"})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		o := m.Offsets()
		if o[1].Method != "reference" || absDiff(o[0].Offset, -s.offB) > o[0].Uncertainty+1000 {
			t.Errorf("%+v", o)
		}
		// c is estimated directly against b, or chained through a.
		if absDiff(o[2].Offset, s.offC-s.offB) > o[2].Uncertainty+1000 {
			t.Errorf("c: %+v", o[2])
		}
	})
	t.Run("no dedupe", func(t *testing.T) {
		m, err := Open(s.paths, Options{NoDedupe: true})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		pk := drain(t, m, s.observationsSet)
		if len(pk) != s.obs {
			t.Errorf("%d packets, want %d observations", len(pk), s.obs)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		if _, err := Open(s.paths, Options{Reference: "nope"}); err == nil {
			t.Error("unknown reference accepted")
		}
		if _, err := Open(s.paths, Options{Offsets: map[string]time.Duration{"nope": 1}}); err == nil {
			t.Error("offset for an unknown sniffer accepted")
		}
		if _, err := Open([]string{filepath.Join(s.dir, "missing.pcap")}, Options{}); err == nil {
			t.Error("missing file accepted")
		}
		if _, err := Open(nil, Options{}); err == nil {
			t.Error("no files accepted")
		}
	})
}

func TestMergeSplitInterfaces(t *testing.T) {
	// One pcapng with two interfaces on either side of a router; the
	// second stores its timestamps 2 s early and says so in if_tsoffset,
	// so both share one clock.
	dir := t.TempDir()
	nb := &ngBuilder{order: binary.LittleEndian}
	nb.shb().idb(LinkTypeEthernet, 0, "in", 9, 0).idb(LinkTypeRaw, 0, "out", 9, 2)
	var want int
	for i := range 200 {
		ts := uint64(1700000000_000000000 + i*1_000_000)
		h := v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(i), proto: ProtoUDP}
		if i%2 == 1 {
			h.src, h.dst = h.dst, h.src
		}
		payload := []byte(fmt.Sprint("packet ", i))
		in := eth(etherTypeIPv4, ipv4(h, udpDgram(5, 6, payload)))
		h.ttl--
		out := ipv4(h, udpDgram(5, 6, payload))
		if i%2 == 0 {
			nb.epb(0, ts, in, len(in))
			nb.epb(1, ts+30_000-2e9, out, len(out))
		} else {
			nb.epb(1, ts-2e9, out, len(out))
			nb.epb(0, ts+30_000, in, len(in))
		}
		want++
	}
	path := filepath.Join(dir, "both.pcapng")
	os.WriteFile(path, nb.bytes(), 0o644)

	m, err := Open([]string{path}, Options{SplitInterfaces: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pk := drain(t, m, nil)
	sn := m.Sniffers()
	if len(sn) != 2 || sn[0].Name != "both.pcapng#in" || sn[1].Name != "both.pcapng#out" || sn[1].Interface != 1 {
		t.Fatalf("sniffers %+v", sn)
	}
	if o := m.Offsets()[1]; !o.Known || absDiff(o.Offset, 0) > o.Uncertainty || o.Uncertainty > 30_000 {
		t.Errorf("offset %+v", o)
	}
	if len(pk) != want || m.Stats().Shared[0][1] != int64(want) {
		t.Errorf("%d packets (want %d), shared %v", len(pk), want, m.Stats().Shared)
	}

	// Without splitting, one sniffer sees every packet twice.
	m2, err := Open([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	drain(t, m2, nil)
	if st := m2.Stats(); st.Packets != int64(want) || st.Shared[0][0] != int64(want) {
		t.Errorf("unsplit: %d packets, %v shared, want %d", st.Packets, st.Shared, want)
	}
}

func TestMergeBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 65535, threePackets())
	files := map[string][]byte{
		"good.pcap":  good,
		"empty.pcap": nil,
		"text.pcap":  []byte("not a capture at all"),
		"cut.pcap":   good[:len(good)-5],
	}
	var paths []string
	for _, n := range []string{"good.pcap", "empty.pcap", "text.pcap", "cut.pcap"} {
		p := filepath.Join(dir, n)
		os.WriteFile(p, files[n], 0o644)
		paths = append(paths, p)
	}
	m, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pk := drain(t, m, nil)
	st := m.Stats()
	// good's 3 packets; cut.pcap holds copies of the first two, grouped.
	if len(pk) != 3 || st.Duplicates != 2 || st.Files[3].CutRecords != 1 || st.Files[3].Complete {
		t.Errorf("%d packets, stats %+v", len(pk), st)
	}
	probs := m.Problems()
	if len(probs) != 3 {
		t.Fatalf("problems %v", probs)
	}
	for i, want := range []error{ErrEmpty, ErrBadMagic, io.ErrUnexpectedEOF} {
		var pe *ParseError
		if !errors.Is(probs[i], want) || !errors.As(probs[i], &pe) || pe.File != paths[i+1] {
			t.Errorf("problem %d: %v, want %v in %s", i, probs[i], want, paths[i+1])
		}
	}
	if st.Files[1].Format != "" || st.Files[0].Format != "pcap" {
		t.Errorf("formats %+v", st.Files)
	}
}

func TestMergeReordersSlightDisorder(t *testing.T) {
	// tcpdump -i any writes packets from several CPUs slightly out of
	// order; the reorder buffer puts them back.
	dir := t.TempDir()
	var pk []testPkt
	for i := range 100 {
		ts := int64(1700000000_000000000 + i*1000)
		if i%5 == 1 {
			ts -= 2500 // older than the two before it
		}
		pk = append(pk, testPkt{ts: ts, data: sampleTCP4(uint32(i), "x")})
	}
	p := filepath.Join(dir, "any.pcap")
	os.WriteFile(p, pcapFile(binary.LittleEndian, true, LinkTypeEthernet, 65535, pk), 0o644)
	m, err := Open([]string{p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := drain(t, m, nil); len(got) != 100 || m.Stats().OutOfOrder != 0 {
		t.Errorf("%d packets, %d out of order", len(got), m.Stats().OutOfOrder)
	}
}
