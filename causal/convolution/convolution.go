package convolution

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
)

// Name is the convolution engine's name in results and on the
// command line.
const Name = "convolution"

// Options are the parameters of the convolution engine (Project
// 5 section 5.2). DefaultOptions gives the paper's defaults
// where it has them.
type Options struct {
	causal.Options
	// Quantum is the time quantum μ in nanoseconds (section 5.2.1); the
	// paper's multi-tier runs use 10 ms.
	Quantum int64
	// NSigma is N: a spike is a local maximum at least N standard
	// deviations above the mean of the correlation (default 4).
	NSigma float64
	// Dip is S: two spikes must be separated by a point less than S
	// standard deviations above the mean (default 3).
	Dip float64
	// Window is v: a message matches a spike at delay d when it was sent
	// within d ± v of a message it may be caused by (section 5.2.2).
	// 0 means one quantum, the discretisation error of d.
	Window int64
	// MaxDelay bounds the delays (lags) searched, in nanoseconds; 0 means
	// DefaultMaxLag quanta. The mean and deviation of a correlation are
	// taken over [-MaxDelay, MaxDelay]. The paper searches every shift; but
	// over n shifts the largest of pure noise reaches about
	// sqrt(2·ln n) standard deviations, past N = 4 once n is in the
	// thousands, so an unbounded search finds spikes in noise.
	MaxDelay int64
	// MaxDepth bounds the hops of a path (default 16).
	MaxDepth int
	// MinCount is the fewest messages an edge, and each delay (spike) on
	// it, must explain (default 10): rarer ones are noise (section 5.2.3).
	MinCount int
	// MinFraction is the smallest excess of a spike over the mean of its
	// correlation, as a fraction of the messages correlated (default
	// 0.05): Σ s1(t)·s2(t+d) exceeds its mean by about the number of
	// messages caused at delay d, so a spike explaining fewer than 5% of
	// them is noise.
	MinFraction float64
	// Roots names the nodes paths start from (pattern-level names, so
	// "CLIENT" for aggregated clients). Empty means: the client nodes;
	// failing that, nodes that send calls but receive none; failing that,
	// nodes that receive nothing; failing that, every node.
	Roots []string
	// MaxVertices bounds the hops explored from one root edge (default
	// 2000), a guard against explosive graphs.
	MaxVertices int
	// Workers bounds the goroutines used; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is called with 1 each time a hop has been
	// explored, from any goroutine. The number of hops is not known ahead.
	Progress func(hops int)

	// direct makes the engine correlate by the definition instead of by
	// FFT: the slow reference the tests compare with.
	direct bool
}

// DefaultOptions returns μ = 10 ms, N = 4, S = 3, v = μ, delays
// up to 100 quanta, paths of up to 16 hops, and noise removal at 10
// messages and 5%.
func DefaultOptions() Options {
	return Options{
		Options:     causal.DefaultOptions(),
		Quantum:     10e6,
		NSigma:      4,
		Dip:         3,
		MaxDepth:    16,
		MinCount:    10,
		MinFraction: 0.05,
		MaxVertices: 2000,
	}
}

// DefaultMaxLag is the largest delay searched, in quanta, unless
// MaxDelay says otherwise: 1 s at μ = 10 ms.
const DefaultMaxLag = 100

// maxQuanta bounds the length of a signal (2^26 quanta: 512 MiB of
// correlation scratch per worker at most).
const maxQuanta = 1 << 26

