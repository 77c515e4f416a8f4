package convolution

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
)

// claim is the vertex and entry a message is attributed to.
type claim struct {
	vertex  int32 // position in the task's vertex list
	entry   int32
	arrival int64 // when the entry's parent message reached the sender
}

// convTask is one root edge's tree of vertices after exploration.
type convTask struct {
	verts   []int32 // vertex ids, parents before children
	claimed [][]int32
}

// recvTime is message m's corrected arrival time, its send time when the
// arrival was not seen.
func (r *convRun) recvTime(m int32) int64 {
	msg := &r.msgs[m]
	if msg.RecvTS.Known() {
		return int64(msg.RecvTS) - r.offsets[msg.DstNode]
	}
	return r.time[m]
}

// resolve attributes every message of a task's tree to one vertex. The
// convolution finds "derived" edges as well as direct ones: in A->B->C->B->A
// the returns B->A follow the calls A->B too, at a longer delay. A message
// matched at several vertices is kept where the message it follows arrived
// latest — the most immediate cause, as in a tree of messages — so the
// shortcut loses it. Vertices left with fewer than MinCount messages are
// dropped with their subtrees and the claims made again. Messages of the
// root edge stay at the root.
func (r *convRun) resolve(root int32) *convTask {
	tk := &convTask{}
	var walk func(id int32)
	walk = func(id int32) {
		tk.verts = append(tk.verts, id)
		for _, k := range r.vertices[id].kids {
			walk(k)
		}
	}
	walk(root)
	rank := r.tieRanks(tk)
	r.claim(tk, rank)
	if r.prune(tk) {
		r.claim(tk, rank)
	}
	return tk
}

// tieRanks ranks the vertices of tk for the ties between equally recent
// causes: deeper vertices first, then the one whose path (edges and first
// delays from the root) sorts first.
func (r *convRun) tieRanks(tk *convTask) []int {
	keys := make([]string, len(tk.verts))
	pos := make(map[int32]int, len(tk.verts))
	for i, id := range tk.verts {
		pos[id] = i
		v := r.vertices[id]
		k := "r"
		if v.parent >= 0 {
			k = keys[pos[v.parent]] + "/" + fmt.Sprint(v.edge)
			if len(v.spikes) > 0 {
				k += fmt.Sprintf(":%g", v.spikes[0].DelayUS)
			}
		}
		keys[i] = k
	}
	byKey := make([]int, len(tk.verts))
	for i := range byKey {
		byKey[i] = i
	}
	slices.SortFunc(byKey, func(a, b int) int {
		va, vb := r.vertices[tk.verts[a]], r.vertices[tk.verts[b]]
		if va.depth != vb.depth {
			return cmp.Compare(vb.depth, va.depth)
		}
		return strings.Compare(keys[a], keys[b])
	})
	rank := make([]int, len(tk.verts))
	for rk, i := range byKey {
		rank[i] = rk
	}
	return rank
}

// claim attributes every message matched at a live vertex of tk (but the
// root edge's, which stay at the root) to the vertex where the message it
// follows arrived latest, ties by rank, and lists each vertex's claimed
// entries in tk.claimed.
func (r *convRun) claim(tk *convTask, rank []int) {
	root := r.vertices[tk.verts[0]]
	best := make(map[int32]claim)
	for i, id := range tk.verts {
		v := r.vertices[id]
		if !v.alive || i == 0 || v.edge == root.edge {
			continue
		}
		for j, en := range v.entries {
			c := claim{vertex: int32(i), entry: int32(j), arrival: r.recvTime(en.parent)}
			old, ok := best[en.msg]
			if !ok || c.arrival > old.arrival || c.arrival == old.arrival && rank[i] < rank[old.vertex] {
				best[en.msg] = c
			}
		}
	}
	tk.claimed = make([][]int32, len(tk.verts))
	all := make([]int32, len(root.entries))
	for j := range all {
		all[j] = int32(j)
	}
	tk.claimed[0] = all
	for i, id := range tk.verts {
		if i == 0 {
			continue
		}
		for j, en := range r.vertices[id].entries {
			if c, ok := best[en.msg]; ok && c.vertex == int32(i) && c.entry == int32(j) {
				tk.claimed[i] = append(tk.claimed[i], int32(j))
			}
		}
	}
}

// prune drops the vertices of tk left with fewer than MinCount claimed
// messages, and those under a dropped one, counting them; it reports
// whether it dropped any.
func (r *convRun) prune(tk *convTask) bool {
	pruned := false
	for i, id := range tk.verts {
		v := r.vertices[id]
		if i == 0 || !v.alive {
			continue
		}
		if p := r.vertices[v.parent]; !p.alive || len(tk.claimed[i]) < r.opt.MinCount {
			v.alive = false
			pruned = true
			r.mu.Lock()
			r.counters.pruned++
			r.mu.Unlock()
		}
	}
	return pruned
}

