package score

import (
	"fmt"
	"math"
	"sort"

	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

// MapOptions control MapTrace.
type MapOptions struct {
	// MatchScale is the time difference (ns) that costs as much as one
	// unit in the alignment of a connection whose message counts differ
	// (a log time later than the wire costs a twentieth as much: services
	// log late when busy); GapCost is the cost of leaving a message
	// unmatched.
	MatchScale int64
	GapCost    float64
}

// DefaultMapOptions suit captures whose clocks were corrected to within a
// few milliseconds.
func DefaultMapOptions() MapOptions {
	return MapOptions{MatchScale: 1e6, GapCost: 3}
}

// Mapping relates the messages of a trace to those of a testbed truth.
type Mapping struct {
	// TraceToTruth and TruthToTrace map message indices (-1: none).
	TraceToTruth []int32
	TruthToTrace []int32
	Stats        MappingStats
}

// MappingStats counts how the messages were matched.
type MappingStats struct {
	TraceMessages int `json:"trace_messages"`
	TruthMessages int `json:"truth_messages"`
	Matched       int `json:"matched"`
	// ByOrdinal were matched by their position on a connection whose trace
	// and truth message counts agree (within the window); ByAlignment by a
	// time alignment of a connection whose counts differ.
	ByOrdinal   int `json:"by_ordinal"`
	ByAlignment int `json:"by_alignment"`
	// ByStream were matched by the multiplexing key (an HTTP/2 stream id)
	// both the trace and the truth give them, whatever their order.
	ByStream int `json:"by_stream,omitempty"`
	// Trace messages matched to nothing: whose endpoints name no true
	// connection, that a connection had too many of, or that lie outside
	// the truth's window (traffic before or after the recorded run).
	TraceNoConn        int `json:"trace_no_conn"`
	TraceSurplus       int `json:"trace_surplus"`
	TraceOutsideWindow int `json:"trace_outside_window"`
	// NoConnSeen names the first few trace messages of no true connection
	// (endpoints, protocol, time, label), for a test's or a reader's
	// message; it is not part of the JSON.
	NoConnSeen []string `json:"-"`
	// TruthUnmatched counts the true messages no trace message stands for,
	// in all and by link (caller→callee tiers).
	TruthUnmatched       int            `json:"truth_unmatched"`
	TruthUnmatchedByLink map[string]int `json:"truth_unmatched_by_link,omitempty"`
	// TimeErrorP50US, TimeErrorP99US and TimeErrorMaxUS describe |trace
	// time − true time| over the matched messages (each side's send time
	// where known, else its receive time): a check of the match, since a
	// message matched to its neighbour on a connection would be off by a
	// round trip or more.
	TimeErrorP50US float64 `json:"time_error_p50_us"`
	TimeErrorP99US float64 `json:"time_error_p99_us"`
	TimeErrorMaxUS float64 `json:"time_error_max_us"`
	// Calls counts the true calls both of whose messages are in the
	// trace; PairsRight those the trace pairs exactly (a CALL and a RETURN
	// with one call id), by link in PairsByLink ([right, all]).
	Calls       int               `json:"calls"`
	PairsRight  int               `json:"pairs_right"`
	PairsByLink map[string][2]int `json:"pairs_by_link,omitempty"`
}

type mapKey struct {
	proto    trace.Proto
	src, dst string
}

type dirKey struct {
	conn int
	dir  string
}

// MapTrace matches every message of t to the message of f it stands for:
// by its endpoints (either side's names across a NAT, as nat's
// canonicalisation may leave either), its direction on the connection, and
// its position there. Trace messages outside the truth's window are left
// out (the truth holds every call the services made within it). Where a
// connection's trace and true message counts agree, the n-th message in
// time is the n-th true one by ordinal, whatever the times say (services
// log their times late when busy); where they differ (a message lost by
// every sniffer, split or duplicated) a monotone alignment of times
// decides, so one lost message disturbs nothing else, and ByAlignment
// counts the messages so matched.
func MapTrace(t *trace.Trace, f *truth.File, opt MapOptions) *Mapping {
	m := &Mapping{TraceToTruth: make([]int32, len(t.Messages)), TruthToTrace: make([]int32, len(f.Messages))}
	for i := range m.TraceToTruth {
		m.TraceToTruth[i] = -1
	}
	for i := range m.TruthToTrace {
		m.TruthToTrace[i] = -1
	}
	m.Stats.TraceMessages, m.Stats.TruthMessages = len(t.Messages), len(f.Messages)
	index, spans := connIndex(f)
	groups := map[dirKey][]int32{}
	for i := range t.Messages {
		tm := &t.Messages[i]
		if ts := int64(tm.Time()); ts < f.Meta.WindowStartNS || ts > f.Meta.WindowEndNS {
			m.Stats.TraceOutsideWindow++
			continue
		}
		src, dst := t.Str(tm.Src), t.Str(tm.Dst)
		dir := truth.Call
		cands := index[mapKey{tm.Proto, src, dst}]
		if len(cands) == 0 {
			dir = truth.Return
			cands = index[mapKey{tm.Proto, dst, src}]
		}
		if len(cands) == 0 {
			m.unmatchedTrace(f, int64(tm.Time()), true)
			m.noteNoConn(t, tm, src, dst)
			continue
		}
		c := nearestConn(cands, spans, int64(tm.Time()))
		k := dirKey{c, dir}
		groups[k] = append(groups[k], int32(i))
	}
	want := map[dirKey][]int32{}
	for i := range f.Messages {
		fm := &f.Messages[i]
		k := dirKey{fm.Conn, fm.Dir}
		want[k] = append(want[k], int32(i))
	}
	for k, tr := range groups {
		tr, tw := m.byStream(t, f, tr, want[k])
		sort.SliceStable(tr, func(a, b int) bool { return t.Messages[tr[a]].Time() < t.Messages[tr[b]].Time() })
		sort.Slice(tw, func(a, b int) bool { return f.Messages[tw[a]].Ordinal < f.Messages[tw[b]].Ordinal })
		m.align(t, f, tr, tw, opt)
	}
	m.Stats.TruthUnmatchedByLink = map[string]int{}
	var errs []float64
	for i, j := range m.TruthToTrace {
		if j < 0 {
			m.Stats.TruthUnmatched++
			m.Stats.TruthUnmatchedByLink[linkOf(&f.Messages[i])]++
			continue
		}
		d := float64(int64(t.Messages[j].Time()) - f.Messages[i].Time())
		errs = append(errs, math.Abs(d)/1e3)
	}
	m.pairs(t, f)
	if len(errs) > 0 {
		sort.Float64s(errs)
		m.Stats.TimeErrorP50US = errs[len(errs)/2]
		m.Stats.TimeErrorP99US = errs[len(errs)*99/100]
		m.Stats.TimeErrorMaxUS = errs[len(errs)-1]
	}
	return m
}

// byStream matches, on one connection and direction, the trace messages
// and true messages that carry the same multiplexing key (the stream ids
// of calls multiplexed over HTTP/2: their order on the wire says nothing
// of which is which), and returns the others.
func (m *Mapping) byStream(t *trace.Trace, f *truth.File, tr, tw []int32) ([]int32, []int32) {
	streams := map[uint64]int32{}
	for _, j := range tw {
		if s := f.Messages[j].Stream; s != 0 {
			streams[s] = j
		}
	}
	if len(streams) == 0 {
		return tr, tw
	}
	restTr := tr[:0:0]
	for _, i := range tr {
		j, ok := streams[t.Messages[i].Stream]
		if !ok || t.Messages[i].Stream == 0 || m.TruthToTrace[j] >= 0 {
			restTr = append(restTr, i)
			continue
		}
		m.link(i, j)
		m.Stats.ByStream++
	}
	restTw := tw[:0:0]
	for _, j := range tw {
		if m.TruthToTrace[j] < 0 {
			restTw = append(restTw, j)
		}
	}
	return restTr, restTw
}

// pairs counts the true calls the trace pairs exactly: their CALL and
// RETURN are a trace CALL and RETURN with the same call id.
func (m *Mapping) pairs(t *trace.Trace, f *truth.File) {
	m.Stats.PairsByLink = map[string][2]int{}
	for i := range f.Messages {
		fm := &f.Messages[i]
		if fm.Dir != truth.Return {
			continue
		}
		tc, tr := m.TruthToTrace[fm.Call], m.TruthToTrace[i]
		if tc < 0 || tr < 0 {
			continue
		}
		c, r := &t.Messages[tc], &t.Messages[tr]
		link := linkOf(fm)
		p := m.Stats.PairsByLink[link]
		p[1]++
		m.Stats.Calls++
		if c.Kind == trace.KindCall && r.Kind == trace.KindReturn && c.CallID != 0 && c.CallID == r.CallID {
			p[0]++
			m.Stats.PairsRight++
		}
		m.Stats.PairsByLink[link] = p
	}
}

// linkOf names the link of a message as caller→callee.
func linkOf(fm *truth.Message) string {
	if fm.Dir == truth.Return {
		return fm.To + "→" + fm.From
	}
	return fm.From + "→" + fm.To
}

func (m *Mapping) unmatchedTrace(f *truth.File, ts int64, noConn bool) {
	switch {
	case ts < f.Meta.WindowStartNS || ts > f.Meta.WindowEndNS:
		m.Stats.TraceOutsideWindow++
	case noConn:
		m.Stats.TraceNoConn++
	default:
		m.Stats.TraceSurplus++
	}
}

// maxNoConnSeen bounds Stats.NoConnSeen.
const maxNoConnSeen = 8

// noteNoConn names a trace message of no true connection in
// Stats.NoConnSeen, while it holds fewer than maxNoConnSeen.
func (m *Mapping) noteNoConn(t *trace.Trace, tm *trace.Message, src, dst string) {
	if len(m.Stats.NoConnSeen) >= maxNoConnSeen {
		return
	}
	m.Stats.NoConnSeen = append(m.Stats.NoConnSeen, fmt.Sprintf("%s %s→%s at %d ns %q",
		tm.Proto, src, dst, int64(tm.Time()), t.Str(tm.Label)))
}

// connIndex maps every name pair of a true connection, in the CALL
// direction, to the connections; spans are each connection's first and
// last message times.
func connIndex(f *truth.File) (map[mapKey][]int, [][2]int64) {
	index := map[mapKey][]int{}
	for _, c := range f.Conns {
		proto := trace.ProtoTCP
		if c.Proto == "udp" {
			proto = trace.ProtoUDP
		}
		for _, src := range []string{c.Client, c.ClientInside} {
			for _, dst := range []string{c.Server, c.ServerInside} {
				if src == "" || dst == "" {
					continue
				}
				k := mapKey{proto, src, dst}
				if l := index[k]; len(l) == 0 || l[len(l)-1] != c.ID {
					index[k] = append(index[k], c.ID)
				}
			}
		}
	}
	spans := make([][2]int64, len(f.Conns))
	for i := range f.Messages {
		fm := &f.Messages[i]
		for _, ts := range []int64{fm.SendNS, fm.RecvNS} {
			if ts == 0 {
				continue
			}
			s := &spans[fm.Conn]
			if s[0] == 0 || ts < s[0] {
				s[0] = ts
			}
			if ts > s[1] {
				s[1] = ts
			}
		}
	}
	return index, spans
}

// nearestConn picks, among connections with the same names (a port used
// again: UDP resolvers pick random ports, and a TCP client port is free
// again once the other end holds its TIME_WAIT), the one whose span of
// message times is nearest to ts.
func nearestConn(cands []int, spans [][2]int64, ts int64) int {
	best, bestD := cands[0], int64(-1)
	for _, c := range cands {
		s := spans[c]
		var d int64
		switch {
		case ts < s[0]:
			d = s[0] - ts
		case ts > s[1]:
			d = ts - s[1]
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// align matches the trace messages tr (in time order) with the true
// messages tw (in ordinal order) of one connection and direction.
func (m *Mapping) align(t *trace.Trace, f *truth.File, tr, tw []int32, opt MapOptions) {
	if len(tr) == len(tw) {
		for j := range tw {
			m.link(tr[j], tw[j])
			m.Stats.ByOrdinal++
		}
		return
	}
	n, k := len(tr), len(tw)
	cost := func(i, j int) float64 {
		c := lagCost(&t.Messages[tr[i]], &f.Messages[tw[j]], opt)
		return min(c, 2*opt.GapCost) // never better than two gaps
	}
	// dp[i][j]: least cost of aligning tr[:i] with tw[:j].
	dp := make([][]float64, n+1)
	for i := range dp {
		dp[i] = make([]float64, k+1)
		for j := range dp[i] {
			switch {
			case i == 0:
				dp[i][j] = float64(j) * opt.GapCost
			case j == 0:
				dp[i][j] = float64(i) * opt.GapCost
			default:
				dp[i][j] = min(dp[i-1][j-1]+cost(i-1, j-1), dp[i-1][j]+opt.GapCost, dp[i][j-1]+opt.GapCost)
			}
		}
	}
	for i, j := n, k; i > 0 || j > 0; {
		switch {
		case i > 0 && j > 0 && dp[i][j] == dp[i-1][j-1]+cost(i-1, j-1):
			m.link(tr[i-1], tw[j-1])
			m.Stats.ByAlignment++
			i, j = i-1, j-1
		case i > 0 && dp[i][j] == dp[i-1][j]+opt.GapCost:
			m.unmatchedTrace(f, int64(t.Messages[tr[i-1]].Time()), false)
			i--
		default:
			j--
		}
	}
}

// lagCost is the cost of matching trace message tm with true message fm:
// their time difference in units of opt.MatchScale, where the time a
// service logged may lag the wire (a receiver logs after the bytes came, a
// sender may be descheduled between its log and its system call) at a
// twentieth of the cost. The receive time is compared with the trace's
// receive time where both are known, else the send times.
func lagCost(tm *trace.Message, fm *truth.Message, opt MapOptions) float64 {
	var d float64 // how far the log time lies after the wire time
	if fm.SendNS == 0 && tm.RecvTS.Known() {
		d = float64(fm.RecvNS - int64(tm.RecvTS))
	} else {
		d = float64(int64(tm.Time()) - fm.Time())
		if fm.SendNS == 0 {
			d = -d
		}
	}
	scale := float64(opt.MatchScale)
	if d >= 0 {
		return d / scale / 20
	}
	return -d / scale
}

func (m *Mapping) link(ti, fi int32) {
	m.TraceToTruth[ti] = fi
	m.TruthToTrace[fi] = ti
	m.Stats.Matched++
}