// Validate checks the options. The error is a *causal.OptionError naming
// the first option out of range by its flag.
func (o *Options) Validate() error {
	bad := func(option, format string, args ...any) error {
		return causal.OptionErrorf(Name, option, format, args...)
	}
	switch {
	case o.Quantum <= 0:
		return bad("quantum", "the quantum must be positive")
	case !(o.NSigma > 0) || math.IsInf(o.NSigma, 0):
		return bad("spike-sigma", "the spike height N must be positive")
	case !(o.Dip >= 0) || o.Dip >= o.NSigma:
		return bad("dip-sigma", "the dip S between spikes must be at least 0 and below the spike height N (%g)", o.NSigma)
	case o.Window < 0:
		return bad("tolerance", "the tolerance must not be negative")
	case o.MaxDelay < 0:
		return bad("max-delay", "the max delay must not be negative")
	case o.MaxDepth < 1:
		return bad("max-depth", "the max depth must be at least 1")
	case o.MinCount < 1:
		return bad("min-count", "the min count must be at least 1")
	case !(o.MinFraction >= 0) || o.MinFraction > 1:
		return bad("min-fraction", "the min fraction must be between 0 and 1")
	case o.MaxVertices < 1:
		return bad("max-hops", "the max hops must be at least 1")
	case o.Workers < 0:
		return bad("workers", "workers must not be negative")
	}
	return o.Options.Validate(Name)
}

// Params returns the options by the names of the convolve command's
// flags, for Result.Params; the window and the max delay are the ones the
// run used when the options leave them to their defaults.
func (o *Options) Params() map[string]any {
	p := map[string]any{
		"quantum":      time.Duration(o.Quantum).String(),
		"spike-sigma":  o.NSigma,
		"dip-sigma":    o.Dip,
		"tolerance":    time.Duration(o.window()).String(),
		"max-delay":    time.Duration(o.maxDelay()).String(),
		"max-depth":    o.MaxDepth,
		"min-count":    o.MinCount,
		"min-fraction": o.MinFraction,
		"max-hops":     o.MaxVertices,
		"rank":         string(o.Rank),
	}
	if len(o.Roots) > 0 {
		p["root"] = strings.Join(o.Roots, ",")
	}
	return p
}

func (o *Options) maxDelay() int64 {
	if o.MaxDelay > 0 {
		return o.MaxDelay
	}
	return DefaultMaxLag * o.Quantum
}

func (o *Options) window() int64 {
	if o.Window > 0 {
		return o.Window
	}
	return o.Quantum
}

// Engine is the convolution engine of Project 5 section 5.2. It turns
// the messages of every edge (sender, receiver) into a signal, finds the
// delays at which the messages out of a node follow the messages into it by
// cross-correlation, and builds paths from each root by following those
// delays. It needs no CALL/RETURN marks and one timestamp per message (the
// send time, or the receive time when the send was not seen, corrected by
// the trace's clock offsets). See docs/causal-convolution.md.
type Engine struct {
	opt Options
}

// New returns a convolution engine with the given options, or the
// *causal.OptionError of the first option out of range.
func New(opt Options) (*Engine, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Engine{opt: opt}, nil
}

// Name returns "convolution".
func (c *Engine) Name() string { return Name }

// Options returns the engine's options.
func (c *Engine) Options() Options { return c.opt }

// convEdge is the trace of one edge: its messages in time order.
type convEdge struct {
	from, to int32 // name ids
	msgs     []int32
	times    []int64
	spec     []complex128 // spectrum of the edge's signal; nil when not cached
}

// convEntry is one message matched at a vertex.
type convEntry struct {
	msg    int32
	parent int32 // the message at the parent vertex it follows; -1 at a root
	root   int32 // position of its root message in the root vertex
	spike  int16 // index in the vertex's spikes; -1 at a root
}

// convVertex is one hop of a path: an edge and the messages matched on it.
type convVertex struct {
	task    int32
	parent  int32
	edge    int32
	depth   int32
	entries []convEntry        // in order of (time, msg)
	spikes  []causal.DelayPeak // delays of the edge from the parent, by score
	kids    []int32
	alive   bool
}

type convRun struct {
	opt  Options
	ms   trace.Messages
	msgs []trace.Message // ms's messages (trace.MessageSlice)
	// singleClock: one timestamp a message, no network delay (trace.Meta).
	singleClock bool
	namer       *causal.Namer
	workers     int
	offsets     []int64
	time        []int64 // corrected time of every message (MinInt64: none)
	t0          int64
	n           int // signal length (power of two)
	maxLag      int
	window      int64

	names  []string
	nameID map[string]int32
	epName map[trace.Sym]string // receiving endpoints, named before the parallel passes
	edges  []convEdge
	out    [][]int32 // name id -> out-edges carrying >= MinCount messages

	mu       sync.Mutex
	vertices []*convVertex
	tasks    []int32 // root vertex of each task
	resolved []*convTask
	counters convCounters
}

