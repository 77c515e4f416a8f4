package accuracy

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/trace"
)

// LinkDiagnosis says where the message-linking engine goes wrong on a
// generated trace: how its link probabilities (steps 1 and 2) treat every
// message's true parent, which messages start instances, and how the
// probability mass of the instances it builds (step 3) splits between
// correct, partial and wrong instances. docs/causal.md records it for the
// shipped configurations.
type LinkDiagnosis struct {
	// Links classifies the observed messages whose true parent was also
	// observed, by their kind and their parent's ("CALL caused by RETURN")
	// and by that and their sender and receiver, plus the total "all".
	Links map[string]*LinkClass
	// TrueRoots and FalseRoots count the messages that start instances and
	// are (are not) roots in the truth; MissedRoots the true roots that
	// start none; FalseRootMass the probability mass the false roots start
	// with.
	TrueRoots, FalseRoots, MissedRoots int
	FalseRootMass                      float64
	// Mass splits the probability of every inferred instance: "exact" (a
	// true instance), "partial" (a true root and only true links, but
	// missing messages), "suffix" (only true links under a root that is not
	// a true root), "wrong" (some wrong link or message).
	Mass  map[string]float64
	Count map[string]int
	// Pairs compares each sender pair's delay d (WAP5's step 1) with the
	// mean true delay of its messages, by kind.
	Pairs []PairDiag
}

// LinkClass is how the link probabilities treat the true parents of one
// class of messages.
type LinkClass struct {
	// N messages; Candidate of them have their true parent among their
	// possible parents; Top have it as their most likely cause.
	N, Candidate, Top int
	// PTrue is the summed probability given to the true parent; PSpont the
	// summed probability of being spontaneous.
	PTrue, PSpont float64
	// Cands is the total number of possible parents.
	Cands int
}

// PairDiag is one sender pair's delay estimate against the truth.
type PairDiag struct {
	// Pair is "B->C KIND" with the pattern names of B and C.
	Pair string
	// Estimated is WAP5's d for B->C (µs); True the mean true delay (µs)
	// of its messages of that kind whose parent was observed, TrueN their
	// number.
	Estimated, True float64
	TrueN           int
}

// DiagnoseLinking runs linking steps 1 and 2 with opt on the generated
// trace, builds the instances and compares both with the truth.
func DiagnoseLinking(ctx context.Context, out *gen.Output, opt linking.Options) (*LinkDiagnosis, error) {
	opt.Aggregate.KeepInstances = true
	l, err := linking.New(opt)
	if err != nil {
		return nil, err
	}
	g, err := l.Link(ctx, out.Trace, nil)
	if err != nil {
		return nil, err
	}
	dg := &linkDiag{
		d:       &LinkDiagnosis{Links: map[string]*LinkClass{}, Mass: map[string]float64{}, Count: map[string]int{}},
		g:       g,
		tr:      out.Truth,
		toTruth: out.Truth.ByObserved(),
		namer:   causal.NewNamer(out.Trace, opt.Aggregate.Naming),
		msgs:    out.Trace.Messages,
		isRoot:  make([]bool, len(out.Trace.Messages)),
		size:    make([]int, out.Truth.NumInstances()),
	}
	for _, k := range dg.tr.Instance {
		dg.size[k]++
	}
	dg.classifyLinks()
	dg.comparePairs()
	if err := l.Paths(ctx, g, dg.addInstance); err != nil {
		return nil, err
	}
	for i := range dg.msgs {
		if dg.trueParent(i) == -1 && !dg.isRoot[i] {
			dg.d.MissedRoots++
		}
	}
	return dg.d, nil
}

// linkDiag is what DiagnoseLinking compares: the link graph and the
// instances of a generated trace with its truth.
type linkDiag struct {
	d       *LinkDiagnosis
	g       *linking.Graph
	tr      *gen.Truth
	toTruth []int32
	namer   *causal.Namer
	msgs    []trace.Message
	isRoot  []bool // messages that start instances
	size    []int  // messages of each true instance
}

// trueParent returns the observed index of message i's true parent, -1
// for a true root and -2 when the parent was not observed.
func (dg *linkDiag) trueParent(i int) int {
	p := dg.tr.Parent[dg.toTruth[i]]
	if p < 0 {
		return -1
	}
	if o := dg.tr.Observed[p]; o >= 0 {
		return int(o)
	}
	return -2
}

// class returns the link class called name, adding it.
func (dg *linkDiag) class(name string) *LinkClass {
	c := dg.d.Links[name]
	if c == nil {
		c = &LinkClass{}
		dg.d.Links[name] = c
	}
	return c
}

// classifyLinks fills Links: how the link probabilities treat the true
// parent of every message whose true parent was observed.
func (dg *linkDiag) classifyLinks() {
	msgs := dg.msgs
	for i := range msgs {
		tp := dg.trueParent(i)
		if tp < 0 {
			continue
		}
		parents := dg.g.Parents(i)
		kinds := msgs[i].Kind.String() + " caused by " + msgs[tp].Kind.String()
		for _, name := range []string{"all", kinds, kinds + ": " + dg.namer.Node(msgs[i].SrcNode) + "->" + dg.namer.Node(msgs[i].DstNode)} {
			c := dg.class(name)
			c.N++
			c.Cands += len(parents)
			c.PSpont += dg.g.Spontaneous(i)
			for _, p := range parents {
				if p.Msg == tp {
					c.Candidate++
					c.PTrue += p.P
				}
			}
			if dg.g.MostLikelyCause(i) == tp {
				c.Top++
			}
		}
	}
}

