package trace

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
)

// randomMessages makes n messages with every case a Table stores
// specially: unknown times, receive times far from the send time (both
// ways, and at the limits of the int32 difference), sizes of 4 GiB and
// more, negative sizes, and flows shared by many messages.
func randomMessages(t *Trace, n int, wideShare float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	eps := []Sym{0}
	for i := 0; i < 30; i++ {
		eps = append(eps, t.Intern(fmt.Sprintf("10.0.0.%d:%d", i%7, 80+i)))
	}
	nodes := []Sym{0, t.Intern("a"), t.Intern("b"), t.Intern("c")}
	for i := 0; i < n; i++ {
		send := Timestamp(1_700_000_000_000_000_000 + rng.Int64N(1e12))
		recv := send + Timestamp(rng.Int64N(1e6))
		switch r := rng.Float64(); {
		case r < wideShare:
			recv = send + Timestamp(rng.Int64N(1e11)-5e10)
		case r < wideShare+0.02:
			recv = send + Timestamp([]int64{math.MaxInt32, math.MaxInt32 + 1, math.MinInt32 + 3, math.MinInt32 + 2, math.MinInt32, -1}[rng.IntN(6)])
		case r < wideShare+0.05:
			send = NoTime
		case r < wideShare+0.08:
			recv = NoTime
		case r < wideShare+0.081:
			send, recv = NoTime, NoTime
		case r < wideShare+0.082:
			send, recv = math.MinInt64+1, math.MaxInt64
		case r < 2*wideShare+0.082:
			send += Timestamp(rng.Int64N(2e15) - 1e15) // days away: the offset does not fit
			recv = send + 5
		}
		b := rng.Int64N(1500)
		if rng.Float64() < wideShare {
			b = rng.Int64N(1e6)
		}
		switch rng.IntN(50) {
		case 0:
			b = math.MaxUint32 + rng.Int64N(3) - 1
		case 1:
			b = -rng.Int64N(3)
		case 2:
			b = math.MaxInt64
		case 3:
			b = math.MaxUint16 + rng.Int64N(3) - 1
		}
		t.Messages = append(t.Messages, Message{
			SendTS: send, RecvTS: recv, Bytes: b,
			Src: eps[rng.IntN(len(eps))], Dst: eps[rng.IntN(len(eps))],
			SrcNode: nodes[rng.IntN(len(nodes))], DstNode: nodes[rng.IntN(len(nodes))],
			CallID: t.Intern(fmt.Sprint("c", rng.IntN(100))), Kind: Kind(rng.IntN(3)), Proto: Proto(rng.IntN(5)),
			Evidence: randomEvidence(t, rng),
		})
	}
}

// randomEvidence makes the evidence of a message: none for about half,
// else each field with some probability, with the largest values each can
// hold among them.
func randomEvidence(t *Trace, rng *rand.Rand) Evidence {
	var e Evidence
	if rng.IntN(2) == 0 {
		return e
	}
	pick := func(p float64) bool { return rng.Float64() < p }
	if pick(0.8) {
		e.Conn = []uint32{1, 2, 3, math.MaxUint32}[rng.IntN(4)]
	}
	if pick(0.5) {
		e.Seq = uint32(rng.IntN(20)) + 1
	}
	if pick(0.05) {
		e.Stream = []uint64{1, 1<<32 | 7, math.MaxUint64}[rng.IntN(3)]
	}
	task := func() Task {
		return []Task{{}, {PID: 812}, {PID: 812, TID: 815}, {PID: math.MaxInt32, TID: math.MaxInt32}}[rng.IntN(4)]
	}
	if pick(0.2) {
		e.Sender, e.Receiver = task(), task()
	}
	if pick(0.1) {
		e.ReqID = t.Intern(fmt.Sprintf("x-request-id:%08x", rng.Uint32()))
	}
	if pick(0.5) {
		e.Label = t.Intern([]string{"GET /item/{id}", "200", "redis GET", "tab\there", "-"}[rng.IntN(5)])
	}
	if pick(0.3) {
		toks := make([]uint64, rng.IntN(5))
		for i := range toks {
			toks[i] = []uint64{0, 1, math.MaxUint64, rng.Uint64()}[rng.IntN(4)]
		}
		e.Tokens, _ = t.Syms.AddTokens(toks)
	}
	return e
}

