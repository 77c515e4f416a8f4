package gen

import (
	"github.com/wirepath/wirepath/trace"
)

// MatchStats says how MatchTrace fared.
type MatchStats struct {
	Messages  int `json:"messages"`  // messages of the trace
	Matched   int `json:"matched"`   // matched to a truth message
	Unmatched int `json:"unmatched"` // no truth message with their endpoints within the tolerance
}

// MatchTrace maps each message of tr — a trace rebuilt from captures of the
// truth's messages, say — to the truth message with the same sending and
// receiving endpoints whose time is nearest, within tol nanoseconds (the
// send times when both are known, else the receive times, else whichever
// each has). Every truth message is used at most once. The result is
// indexed like tr.Messages; -1 marks messages with no match.
func MatchTrace(tr *trace.Trace, truth *Truth, tol int64) ([]int32, MatchStats) {
	type key struct{ src, dst string }
	tt := truth.Trace
	byKey := make(map[key][]int32)
	for i := range tt.Messages {
		m := &tt.Messages[i]
		k := key{tt.Str(m.Src), tt.Str(m.Dst)}
		byKey[k] = append(byKey[k], int32(i))
	}
	used := make([]bool, len(tt.Messages))
	out := make([]int32, len(tr.Messages))
	st := MatchStats{Messages: len(tr.Messages)}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		out[i] = -1
		best, bestD := int32(-1), tol+1
		for _, c := range byKey[key{tr.Str(m.Src), tr.Str(m.Dst)}] {
			if used[c] {
				continue
			}
			t := &tt.Messages[c]
			var d int64
			switch {
			case m.SendTS.Known():
				d = int64(m.SendTS - t.SendTS)
			case m.RecvTS.Known():
				d = int64(m.RecvTS - t.RecvTS)
			default:
				continue
			}
			if d < 0 {
				d = -d
			}
			if d < bestD {
				best, bestD = c, d
			}
		}
		if best >= 0 {
			used[best] = true
			out[i] = best
			st.Matched++
		} else {
			st.Unmatched++
		}
	}
	return out, st
}

// AdoptNames renames the truth's nodes as tr names them, so that the true
// patterns use the naming of the pipeline that built tr: each truth node
// takes the name tr gives it most often among the matched messages
// (toTruth from MatchTrace). Nodes with no matched message keep their name.
func (t *Truth) AdoptNames(tr *trace.Trace, toTruth []int32) {
	tt := t.Trace
	votes := make(map[trace.Sym]map[string]int)
	vote := func(truthNode trace.Sym, name string) {
		if name == "" {
			return
		}
		if votes[truthNode] == nil {
			votes[truthNode] = make(map[string]int)
		}
		votes[truthNode][name]++
	}
	for i, ti := range toTruth {
		if ti < 0 || i >= len(tr.Messages) {
			continue
		}
		m, tm := &tr.Messages[i], &tt.Messages[ti]
		vote(tm.SrcNode, tr.Str(m.SrcNode))
		vote(tm.DstNode, tr.Str(m.DstNode))
	}
	rename := make(map[trace.Sym]trace.Sym, len(votes))
	for node, vs := range votes {
		best, bestN := "", 0
		for name, n := range vs {
			if n > bestN || n == bestN && name < best {
				best, bestN = name, n
			}
		}
		rename[node] = tt.Intern(best)
	}
	for i := range tt.Messages {
		m := &tt.Messages[i]
		if s, ok := rename[m.SrcNode]; ok {
			m.SrcNode = s
		}
		if s, ok := rename[m.DstNode]; ok {
			m.DstNode = s
		}
	}
}