type convCounters struct {
	in, noTime, noNodes, correlations, spikes, negative, noise, kept int64
	cycleMsgs, pruned, depthLimited, vertexLimited                   int64
}

// Infer runs the engine.
func (c *Engine) Infer(ctx context.Context, ms trace.Messages) (*causal.Result, error) {
	_, res, err := c.run(ctx, ms)
	return res, err
}

// run is Infer that also returns the run's state, for tests.
func (c *Engine) run(ctx context.Context, ms trace.Messages) (*convRun, *causal.Result, error) {
	r := &convRun{opt: c.opt, ms: ms, msgs: trace.MessageSlice(ms), singleClock: ms.Metadata().SingleClock, workers: parallel.Workers(c.opt.Workers), window: c.opt.window()}
	r.namer = causal.NewNamer(ms, c.opt.Aggregate.Naming)
	r.nameID = make(map[string]int32)
	r.epName = make(map[trace.Sym]string)
	if err := r.prepare(); err != nil {
		return nil, nil, err
	}
	roots, rootWarn := r.rootNodes()
	if err := r.explore(ctx, roots); err != nil {
		return nil, nil, err
	}
	res := r.result()
	if rootWarn != "" {
		res.Warnings = append(res.Warnings, rootWarn)
	}
	return r, res, nil
}

func (r *convRun) id(name string) int32 {
	if id, ok := r.nameID[name]; ok {
		return id
	}
	id := int32(len(r.names))
	r.names = append(r.names, name)
	r.nameID[name] = id
	return id
}

// prepare computes corrected times, splits the trace into per-edge traces
// and sizes the signals.
func (r *convRun) prepare() error {
	msgs := r.msgs
	r.counters.in = int64(len(msgs))
	if r.offsets = causal.NodeOffsets(r.ms); r.offsets == nil {
		r.offsets = make([]int64, r.ms.Symbols().Len())
	}
	r.time = make([]int64, len(msgs))
	nodeID := make([]int32, r.ms.Symbols().Len())
	for i := range nodeID {
		nodeID[i] = -1
	}
	node := func(s trace.Sym) int32 {
		if nodeID[s] < 0 {
			nodeID[s] = r.id(r.namer.Node(s))
		}
		return nodeID[s]
	}
	type ekey struct{ from, to int32 }
	edgeOf := make(map[ekey]int32)
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.SendTS.Known():
			r.time[i] = int64(m.SendTS) - r.offsets[m.SrcNode]
		case m.RecvTS.Known():
			r.time[i] = int64(m.RecvTS) - r.offsets[m.DstNode]
		default:
			r.time[i] = math.MinInt64
			r.counters.noTime++
			continue
		}
		if m.SrcNode == 0 || m.DstNode == 0 {
			r.time[i] = math.MinInt64
			r.counters.noNodes++
			continue
		}
		if _, ok := r.epName[m.Dst]; !ok {
			r.epName[m.Dst] = r.namer.Endpoint(m.Dst)
		}
		k := ekey{node(m.SrcNode), node(m.DstNode)}
		e, ok := edgeOf[k]
		if !ok {
			e = int32(len(r.edges))
			edgeOf[k] = e
			r.edges = append(r.edges, convEdge{from: k.from, to: k.to})
		}
		r.edges[e].msgs = append(r.edges[e].msgs, int32(i))
		lo = min(lo, r.time[i])
		hi = max(hi, r.time[i])
	}
	if lo > hi {
		return nil
	}
	r.t0 = lo
	span := (hi-lo)/r.opt.Quantum + 1
	lag := min(span-1, (r.opt.maxDelay()+r.opt.Quantum-1)/r.opt.Quantum)
	if span+lag > maxQuanta {
		return fmt.Errorf("the trace spans %d quanta of %v ms; at most %d fit: raise the quantum or lower the max delay",
			span, float64(r.opt.Quantum)/1e6, maxQuanta-lag)
	}
	r.maxLag = int(lag)
	r.n = nextPow2(int(span + lag))
	r.out = make([][]int32, len(r.names))
	for e := range r.edges {
		ed := &r.edges[e]
		slices.SortFunc(ed.msgs, r.byTime)
		ed.times = make([]int64, len(ed.msgs))
		for i, m := range ed.msgs {
			ed.times[i] = r.time[m]
		}
		if len(ed.msgs) >= r.opt.MinCount {
			r.out[ed.from] = append(r.out[ed.from], int32(e))
		}
	}
	return nil
}