// TestTableRoundTrip: a Table gives back exactly the messages appended,
// through At and through every accessor, whether wide receive times are
// rare (kept aside) or common (a full column).
func TestTableRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		n    int
		wide float64
	}{{0, 0}, {1, 0}, {5000, 0}, {5000, 0.01}, {20000, 0.3}} {
		t.Run(fmt.Sprint(tc.n, "/", tc.wide), func(t *testing.T) {
			tr := &Trace{}
			randomMessages(tr, tc.n, tc.wide, uint64(tc.n))
			tab := NewTable(tr)
			if tab.Len() != len(tr.Messages) {
				t.Fatalf("Len %d, want %d", tab.Len(), len(tr.Messages))
			}
			first, last := NoTime, NoTime
			for i, m := range tr.Messages {
				if got := tab.At(i); got != m {
					t.Fatalf("At(%d) = %+v, want %+v", i, got, m)
				}
				var got Message
				if tab.Read(i, &got); got != m {
					t.Fatalf("Read(%d) = %+v, want %+v", i, got, m)
				}
				f := tab.Flow(i)
				if tab.SendTS(i) != m.SendTS || tab.RecvTS(i) != m.RecvTS || tab.Time(i) != m.Time() ||
					tab.Bytes(i) != m.Bytes || tab.CallID(i) != m.CallID ||
					*f != (Flow{m.Src, m.Dst, m.SrcNode, m.DstNode, m.Kind, m.Proto, m.Conn}) || tab.Evidence(i) != m.Evidence || f != &tab.Flows()[tab.FlowID(i)] {
					t.Fatalf("accessors of message %d disagree with %+v", i, m)
				}
				for _, ts := range []Timestamp{m.SendTS, m.RecvTS} {
					if ts.Known() {
						if first == NoTime || ts < first {
							first = ts
						}
						if last == NoTime || ts > last {
							last = ts
						}
					}
				}
			}
			f, l, ok := tab.TimeRange()
			if ok != (first != NoTime) || ok && (f != first || l != last) {
				t.Errorf("TimeRange = %d %d %v, want %d %d", f, l, ok, first, last)
			}
			if tc.wide > 0.1 && (tab.wideRecv.col == nil || tab.wideTS.col == nil || tab.wideSize.col == nil) {
				t.Error("many values aside did not switch to a column")
			}
			if tc.wide > 0 && tc.wide < 0.1 && (tab.wideRecv.m == nil || tab.wideTS.m == nil || tab.wideSize.m == nil) {
				t.Error("no value aside in a map")
			}
			if tc.n > 100 && len(tab.Flows()) >= tc.n {
				t.Errorf("%d flows for %d messages: flows are not shared", len(tab.Flows()), tc.n)
			}
			if tc.n > 0 && tab.EvidenceColumns() != EvidenceColumnsOf(tr.Messages) {
				t.Errorf("EvidenceColumns = %08b, want %08b", tab.EvidenceColumns(), EvidenceColumnsOf(tr.Messages))
			}
			if err := equalTraces(tab.Trace(), tr); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestReadTableMatchesReadAll reads every fixture both ways.
func TestReadTableMatchesReadAll(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := ReadFile(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tab, err := ReadFileTable(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := equalTraces(tab.Trace(), want); err != nil {
				t.Error(err)
			}
			if !reflect.DeepEqual(tab.Meta, want.Meta) {
				t.Errorf("meta %+v, want %+v", tab.Meta, want.Meta)
			}
			if tab.Syms.Len() != want.Syms.Len() {
				t.Errorf("%d symbols, want %d", tab.Syms.Len(), want.Syms.Len())
			}
		})
	}
	// A generated trace big enough to be presized from the file size.
	tr := &Trace{}
	randomMessages(tr, 3000, 0.01, 9)
	for i := range tr.Messages {
		m := &tr.Messages[i]
		m.Bytes = max(m.Bytes, 0) // TSV sizes are not negative
		if !m.SendTS.Known() && !m.RecvTS.Known() {
			m.SendTS = 1 // nor are both times unknown
		}
	}
	var buf bytes.Buffer
	if err := WriteTSV(&buf, tr); err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(buf.Bytes()), "gen", ReadOptions{Strict: true})
	r.sizeHint = int64(buf.Len())
	tab, err := r.ReadTable()
	if err != nil {
		t.Fatal(err)
	}
	if r.estimate < len(tr.Messages) || r.estimate > 2*len(tr.Messages)+2048 {
		t.Errorf("estimated %d messages for %d", r.estimate, len(tr.Messages))
	}
	if err := equalTraces(tab.Trace(), tr); err != nil {
		t.Error(err)
	}
}

// TestReadTableErrors: errors stop ReadTable as they stop ReadAll.
func TestReadTableErrors(t *testing.T) {
	in := TSVMagic + "\n" + "send_ts\trecv_ts\n1\t2\nbad\t3\n"
	r := NewReader(bytes.NewReader([]byte(in)), "bad.tsv", ReadOptions{Strict: true})
	if _, err := r.ReadTable(); err == nil || err.Error() != "bad.tsv:4: column send_ts: \"bad\" is not a valid number" {
		t.Errorf("error %v", err)
	}
}

// TestClassifyTableRolesMatches: ClassifyRoles of a Table (from its
// flows) is ClassifyRoles of the same messages in a Trace.
func TestClassifyTableRolesMatches(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 8))
		tr := &Trace{}
		eps := []string{"", "unix:/run/a.sock", "nohost", "[::1]:53"}
		for i := 0; i < 40; i++ {
			eps = append(eps, fmt.Sprintf("10.0.0.%d:%d", r.IntN(6), []int{80, 5432, 40000 + r.IntN(50), 1023, 1024}[r.IntN(5)]))
		}
		nodes := []string{"", "a", "b", "c", "d"}
		for i := 0; i < 300; i++ {
			tr.Messages = append(tr.Messages, Message{
				SendTS: Timestamp(i),
				Src:    tr.Intern(eps[r.IntN(len(eps))]), Dst: tr.Intern(eps[r.IntN(len(eps))]),
				SrcNode: tr.Intern(nodes[r.IntN(len(nodes))]), DstNode: tr.Intern(nodes[r.IntN(len(nodes))]),
				Kind: Kind(r.IntN(3)),
			})
		}
		tab := NewTable(tr)
		for _, opt := range []RoleOptions{DefaultRoleOptions(), {MinPeers: 1}, {MinPeers: 5, UseKinds: true}} {
			want, got := ClassifyRoles(tr, opt), ClassifyRoles(tab, opt)
			if !reflect.DeepEqual(got.flags, want.flags) {
				t.Fatalf("seed %d opt %+v: table roles %v, want %v", seed, opt, got.flags, want.flags)
			}
		}
	}
}