// result resolves every task and builds the patterns.
func (r *convRun) result() *causal.Result {
	res := &causal.Result{
		Version: causal.ResultVersion,
		Engine:  Name,
		Params:  r.opt.Params(),
		Trace:   causal.Summarize(r.ms),
	}
	pats := make([]causal.Pattern, len(r.tasks))
	explained := make([]bool, len(r.msgs))
	tasks := make([]*convTask, len(r.tasks))
	parallel.Each(len(r.tasks), r.workers, func(i int) {
		tasks[i] = r.resolve(r.tasks[i])
		pats[i] = r.pattern(tasks[i])
	})
	r.resolved = tasks
	for _, tk := range tasks {
		for i, id := range tk.verts {
			v := r.vertices[id]
			for _, j := range tk.claimed[i] {
				explained[v.entries[j].msg] = true
			}
		}
	}
	nExplained := int64(0)
	for _, e := range explained {
		if e {
			nExplained++
		}
	}
	res.Patterns = pats
	causal.RankPatterns(res.Patterns, r.opt.Rank)
	c := &r.counters
	onEdges := c.in - c.noTime - c.noNodes
	res.Accounting = []trace.Count{
		{Stage: Name, Name: "messages_in", Value: c.in},
		{Stage: Name, Name: "skipped_no_timestamp", Value: c.noTime},
		{Stage: Name, Name: "skipped_no_node", Value: c.noNodes},
		{Stage: Name, Name: "messages_on_edges", Value: onEdges},
		{Stage: Name, Name: "messages_in_patterns", Value: nExplained},
		{Stage: Name, Name: "messages_unexplained", Value: onEdges - nExplained},
		{Stage: Name, Name: "edges", Value: int64(len(r.edges))},
		{Stage: Name, Name: "root_edges", Value: int64(len(r.tasks))},
		{Stage: Name, Name: "signal_quanta", Value: int64(r.n)},
		{Stage: Name, Name: "correlations", Value: c.correlations},
		{Stage: Name, Name: "spikes", Value: c.spikes},
		{Stage: Name, Name: "spikes_negative_delay", Value: c.negative},
		{Stage: Name, Name: "spikes_noise", Value: c.noise},
		{Stage: Name, Name: "spikes_kept", Value: c.kept},
		{Stage: Name, Name: "cycle_messages_dropped", Value: c.cycleMsgs},
		{Stage: Name, Name: "hops_explored", Value: int64(len(r.vertices))},
		{Stage: Name, Name: "hops_pruned", Value: c.pruned},
		{Stage: Name, Name: "depth_limited", Value: c.depthLimited},
		{Stage: Name, Name: "hop_limit_reached", Value: c.vertexLimited},
		{Stage: Name, Name: "patterns", Value: int64(len(res.Patterns))},
	}
	if c.vertexLimited > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d hops were not explored because a path reached %d hops (raise --max-hops)", c.vertexLimited, r.opt.MaxVertices))
	}
	if len(r.tasks) == 0 && onEdges > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("no root edge carries %d messages or more: nothing to follow", r.opt.MinCount))
	}
	return res
}

// hopAcc accumulates the distributions of one hop of a pattern.
type hopAcc struct {
	start, node, net, bytes causal.DistBuilder
	kinds                   [3]int // unknown, CALL, RETURN
	eps                     map[string]int
}

// pattern builds the pattern of a resolved task: one hop per live vertex,
// children in order of mean start.
func (r *convRun) pattern(tk *convTask) causal.Pattern {
	hist := r.opt.Aggregate.Histograms
	rootMsgs := r.vertices[tk.verts[0]].entries
	acc, latest := r.accumulate(tk)
	kids := r.childOrder(tk, acc)
	p := causal.Pattern{Count: len(rootMsgs), Expected: float64(len(rootMsgs)), MaxProbability: 1}
	var sig func(i, parent int) *causal.SigNode
	sig = func(i, parent int) *causal.SigNode {
		h := r.hop(tk, &acc[i], i, parent)
		h.ID = len(p.Hops)
		p.Hops = append(p.Hops, h)
		s := &causal.SigNode{From: h.From, To: h.To}
		for _, k := range kids[i] {
			s.Children = append(s.Children, sig(k, h.ID))
		}
		return s
	}
	p.Signature = sig(0, -1).String()
	var lat causal.DistBuilder
	for j, en := range rootMsgs {
		lat.Add(float64(latest[j]-r.time[en.msg])/1e3, 1)
	}
	p.Latency = lat.Dist(hist)
	return p
}

