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
	tr := out.Truth
	toTruth := tr.ByObserved()
	namer := causal.NewNamer(out.Trace, opt.Aggregate.Naming)
	msgs := out.Trace.Messages
	d := &LinkDiagnosis{Links: map[string]*LinkClass{}, Mass: map[string]float64{}, Count: map[string]int{}}
	class := func(name string) *LinkClass {
		c := d.Links[name]
		if c == nil {
			c = &LinkClass{}
			d.Links[name] = c
		}
		return c
	}
	trueParent := func(i int) int { // observed index of i's true parent, -1 root, -2 lost
		p := tr.Parent[toTruth[i]]
		if p < 0 {
			return -1
		}
		if o := tr.Observed[p]; o >= 0 {
			return int(o)
		}
		return -2
	}
	for i := range msgs {
		tp := trueParent(i)
		if tp < 0 {
			continue
		}
		parents := g.Parents(i)
		kinds := msgs[i].Kind.String() + " caused by " + msgs[tp].Kind.String()
		for _, name := range []string{"all", kinds, kinds + ": " + namer.Node(msgs[i].SrcNode) + "->" + namer.Node(msgs[i].DstNode)} {
			c := class(name)
			c.N++
			c.Cands += len(parents)
			c.PSpont += g.Spontaneous(i)
			for _, p := range parents {
				if p.Msg == tp {
					c.Candidate++
					c.PTrue += p.P
				}
			}
			if g.MostLikelyCause(i) == tp {
				c.Top++
			}
		}
	}

	// Delays, by named sender pair and kind: the engine's d (a mean over
	// the node pairs, weighted by their samples) against the true delays.
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
	key := func(from, to trace.Sym) string { return namer.Node(from) + "->" + namer.Node(to) }
	for _, pd := range g.Delays() {
		if !pd.ReceiverClock {
			add(est, key(pd.From, pd.To), float64(pd.Mean)/1e3, pd.Samples)
		}
	}
	for i := range msgs {
		tp := trueParent(i)
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
		d.Pairs = append(d.Pairs, PairDiag{Pair: k, Estimated: e.sum / e.n, True: a.sum / a.n, TrueN: int(a.n)})
	}
	sort.Slice(d.Pairs, func(i, j int) bool { return d.Pairs[i].Pair < d.Pairs[j].Pair })

	// Roots and instances.
	isRoot := make([]bool, len(msgs))
	size := make([]int, tr.NumInstances())
	for _, k := range tr.Instance {
		size[k]++
	}
	err = l.Paths(ctx, g, func(in causal.Instance) error {
		r := int(in.Nodes[0].Msg)
		trueRoot := trueParent(r) == -1
		if !isRoot[r] {
			isRoot[r] = true
			if trueRoot {
				d.TrueRoots++
			} else {
				d.FalseRoots++
				d.FalseRootMass += g.Spontaneous(r)
			}
		}
		allTrue := true
		for k := 1; k < len(in.Nodes); k++ {
			nd := in.Nodes[k]
			if trueParent(int(nd.Msg)) != int(in.Nodes[nd.Parent].Msg) {
				allTrue = false
				break
			}
		}
		cl := "wrong"
		switch {
		case allTrue && trueRoot && len(in.Nodes) == size[tr.Instance[toTruth[r]]]:
			cl = "exact"
		case allTrue && trueRoot:
			cl = "partial"
		case allTrue:
			cl = "suffix"
		}
		d.Mass[cl] += in.Prob
		d.Count[cl]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		if trueParent(i) == -1 && !isRoot[i] {
			d.MissedRoots++
		}
	}
	return d, nil
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