// TestTableAppendNoAllocs: appending a message of a known flow to a table
// with room allocates nothing, without evidence and with evidence in
// columns (once many messages have it); reading allocates nothing.
func TestTableAppendNoAllocs(t *testing.T) {
	for _, withEv := range []bool{false, true} {
		tr := &Trace{}
		randomMessages(tr, 100, 0, 1)
		m := tr.Messages[0]
		m.Bytes, m.SendTS, m.RecvTS = 10, 100, 200
		m.Evidence = Evidence{Conn: 3}
		if withEv {
			tok, _ := tr.Syms.AddTokens([]uint64{7, 8})
			m.Evidence = Evidence{Conn: 3, Seq: 4, Stream: 5, Sender: Task{1, 2}, Receiver: Task{3, 4}, ReqID: tr.Intern("x-request-id:1"), Label: tr.Intern("GET /"), Tokens: tok}
			for i := 0; i < 5000; i++ { // enough to put every field in a column
				tr.Messages = append(tr.Messages, m)
			}
		}
		tab := NewTable(tr)
		tab.Grow(1000)
		if n := testing.AllocsPerRun(500, func() { tab.Append(&m) }); n != 0 {
			t.Errorf("evidence %v: Append allocates %v times", withEv, n)
		}
		if n := testing.AllocsPerRun(500, func() { _ = tab.At(5) }); n != 0 {
			t.Errorf("evidence %v: At allocates %v times", withEv, n)
		}
		var got Message
		if n := testing.AllocsPerRun(500, func() { tab.Read(tab.Len()-1, &got) }); n != 0 {
			t.Errorf("evidence %v: Read allocates %v times", withEv, n)
		}
		if got != m {
			t.Errorf("evidence %v: read back %+v, want %+v", withEv, got, m)
		}
	}
}