// comparePairs fills Pairs: by named sender pair and kind, the engine's d
// (a mean over the node pairs, weighted by their samples) against the
// true delays.
func (dg *linkDiag) comparePairs() {
	type acc struct{ sum, n float64 }
	est, tru := map[string]*acc{}, map[string]*acc{}
	add := func(m map[string]*acc, k string, v, w float64) {
		a := m[k]
		if a == nil {
			a = &acc{}
			m[k] = a
		}
		a.sum += v * w
		a.n += w
	}
	key := func(from, to trace.Sym) string { return dg.namer.Node(from) + "->" + dg.namer.Node(to) }
	for _, pd := range dg.g.Delays() {
		if !pd.ReceiverClock {
			add(est, key(pd.From, pd.To), float64(pd.Mean)/1e3, pd.Samples)
		}
	}
	msgs := dg.msgs
	for i := range msgs {
		tp := dg.trueParent(i)
		if tp < 0 || !msgs[i].SendTS.Known() || !msgs[tp].RecvTS.Known() {
			continue
		}
		add(tru, key(msgs[i].SrcNode, msgs[i].DstNode)+" "+msgs[i].Kind.String(), float64(msgs[i].SendTS-msgs[tp].RecvTS)/1e3, 1)
	}
	for k, a := range tru {
		pair, _, _ := strings.Cut(k, " ")
		e := est[pair]
		if e == nil || e.n == 0 {
			continue
		}
		dg.d.Pairs = append(dg.d.Pairs, PairDiag{Pair: k, Estimated: e.sum / e.n, True: a.sum / a.n, TrueN: int(a.n)})
	}
	sort.Slice(dg.d.Pairs, func(i, j int) bool { return dg.d.Pairs[i].Pair < dg.d.Pairs[j].Pair })
}

// addInstance counts an inferred instance's root and adds its
// probability to its class: exact, partial, suffix or wrong.
func (dg *linkDiag) addInstance(in causal.Instance) error {
	d := dg.d
	r := int(in.Nodes[0].Msg)
	trueRoot := dg.trueParent(r) == -1
	if !dg.isRoot[r] {
		dg.isRoot[r] = true
		if trueRoot {
			d.TrueRoots++
		} else {
			d.FalseRoots++
			d.FalseRootMass += dg.g.Spontaneous(r)
		}
	}
	allTrue := true
	for k := 1; k < len(in.Nodes); k++ {
		nd := in.Nodes[k]
		if dg.trueParent(int(nd.Msg)) != int(in.Nodes[nd.Parent].Msg) {
			allTrue = false
			break
		}
	}
	cl := "wrong"
	switch {
	case allTrue && trueRoot && len(in.Nodes) == dg.size[dg.tr.Instance[dg.toTruth[r]]]:
		cl = "exact"
	case allTrue && trueRoot:
		cl = "partial"
	case allTrue:
		cl = "suffix"
	}
	d.Mass[cl] += in.Prob
	d.Count[cl]++
	return nil
}

// Write prints the diagnosis as Markdown. detail adds the links by sender
// and receiver and the delays by pair.
func (d *LinkDiagnosis) Write(w io.Writer, detail bool) {
	fmt.Fprintf(w, "| messages | n | true parent a possible parent | true parent the most likely | mean p(true parent) | mean p(spontaneous) | possible parents per message |\n|---|---|---|---|---|---|---|\n")
	names := make([]string, 0, len(d.Links))
	for k := range d.Links {
		if detail || !strings.Contains(k, ":") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		c := d.Links[k]
		n := float64(c.N)
		fmt.Fprintf(w, "| %s | %d | %.1f%% | %.1f%% | %.3f | %.3f | %.1f |\n", k, c.N, 100*float64(c.Candidate)/n, 100*float64(c.Top)/n, c.PTrue/n, c.PSpont/n, float64(c.Cands)/n)
	}
	fmt.Fprintf(w, "\nRoots: %d true, %d false (starting %.1f expected instances), %d true roots start none.\n\n", d.TrueRoots, d.FalseRoots, d.FalseRootMass, d.MissedRoots)
	total := 0.0
	for _, v := range d.Mass {
		total += v
	}
	fmt.Fprintf(w, "| instances built | count | probability mass | share |\n|---|---|---|---|\n")
	for _, k := range []string{"exact", "partial", "suffix", "wrong"} {
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f%% |\n", k, d.Count[k], d.Mass[k], 100*d.Mass[k]/total)
	}
	if !detail {
		return
	}
	fmt.Fprintf(w, "\n| pair | d (ms) | true mean delay (ms) | messages |\n|---|---|---|---|\n")
	for _, p := range d.Pairs {
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %d |\n", p.Pair, p.Estimated/1e3, p.True/1e3, p.TrueN)
	}
}