// accumulate collects the distributions of every live vertex's claimed
// messages, and the latest arrival of each root message's path.
func (r *convRun) accumulate(tk *convTask) (acc []hopAcc, latest []int64) {
	rootMsgs := r.vertices[tk.verts[0]].entries
	latest = make([]int64, len(rootMsgs))
	for j, en := range rootMsgs {
		latest[j] = r.recvTime(en.msg)
	}
	acc = make([]hopAcc, len(tk.verts))
	for i, id := range tk.verts {
		v := r.vertices[id]
		if !v.alive {
			continue
		}
		acc[i].eps = make(map[string]int)
		for _, j := range tk.claimed[i] {
			en := v.entries[j]
			r.addEntry(&acc[i], en, rootMsgs)
			if t := r.recvTime(en.msg); t > latest[en.root] {
				latest[en.root] = t
			}
		}
	}
	return acc, latest
}

// addEntry adds the message of entry en, whose root message is
// rootMsgs[en.root], to its hop's distributions.
func (r *convRun) addEntry(a *hopAcc, en convEntry, rootMsgs []convEntry) {
	m := &r.msgs[en.msg]
	rootT := r.time[rootMsgs[en.root].msg]
	a.start.Add(float64(r.time[en.msg]-rootT)/1e3, 1)
	if en.parent >= 0 {
		p := &r.msgs[en.parent]
		if m.SendTS.Known() && p.RecvTS.Known() {
			a.node.Add(float64(m.SendTS-p.RecvTS)/1e3, 1)
		} else {
			a.node.Add(float64(r.time[en.msg]-r.recvTime(en.parent))/1e3, 1)
		}
	}
	if m.SendTS.Known() && m.RecvTS.Known() && !r.singleClock {
		net := (int64(m.RecvTS) - r.offsets[m.DstNode]) - (int64(m.SendTS) - r.offsets[m.SrcNode])
		a.net.Add(float64(net)/1e3, 1)
	}
	a.bytes.Add(float64(m.Bytes), 1)
	a.kinds[min(int(m.Kind), 2)]++
	a.eps[r.epName[m.Dst]]++
}

// ends returns the sender and the receiver of vertex i of tk.
func (r *convRun) ends(tk *convTask, i int) (from, to string) {
	ed := &r.edges[r.vertices[tk.verts[i]].edge]
	return r.names[ed.from], r.names[ed.to]
}

// childOrder lists the live children of every vertex of tk, by position,
// in order of mean start, then by receiver.
func (r *convRun) childOrder(tk *convTask, acc []hopAcc) [][]int {
	kids := make([][]int, len(tk.verts))
	pos := make(map[int32]int, len(tk.verts))
	for i, id := range tk.verts {
		pos[id] = i
		v := r.vertices[id]
		if i > 0 && v.alive {
			kids[pos[v.parent]] = append(kids[pos[v.parent]], i)
		}
	}
	for _, ks := range kids {
		slices.SortStableFunc(ks, func(a, b int) int {
			if c := cmp.Compare(acc[a].start.Mean(), acc[b].start.Mean()); c != 0 {
				return c
			}
			_, ta := r.ends(tk, a)
			_, tb := r.ends(tk, b)
			return strings.Compare(ta, tb)
		})
	}
	return kids
}

// hop returns the hop of vertex i of tk, with its distributions from a,
// under hop parent (-1 for the root), without its ID.
func (r *convRun) hop(tk *convTask, a *hopAcc, i, parent int) causal.Hop {
	hist := r.opt.Aggregate.Histograms
	from, to := r.ends(tk, i)
	h := causal.Hop{
		From: from, To: to,
		ToEndpoint: majority(a.eps),
		Kind:       trace.KindUnknown.String(),
		Start:      a.start.Dist(hist),
		NodeDelay:  a.node.Dist(hist),
		NetDelay:   a.net.Dist(hist),
		Bytes:      a.bytes.Dist(false),
	}
	if total := a.kinds[0] + a.kinds[1] + a.kinds[2]; a.kinds[1] == total {
		h.Kind = trace.KindCall.String()
	} else if a.kinds[2] == total {
		h.Kind = trace.KindReturn.String()
	}
	if parent >= 0 {
		h.Parent = &parent
		h.Delays = r.delays(r.vertices[tk.verts[i]], tk.claimed[i])
	}
	return h
}

// delays returns the delays (spikes) of vertex v that its claimed entries
// matched, with their counts, by declining count.
func (r *convRun) delays(v *convVertex, claimed []int32) []causal.DelayPeak {
	counts := make([]int, len(v.spikes))
	for _, j := range claimed {
		counts[v.entries[j].spike]++
	}
	var out []causal.DelayPeak
	for k, d := range v.spikes {
		if counts[k] > 0 {
			d.Count = counts[k]
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b causal.DelayPeak) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return cmp.Compare(a.DelayUS, b.DelayUS)
	})
	return out
}

// majority returns the most frequent key (the smallest of equally frequent
// ones), "" for none.
func majority(m map[string]int) string {
	best, n := "", -1
	for k, c := range m {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}