// TestTableEvidenceCostsNothingWithout: a table of messages without
// evidence (a connection number aside) keeps none, and one where few
// messages have it keeps them aside rather than in columns.
func TestTableEvidenceCostsNothingWithout(t *testing.T) {
	tr := &Trace{}
	randomMessages(tr, 20000, 0, 5)
	for i := range tr.Messages {
		tr.Messages[i].Evidence = Evidence{Conn: uint32(i%50 + 1)}
	}
	tab := NewTable(tr)
	if tab.ev != nil {
		t.Error("a table without evidence keeps evidence columns")
	}
	for i, m := range tr.Messages {
		if tab.At(i) != m {
			t.Fatalf("message %d: %+v, want %+v", i, tab.At(i), m)
		}
	}
	// One message in a thousand with a label: kept in a map.
	for i := 0; i < len(tr.Messages); i += 1000 {
		tr.Messages[i].Label = tr.Intern("GET /")
	}
	tab = NewTable(tr)
	if tab.ev == nil || tab.ev.label.col != nil || len(tab.ev.label.m) != 20 || tab.ev.seq.m != nil || tab.ev.seq.col != nil {
		t.Errorf("sparse labels not kept aside: %+v", tab.ev)
	}
	for i, m := range tr.Messages {
		if tab.At(i) != m {
			t.Fatalf("message %d: %+v, want %+v", i, tab.At(i), m)
		}
	}
}

// TestTableSize: Size counts at least the rows and grows with the table.
func TestTableSize(t *testing.T) {
	tr := &Trace{}
	randomMessages(tr, 10000, 0, 4)
	small, big := NewTable(&Trace{Messages: tr.Messages[:100], Syms: tr.Syms}), NewTable(tr)
	if s := big.Size(); s < 10000*20 || s > 10000*60+1<<20 {
		t.Errorf("Size of 10,000 messages = %d bytes", s)
	}
	if small.Size() >= big.Size() {
		t.Errorf("Size %d of 100 messages >= %d of 10,000", small.Size(), big.Size())
	}
}

// TestMessagesAgree: a Trace and a Table of the same messages read the
// same through Messages, and MessageSlice, AsTable and TimeRange give the
// same answers on both.
func TestMessagesAgree(t *testing.T) {
	tr := &Trace{}
	randomMessages(tr, 2000, 0.05, 7)
	tab := NewTable(tr)
	for name, ms := range map[string]Messages{"trace": tr, "table": tab} {
		if ms.Len() != len(tr.Messages) {
			t.Fatalf("%s: Len %d, want %d", name, ms.Len(), len(tr.Messages))
		}
		var m Message
		for i := range tr.Messages {
			if ms.Read(i, &m); m != tr.Messages[i] {
				t.Fatalf("%s: message %d is %+v, want %+v", name, i, m, tr.Messages[i])
			}
		}
		if !reflect.DeepEqual(MessageSlice(ms), tr.Messages) {
			t.Errorf("%s: MessageSlice differs", name)
		}
		if got := AsTable(ms); !reflect.DeepEqual(got.rows, tab.rows) || !reflect.DeepEqual(got.flows, tab.flows) {
			t.Errorf("%s: AsTable differs from NewTable", name)
		}
		if ms.Symbols().Len() != tr.Syms.Len() || ms.Metadata().Source != tr.Meta.Source {
			t.Errorf("%s: Symbols or Metadata differ", name)
		}
		f1, l1, ok1 := TimeRange(ms)
		f2, l2, ok2 := tab.TimeRange()
		if f1 != f2 || l1 != l2 || ok1 != ok2 {
			t.Errorf("%s: TimeRange %v %v %v, want %v %v %v", name, f1, l1, ok1, f2, l2, ok2)
		}
	}
	if &MessageSlice(tr)[0] != &tr.Messages[0] {
		t.Error("MessageSlice copies a Trace's messages")
	}
	if AsTable(tab) != tab {
		t.Error("AsTable copies a Table")
	}
	if _, _, ok := TimeRange(&Trace{}); ok {
		t.Error("TimeRange of an empty trace is ok")
	}
}