func (r *convRun) byTime(a, b int32) int {
	if c := cmp.Compare(r.time[a], r.time[b]); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

func (r *convRun) quantum(msg int32) int32 { return int32((r.time[msg] - r.t0) / r.opt.Quantum) }

// rootNodes returns the name ids paths start from.
func (r *convRun) rootNodes() ([]int32, string) {
	if len(r.opt.Roots) > 0 {
		var ids []int32
		var missing []string
		for _, n := range r.opt.Roots {
			if id, ok := r.nameID[n]; ok {
				ids = append(ids, id)
			} else {
				missing = append(missing, n)
			}
		}
		warn := ""
		if len(missing) > 0 {
			warn = "root nodes not in the trace: " + strings.Join(missing, ", ")
		}
		return ids, warn
	}
	n := len(r.names)
	client := make([]bool, n)
	for i := range r.msgs {
		m := &r.msgs[i]
		if r.time[i] != math.MinInt64 && r.namer.Roles().Client(m.SrcNode) {
			client[r.nameID[r.namer.Node(m.SrcNode)]] = true
		}
	}
	sendsCall, getsCall, gets := make([]bool, n), make([]bool, n), make([]bool, n)
	for i := range r.msgs {
		if r.time[i] == math.MinInt64 {
			continue
		}
		m := &r.msgs[i]
		from, to := r.nameID[r.namer.Node(m.SrcNode)], r.nameID[r.namer.Node(m.DstNode)]
		gets[to] = true
		if m.Kind == trace.KindCall {
			sendsCall[from] = true
			getsCall[to] = true
		}
	}
	for _, pick := range []func(i int) bool{
		func(i int) bool { return client[i] },
		func(i int) bool { return sendsCall[i] && !getsCall[i] },
		func(i int) bool { return !gets[i] },
		func(i int) bool { return true },
	} {
		var ids []int32
		for i := 0; i < n; i++ {
			if pick(i) && len(r.out[i]) > 0 {
				ids = append(ids, int32(i))
			}
		}
		if len(ids) > 0 {
			return ids, ""
		}
	}
	return nil, ""
}

// spectraBudget bounds the memory spent caching edge spectra.
const spectraBudget = 512 << 20

// corrPool hands out correlators, one per goroutine at a time.
type corrPool struct {
	n    int
	pool chan *correlator
}

func newCorrPool(n, workers int) *corrPool {
	return &corrPool{n: n, pool: make(chan *correlator, workers)}
}

func (p *corrPool) get() *correlator {
	select {
	case c := <-p.pool:
		return c
	default:
		return newCorrelator(p.n)
	}
}

func (p *corrPool) put(c *correlator) {
	select {
	case p.pool <- c:
	default:
	}
}

// buildSpectra computes the spectra of the edges that can be correlated,
// in parallel, as far as the budget allows; the others are transformed
// again each time they are used.
func (r *convRun) buildSpectra(pool *corrPool) {
	var todo []int32
	size := int64(r.n/2+1) * 16
	used := int64(0)
	for _, es := range r.out {
		for _, e := range es {
			if used+size > spectraBudget {
				break
			}
			used += size
			todo = append(todo, e)
		}
	}
	parallel.Each(len(todo), r.workers, func(i int) {
		c := pool.get()
		ed := &r.edges[todo[i]]
		q := r.quanta(ed.msgs, nil)
		ed.spec = c.fft.Coefficients(nil, c.signal(q))
		pool.put(c)
	})
}

func (r *convRun) quanta(msgs []int32, buf []int32) []int32 {
	buf = buf[:0]
	for _, m := range msgs {
		buf = append(buf, r.quantum(m))
	}
	return buf
}

func (r *convRun) vertex(i int32) *convVertex {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.vertices[i]
}

// addVertex stores v and returns its index, or -1 when its task has
// reached MaxVertices.
func (r *convRun) addVertex(v *convVertex, taskSize []int32) int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v.parent >= 0 {
		if int(taskSize[v.task]) >= r.opt.MaxVertices {
			r.counters.vertexLimited++
			return -1
		}
		taskSize[v.task]++
	}
	id := int32(len(r.vertices))
	r.vertices = append(r.vertices, v)
	return id
}

// explore runs FindPathsFromRoot for every root: a root vertex for every
// edge out of a root node, then ProcessNode on every vertex, as jobs on a
// pool of workers. The paths are trees, explored in any order.
func (r *convRun) explore(ctx context.Context, roots []int32) error {
	if r.n == 0 {
		return nil
	}
	pool := newCorrPool(r.n, r.workers)
	if !r.opt.direct {
		r.buildSpectra(pool)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var taskSize []int32
	var queue []int32
	for _, i := range roots {
		for _, e := range r.out[i] {
			ed := &r.edges[e]
			v := &convVertex{task: int32(len(r.tasks)), parent: -1, edge: e, depth: 1, alive: true}
			v.entries = make([]convEntry, len(ed.msgs))
			for pos, m := range ed.msgs {
				v.entries[pos] = convEntry{msg: m, parent: -1, root: int32(pos), spike: -1}
			}
			taskSize = append(taskSize, 1)
			id := r.addVertex(v, taskSize)
			r.tasks = append(r.tasks, id)
			queue = append(queue, id)
		}
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		busy    int
		stopErr error
		wg      sync.WaitGroup
	)
	for w := 0; w < r.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := pool.get()
			defer pool.put(c)
			var sc convScratch
			for {
				mu.Lock()
				for len(queue) == 0 && busy > 0 && stopErr == nil {
					cond.Wait()
				}
				if len(queue) == 0 || stopErr != nil {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				id := queue[0]
				queue = queue[1:]
				busy++
				mu.Unlock()

				kids := r.process(c, &sc, id, taskSize)
				err := ctx.Err()
				if r.opt.Progress != nil {
					r.opt.Progress(1)
				}

				mu.Lock()
				busy--
				queue = append(queue, kids...)
				if err != nil && stopErr == nil {
					stopErr = err
				}
				mu.Unlock()
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	return stopErr
}

// convScratch is a worker's reusable memory.
type convScratch struct {
	q       []int32
	sig1    []float64
	spec1   []complex128
	spec2   []complex128
	spikes  []spike
	taken   []bool
	touched []int32
}

// process is ProcessNode for vertex id: it correlates the vertex's messages
// with every edge out of its node, and for each spike at a delay d >= 0
// (FindCausedMessages) matches each message to the nearest unmatched
// message on the edge sent within d ± v of it. The matches of all the
// edge's spikes make one child vertex, whose delays are the spikes. It
// returns the new child vertices.
func (r *convRun) process(c *correlator, sc *convScratch, id int32, taskSize []int32) []int32 {
	v := r.vertex(id)
	if int(v.depth) >= r.opt.MaxDepth {
		r.mu.Lock()
		r.counters.depthLimited++
		r.mu.Unlock()
		return nil
	}
	outs := r.out[r.edges[v.edge].to]
	if len(outs) == 0 {
		return nil
	}
	r.transformVertex(c, sc, v)
	var cnt convCounters
	var kids []int32
	for _, e := range outs {
		kid := r.follow(c, sc, v, id, e, &cnt)
		if kid == nil {
			continue
		}
		if kidID := r.addVertex(kid, taskSize); kidID >= 0 {
			v.kids = append(v.kids, kidID)
			kids = append(kids, kidID)
		}
	}
	r.mu.Lock()
	r.counters.correlations += cnt.correlations
	r.counters.spikes += cnt.spikes
	r.counters.negative += cnt.negative
	r.counters.noise += cnt.noise
	r.counters.kept += cnt.kept
	r.counters.cycleMsgs += cnt.cycleMsgs
	r.mu.Unlock()
	return kids
}

// transformVertex makes the signal of vertex v's messages (sc.sig1 for
// the direct correlation) or its spectrum (sc.spec1).
func (r *convRun) transformVertex(c *correlator, sc *convScratch, v *convVertex) {
	sc.q = sc.q[:0]
	for _, en := range v.entries {
		sc.q = append(sc.q, r.quantum(en.msg))
	}
	if r.opt.direct {
		sc.sig1 = append(sc.sig1[:0], c.signal(sc.q)...)
		return
	}
	if len(sc.spec1) != r.n/2+1 {
		sc.spec1 = make([]complex128, r.n/2+1)
	}
	c.fft.Coefficients(sc.spec1, c.signal(sc.q))
}

// correlate returns the correlation of vertex's signal (transformVertex)
// with the signal of edge ed.
func (r *convRun) correlate(c *correlator, sc *convScratch, ed *convEdge) []float64 {
	if r.opt.direct {
		return directCorrelation(sc.sig1, c.signal(r.quanta(ed.msgs, nil)), r.maxLag, c.corr)
	}
	spec2 := ed.spec
	if spec2 == nil {
		if len(sc.spec2) != r.n/2+1 {
			sc.spec2 = make([]complex128, r.n/2+1)
		}
		sc.q = r.quanta(ed.msgs, sc.q)
		spec2 = c.fft.Coefficients(sc.spec2, c.signal(sc.q))
	}
	return c.correlate(sc.spec1, spec2)
}

// follow follows edge e from vertex v (id): it correlates them, keeps the
// spikes at delays of at least 0 that explain enough of v's messages,
// strongest first, matches the messages at each, and returns the child
// vertex of the matches of the spikes that explain MinCount messages, or
// nil when none does. It counts what it finds in cnt.
func (r *convRun) follow(c *correlator, sc *convScratch, v *convVertex, id, e int32, cnt *convCounters) *convVertex {
	ed := &r.edges[e]
	corr := r.correlate(c, sc, ed)
	cnt.correlations++
	sc.spikes, _, _ = findSpikes(corr, r.maxLag, r.opt.NSigma, r.opt.Dip, sc.spikes[:0])
	keep := r.keepSpikes(sc.spikes, float64(len(v.entries)), cnt)
	if len(keep) == 0 {
		return nil
	}
	entries, peaks := r.match(sc, v, ed, keep)
	entries, dropped := r.dropCycles(v, e, entries)
	cnt.cycleMsgs += int64(dropped)
	entries = r.dropWeakSpikes(entries, peaks, cnt)
	if len(entries) == 0 {
		return nil
	}
	slices.SortFunc(entries, func(a, b convEntry) int { return r.byTime(a.msg, b.msg) })
	return &convVertex{task: v.task, parent: id, edge: e, depth: v.depth + 1, entries: entries, spikes: peaks, alive: true}
}

// keepSpikes keeps, in place, the spikes at delays of at least 0 whose
// excess explains MinFraction of the nV messages correlated, strongest
// first (ties by delay), at most MaxInt16 of them, and counts the others.
func (r *convRun) keepSpikes(spikes []spike, nV float64, cnt *convCounters) []spike {
	keep := spikes[:0]
	for _, s := range spikes {
		cnt.spikes++
		switch {
		case s.lag < 0:
			cnt.negative++
		case s.excess < r.opt.MinFraction*nV*(1-1e-9):
			cnt.noise++
		default:
			keep = append(keep, s)
		}
	}
	slices.SortStableFunc(keep, func(a, b spike) int {
		if math.Abs(a.score-b.score) > 1e-9*max(math.Abs(a.score), math.Abs(b.score)) {
			return cmp.Compare(b.score, a.score)
		}
		return cmp.Compare(a.lag, b.lag)
	})
	if len(keep) > math.MaxInt16 {
		cnt.noise += int64(len(keep) - math.MaxInt16)
		keep = keep[:math.MaxInt16]
	}
	return keep
}

// dropWeakSpikes counts the entries of each spike in peaks and drops the
// entries of the spikes that explain fewer than MinCount messages
// themselves: they are noise.
func (r *convRun) dropWeakSpikes(entries []convEntry, peaks []causal.DelayPeak, cnt *convCounters) []convEntry {
	for i := range peaks {
		peaks[i].Count = 0
	}
	for _, en := range entries {
		peaks[en.spike].Count++
	}
	entries = slices.DeleteFunc(entries, func(en convEntry) bool { return peaks[en.spike].Count < r.opt.MinCount })
	for _, pk := range peaks {
		if pk.Count < r.opt.MinCount {
			cnt.noise++
		} else {
			cnt.kept++
		}
	}
	return entries
}

// match matches the vertex's messages to the edge's messages at each spike,
// strongest spike first: each message of the vertex takes, per spike, the
// unmatched edge message nearest to its time plus the delay, within the
// window. A message of the edge is matched at most once.
func (r *convRun) match(sc *convScratch, v *convVertex, ed *convEdge, spikes []spike) ([]convEntry, []causal.DelayPeak) {
	if cap(sc.taken) < len(ed.msgs) {
		sc.taken = make([]bool, len(ed.msgs))
	}
	taken := sc.taken[:len(ed.msgs)]
	sc.touched = sc.touched[:0]
	var out []convEntry
	peaks := make([]causal.DelayPeak, len(spikes))
	w := r.window
	for si, s := range spikes {
		d := int64(s.lag) * r.opt.Quantum
		peaks[si] = causal.DelayPeak{DelayUS: float64(d) / 1e3, Score: s.score}
		j := 0
		for _, en := range v.entries {
			target := r.time[en.msg] + d
			for j < len(ed.times) && ed.times[j] < target-w {
				j++
			}
			best, bestDist := -1, int64(0)
			for k := j; k < len(ed.times) && ed.times[k] <= target+w; k++ {
				if taken[k] {
					continue
				}
				dist := ed.times[k] - target
				if dist < 0 {
					dist = -dist
				}
				if best < 0 || dist < bestDist {
					best, bestDist = k, dist
				}
			}
			if best < 0 {
				continue
			}
			taken[best] = true
			sc.touched = append(sc.touched, int32(best))
			out = append(out, convEntry{msg: ed.msgs[best], parent: en.msg, root: en.root, spike: int16(si)})
		}
	}
	for _, k := range sc.touched {
		taken[k] = false
	}
	return out, peaks
}

// dropCycles removes the entries whose message is already on the path from
// the root to v (suppressing cycles, section 5.2.3) and returns how many it
// removed. A message belongs to one edge, so only ancestors on edge e can
// hold it.
func (r *convRun) dropCycles(v *convVertex, e int32, entries []convEntry) ([]convEntry, int) {
	n0 := len(entries)
	for a := v; ; {
		if a.edge == e {
			k := 0
			for _, en := range entries {
				if !r.holds(a, en.msg) {
					entries[k] = en
					k++
				}
			}
			entries = entries[:k]
		}
		if a.parent < 0 {
			break
		}
		a = r.vertex(a.parent)
	}
	return entries, n0 - len(entries)
}

// holds reports whether vertex a matched message m.
func (r *convRun) holds(a *convVertex, m int32) bool {
	i := sort.Search(len(a.entries), func(i int) bool { return r.byTime(a.entries[i].msg, m) >= 0 })
	return i < len(a.entries) && a.entries[i].msg == m
}
