package assembly

import (
	"maps"
	"math"
	"slices"
)

// endKind stands for a request's reply in the call-graph model: the
// "child" after which a request makes no more calls.
const endKind int32 = -2

// noKind is the previous child of a request that made none yet.
const noKind int32 = -1

// ctxKey is what a request's next event depends on in the model: its
// kind, how many calls it made so far, the kind of the last one and the
// class of the last reply it received.
type ctxKey struct {
	pk   int32
	prev int32
	pos  uint8
	ret  uint8
}

type tKey struct {
	pk, prev int32
	pos, ret uint8
	// lvl is 16 bits so that the fields leave no padding: the maps keyed
	// by a tKey then hash its 12 bytes at once (as gKey's)
	lvl uint16
}

// gKey is a context of the delay model at one of four levels of backoff.
// Its fields leave no padding, so the maps keyed by it hash its 16 bytes
// at once (with padding the runtime hashed field by field: a third of
// the cost of the look-ups).
type gKey struct {
	pk, prev, next int32
	lvl, ret       uint16
}

type sKey struct{ prev, next, pk int32 }

type tcKey struct {
	c    ctxKey
	next int32
}

// sizeLink is the relation between the size of a request's last reply
// received and the size of what it sends next (a value read and then
// written, a body passed on): the histogram of their difference on links,
// against what unrelated messages of those kinds give.
type sizeLink struct {
	link        map[int64]float64
	n           float64
	informative bool
	cache       map[int64]float64
	kappa       float64 // unseenWeight's answer while link is unchanged (0: not yet)
}

// nodeModel is everything learnt about one node: its call graph (which
// kinds of calls each kind of request makes, in which order, serial or
// parallel), the delays before each call and each reply, how often each
// kind of call is made by no request, and the likelihood ratios of the
// size, token, request-id and thread evidence.
type nodeModel struct {
	trans   map[tKey]*dist
	gaps    [2]map[gKey]*hist // by anchor
	anchorW map[gKey]float64  // weight of anchorLast by context
	samples []gapSample
	ov      map[int32]*overlap
	bg      map[int32]float64
	bgCall  map[int32]float64 // a call's background score, where its kind has a rhythm (periodic.go)
	nKinds  int               // distinct child kinds at the node, for the uniform prior
	logSpan float64
	res     float64 // the timestamps' resolution, ns
	tick    float64 // the ticks spread times came from (tickBlur), 0 when not spread
	// fifoDamp takes from the FIFO evidence's weight what the order the
	// node serves in does not support (fifoOrder.weight: the weight is
	// 1 − fifoDamp); 0 until learnt
	fifoDamp float64

	size     map[sKey]*sizeLink
	retSizes map[int32]map[int64]float64 // child kind -> reply sizes
	reqSizes map[int32]map[int64]float64 // child kind -> request sizes
	repSizes map[int32]map[int64]float64 // parent kind -> reply sizes
	arrSizes map[int32]map[int64]float64 // parent kind -> request sizes
	origin   map[oKey]*sizeLink          // request size against what it sends (origin.go)

	tok, rid, thr, fifo, rep lrTable
	wait                     lrTable    // the waiters of a pool (waiters.go)
	hand                     *handModel // the handoffs' delays (waiters.go)
	// handApart: the handoffs' delays are learnt and read apart (waiters.go)
	handApart bool
	assoc     *tokAssoc // derived tokens (assoc.go)
	sets      *kindSets // the kinds of call requests make together (kindsets.go)
	// fanStart: the node's requests fan out, and its FIFO evidence ranks
	// them by their first call sent (fanorder.go)
	fanStart bool
	// cross: how often requests that arrived on different connections
	// were served in their arrival order (connorder.go); nil until seen
	cross *crossOrder

	tcache  map[tcKey]float64
	scorers map[uint64]*scorerEntry
	gcache  [2]map[gKey]*[nGapBins]float64
	// mcache holds, by anchor and level-1 context, the masses gapDensity
	// mixes from the levels above (gapmass.go)
	mcache [2]map[gKey]*upperMass
	// sizeLists holds the tables of sizes as lists (sizelist.go)
	sizeLists map[sizeListKey]*sizeList
}

func newNodeModel(nKinds int, span float64) *nodeModel {
	return &nodeModel{
		trans:    make(map[tKey]*dist),
		gaps:     [2]map[gKey]*hist{make(map[gKey]*hist), make(map[gKey]*hist)},
		ov:       make(map[int32]*overlap),
		bg:       make(map[int32]float64),
		nKinds:   nKinds,
		logSpan:  math.Log(math.Max(span, 1e9)),
		size:     make(map[sKey]*sizeLink),
		retSizes: make(map[int32]map[int64]float64),
		reqSizes: make(map[int32]map[int64]float64),
		repSizes: make(map[int32]map[int64]float64),
		arrSizes: make(map[int32]map[int64]float64),
		origin:   make(map[oKey]*sizeLink),
		tok:      newLR(tokBins),
		rid:      newLR(2),
		thr:      newLR(2),
		fifo:     newFallingLR(fifoBins),
		wait:     newFallingLR(waitBins),
		rep:      newLR(2),
		assoc:    newTokAssoc(),
		sets:     newKindSets(),
		tcache:   make(map[tcKey]float64),
		scorers:  make(map[uint64]*scorerEntry),
		gcache:   [2]map[gKey]*[nGapBins]float64{make(map[gKey]*[nGapBins]float64), make(map[gKey]*[nGapBins]float64)},
	}
}

// resetCaches drops what was computed from the model's counts, after
// they changed.
func (m *nodeModel) resetCaches() {
	clear(m.gcache[anchorLast])
	clear(m.gcache[anchorArrival])
	clear(m.mcache[anchorLast])
	clear(m.mcache[anchorArrival])
	clear(m.scorers)
	clear(m.tcache)
}

func (c ctxKey) transKeys() [5]tKey {
	return [5]tKey{
		{lvl: 0, pk: c.pk, prev: c.prev, pos: c.pos, ret: c.ret},
		{lvl: 1, pk: c.pk, prev: c.prev, ret: c.ret},
		{lvl: 6, prev: c.prev, ret: c.ret},
		{lvl: 7, prev: c.prev},
		{lvl: 8},
	}
}

func (c ctxKey) gapKeys(next int32) [4]gKey {
	return [4]gKey{
		{lvl: 0, pk: c.pk, prev: c.prev, next: next, ret: uint16(c.ret)},
		{lvl: 1, prev: c.prev, next: next, ret: uint16(c.ret)},
		{lvl: 2, next: next},
		{lvl: 3},
	}
}

// A request's next message is timed from one of two anchors: the latest
// event that can have triggered it (its arrival or the last reply it
// received: a serial request) or its arrival (the calls of a parallel
// fan-out, each sent a while after the request came in whatever the
// others did). The delay from each is modelled, and their mixture weight
// is learnt per context.
const (
	anchorLast = iota
	anchorArrival
)

// gapSample is one observed delay, kept to learn the anchors' weights.
type gapSample struct {
	key    gKey
	bl, ba int
	w      float64
}

// observe records one event of a request: its next call (or endKind) in
// context c after delays gl from its latest trigger and ga from its
// arrival, with weight w for the delays and wt for the call graph.
func (m *nodeModel) observe(c ctxKey, next int32, gl, ga int64, w, wt float64) {
	m.observeTrans(c, next, wt)
	m.observeGaps(c, next, gl, ga, w)
}

// observeTrans records the call graph's step to next in context c, as
// observe does, without its delays.
func (m *nodeModel) observeTrans(c ctxKey, next int32, wt float64) {
	for _, k := range c.transKeys() {
		d := m.trans[k]
		if d == nil {
			d = &dist{}
			m.trans[k] = d
		}
		d.add(next, wt)
	}
}

// observeGaps records the delays of one event of a request, as observe
// does, without its call graph.
func (m *nodeModel) observeGaps(c ctxKey, next int32, gl, ga int64, w float64) {
	keys := c.gapKeys(next)
	bl, ba := gapBin(gl), gapBin(ga)
	m.addGap(anchorLast, keys[:], bl, w)
	m.addGap(anchorArrival, keys[:], ba, w)
	m.samples = append(m.samples, gapSample{keys[0], bl, ba, w})
}

func (m *nodeModel) addGap(anchor int, keys []gKey, b int, w float64) {
	m.gapsChanged(anchor)
	for _, k := range keys {
		h := m.gaps[anchor][k]
		if h == nil {
			h = &hist{}
			m.gaps[anchor][k] = h
		}
		h.add(b, w)
	}
}

// gapDensity returns the log densities of the delays before next in
// context keys from anchor.
func (m *nodeModel) gapDensity(anchor int, keys *[4]gKey) *[nGapBins]float64 {
	d := m.gcache[anchor][keys[0]]
	if d == nil {
		up := m.upper(anchor, keys)
		mass, node := mixMass(m.gaps[anchor][keys[0]], &up.mass), up.node
		robustMix(&mass, &node)
		if m.tick > 0 {
			mass = tickBlur(&mass, m.tick)
		}
		d = logDensity(&mass, m.res)
		m.gcache[anchor][keys[0]] = d
	}
	return d
}

// finishAnchors learns, for every context seen, the weight of the
// latest-trigger anchor against the arrival anchor (EM over the samples).
// The contexts are numbered once, so the six rounds add into slices
// instead of looking up two maps four times a sample; a context's sums
// take its samples in the same order, so the weights are the same.
func (m *nodeModel) finishAnchors() {
	type pre struct {
		i0, i1 int32 // the sample's level-0 and level-1 contexts
		fl, fa float64
		w      float64
	}
	index := make(map[gKey]int32)
	var keys []gKey
	var dl, da []*[nGapBins]float64 // the level-0 contexts' densities
	number := func(k gKey) int32 {
		i, ok := index[k]
		if !ok {
			i = int32(len(keys))
			index[k] = i
			keys = append(keys, k)
			dl, da = append(dl, nil), append(da, nil)
		}
		return i
	}
	ps := make([]pre, len(m.samples))
	for i, s := range m.samples {
		i0 := number(s.key)
		if dl[i0] == nil {
			gk := gapKeysOf(s.key)
			dl[i0], da[i0] = m.gapDensity(anchorLast, &gk), m.gapDensity(anchorArrival, &gk)
		}
		ps[i] = pre{i0, number(gapKeysOf(s.key)[1]), math.Exp(dl[i0][s.bl]), math.Exp(da[i0][s.ba]), s.w}
	}
	type acc struct{ r, n float64 }
	sum := make([]acc, len(keys))
	w := make([]float64, len(keys))
	learnt := false // w holds every context's weight (after the first round)
	for it := 0; it < 6; it++ {
		clear(sum)
		for _, p := range ps {
			wl := 0.5
			if learnt {
				wl = w[p.i0]
			}
			r := wl * p.fl / (wl*p.fl + (1-wl)*p.fa)
			sum[p.i0].r += p.w * r
			sum[p.i0].n += p.w
			sum[p.i1].r += p.w * r
			sum[p.i1].n += p.w
		}
		for i, a := range sum {
			w[i] = (a.r + 1) / (a.n + 2)
		}
		learnt = true
	}
	m.anchorW = make(map[gKey]float64, len(keys))
	for i, k := range keys {
		m.anchorW[k] = w[i]
	}
	m.samples = nil
}

// anchorWeight is the weight of the latest-trigger anchor in context key
// (a level-0 gap key), backed off to its level-1 key, else even.
func (m *nodeModel) anchorWeight(w map[gKey]float64, key gKey) float64 {
	if v, ok := w[key]; ok {
		return v
	}
	keys := gapKeysOf(key)
	if v, ok := w[keys[1]]; ok {
		return v
	}
	return 0.5
}

// gapKeysOf returns the backoff keys of a level-0 gap key.
func gapKeysOf(k gKey) [4]gKey {
	return ctxKey{pk: k.pk, prev: k.prev, ret: uint8(k.ret)}.gapKeys(k.next)
}

// logTrans returns log P(next | c), backed off level by level to a
// uniform choice among the node's kinds of call and the reply.
func (m *nodeModel) logTrans(c ctxKey, next int32) float64 {
	ck := tcKey{c, next}
	if v, ok := m.tcache[ck]; ok {
		return v
	}
	p := 1 / float64(m.nKinds+1)
	keys := c.transKeys()
	for i := len(keys) - 1; i >= 0; i-- {
		d := m.trans[keys[i]]
		if d == nil || d.n == 0 {
			continue
		}
		p = (d.c[next] + kappaTrans*p) / (d.n + kappaTrans)
	}
	v := math.Log(p)
	// Each level backs off to the one above it with the weight
	// kappaTrans/(n+kappaTrans), so a call never seen in any context
	// shrinks once per level, by the same observations counted again at
	// each: to e^-38 for a kind of call every request of the node's
	// thousand could make. That is no probability anyone believes, and it
	// left a rare kind of request's calls (a login among thousands of
	// searches) to background once a pass had put them there. No event is
	// taken to be rarer than one in the node's observations.
	if d := m.trans[keys[len(keys)-1]]; d != nil && d.n > 0 {
		v = max(v, -math.Log(d.n+1))
	}
	m.tcache[ck] = v
	return v
}

// scorer is what the search needs to score one kind of message in one
// context, looked up once: the call graph's log probability, the delay
// densities from each anchor (the model's, gcache's, shared by every
// scorer of their level-0 context) and the logs of the anchors' weights,
// added to a density's bin where it is read (lw to dl's, la to da's).
// The sums are the ones a copy of the densities with the weights added
// held, bit for bit; the copy, 5 KB a scorer, was a fifth of the engine's
// CPU at 64 requests in flight (docs/scale.md).
type scorer struct {
	logT   float64
	lw, la float64
	dl, da *[nGapBins]float64
	cum    *[2][nGapBins]float64 // readyBy's, once computed
}

// gap returns the log density of a message gl after its latest trigger
// and ga after its request's arrival: the anchors' mixture.
func (sc *scorer) gap(gl, ga int64) float64 {
	return logAdd(sc.dl[gapBin(gl)]+sc.lw, sc.da[gapBin(ga)]+sc.la)
}

// logAdd returns log(e^a + e^b), by a table of log(1 + e^-d).
func logAdd(a, b float64) float64 {
	hi, d := a, a-b
	if b > a {
		hi, d = b, b-a
	}
	if d >= softplusMax || math.IsNaN(d) {
		return hi
	}
	return hi + softplus[int(d*softplusStep)]
}

const (
	softplusMax  = 20
	softplusStep = 100
)

// softplus[i] is log(1 + e^-(i+0.5)/softplusStep).
var softplus = func() []float64 {
	t := make([]float64, softplusMax*softplusStep)
	for i := range t {
		t[i] = math.Log1p(math.Exp(-(float64(i) + 0.5) / softplusStep))
	}
	return t
}()

// packKey packs a context and a next kind into one map key.
func packKey(c ctxKey, next int32) uint64 {
	return uint64(uint32(c.pk))<<40 ^ uint64(uint32(c.prev+2))<<20 ^ uint64(uint32(next+2)) ^
		uint64(c.pos)<<60 ^ uint64(c.ret)<<53 ^ uint64(uint32(c.pk)>>24)<<56
}

// scorer returns (building it once) the scorer of next in context c.
func (m *nodeModel) scorer(c ctxKey, next int32) *scorer {
	k := packKey(c, next)
	if sc, ok := m.scorers[k]; ok && sc.c == c && sc.next == next {
		return &sc.scorer
	}
	keys := c.gapKeys(next)
	wl := m.anchorWeight(m.anchorW, keys[0])
	e := &scorerEntry{c: c, next: next}
	e.logT = m.logTrans(c, next)
	e.dl, e.da = m.gapDensity(anchorLast, &keys), m.gapDensity(anchorArrival, &keys)
	e.lw, e.la = math.Log(wl), math.Log(1-wl)
	m.scorers[k] = e
	return &e.scorer
}

type scorerEntry struct {
	scorer
	c    ctxKey
	next int32
}

// logOverlap returns the log probability that a request of kind pk sends
// a call while one of its calls is outstanding (busy) or not.
func (m *nodeModel) logOverlap(pk int32, busy bool) float64 {
	o := m.ov[pk]
	if o == nil {
		return logHalf
	}
	if !o.ok {
		// the logarithms once per change of the counts, not at every
		// link the search scores
		o.lg[0] = math.Log((o.n[0] + 0.5) / (o.n[1] + 1))
		o.lg[1] = math.Log((o.n[1] - o.n[0] + 0.5) / (o.n[1] + 1))
		o.ok = true
	}
	if busy {
		return o.lg[0]
	}
	return o.lg[1]
}

// logHalf is log(0.5), computed once.
var logHalf = math.Log(0.5)

// overlap counts a request kind's calls sent while another of its calls
// was outstanding (n[0]) and all its calls (n[1]), with logOverlap's
// logarithms of them while ok (addOverlap clears it).
type overlap struct {
	n  [2]float64
	lg [2]float64
	ok bool
}

func (m *nodeModel) addOverlap(pk int32, busy bool, w float64) {
	o := m.ov[pk]
	if o == nil {
		o = new(overlap)
		m.ov[pk] = o
	}
	if busy {
		o.n[0] += w
	}
	o.n[1] += w
	o.ok = false
}

// logBackground is the log rate (per nanosecond) of calls of kind ck that
// no request makes.
func (m *nodeModel) logBackground(ck int32) float64 {
	return math.Log(m.bg[ck]+0.5) - m.logSpan
}

// logBackgroundOf is the log likelihood (per nanosecond) of call c, of
// kind ck, being made by no request: its kind's rate, or where the kind's
// background has a rhythm, the renewal model's (periodic.go).
func (m *nodeModel) logBackgroundOf(c, ck int32) float64 {
	if v, ok := m.bgCall[c]; ok {
		return v
	}
	return m.logBackground(ck)
}

func addSize(mm map[int32]map[int64]float64, k int32, b int64) {
	if b < 0 {
		return
	}
	s := mm[k]
	if s == nil {
		s = make(map[int64]float64)
		mm[k] = s
	}
	s[b]++
}

func (m *nodeModel) sizeKey(prev, next, pk int32) sKey {
	if next != endKind {
		pk = 0
	}
	return sKey{prev, next, pk}
}

// addSizeLink records the size difference of one link.
func (m *nodeModel) addSizeLink(prev, next, pk int32, delta int64, w float64) {
	k := m.sizeKey(prev, next, pk)
	s := m.size[k]
	if s == nil {
		s = &sizeLink{link: make(map[int64]float64)}
		m.size[k] = s
	}
	s.add(delta, w)
}

// finishSizes decides which size relations are informative: those whose
// links gain on average more than 0.3 nats over unrelated messages.
func (m *nodeModel) finishSizes() {
	for k, s := range m.size {
		s.decide(func(d int64) float64 { return m.sizeLR(k, s, d) })
	}
}

// decide resets the relation's cache and marks it informative when it
// has at least 5 links and they gain on average more than 0.3 nats (lr:
// a difference's log likelihood ratio) over unrelated messages.
func (s *sizeLink) decide(lr func(delta int64) float64) {
	s.cache = make(map[int64]float64)
	if s.n < 5 {
		return
	}
	gain := 0.0
	for _, d := range slices.Sorted(maps.Keys(s.link)) {
		gain += s.link[d] * lr(d)
	}
	s.informative = gain/s.n > 0.3
}

func (m *nodeModel) sizeLR(k sKey, s *sizeLink, delta int64) float64 {
	if v, ok := s.cache[delta]; ok {
		return v
	}
	nt, nk := nextTab(k.next, k.pk)
	return s.lr(delta, m.randDeltaOf(tabRet, k.prev, nt, nk, delta))
}

// unseenWeight is the weight κ of chance in the relation's smoothing
// (lr): such that a difference no link showed gets κ/(n+κ) of the mass,
// Good and Turing's estimate of how often a link shows a difference not
// seen before, the share n1/n of links whose difference was seen once;
// at least 2, and chance alone when no difference was seen twice.
//
// The differences are learnt from the engine's own assignment, each
// exact to the byte. With a fixed κ of 2, a relation that is loose (a
// page's size that depends on the reply before it, plus a length that
// varies) gave a difference seen on none of the other half's links
// (cross-fitting) log(2/(n+2)), about −5.5 nats at n = 500, so the search
// preferred the links whose differences it had learnt, and learnt them
// again: on the testbed's sniffed application tier at 16 requests in
// flight, the model fitted on the engine's answer took 266 of its 1,725
// calls wrong where the same model with the size relations fitted on the
// truth took 146 (TestDiagnose, WIREPATH_DIAG_SWAP). A relation that is
// exact (one difference, repeated) keeps κ = 2.
//
// The links' weights are summed in the order of their differences (the
// soft assignments make them fractional: in Go's map order the last bits
// would change from run to run), once while no link is added (add).
func (s *sizeLink) unseenWeight() float64 {
	if s.kappa > 0 {
		return s.kappa
	}
	n1 := 0.0
	for _, d := range slices.Sorted(maps.Keys(s.link)) {
		if v := s.link[d]; v < 1.5 {
			n1 += v
		}
	}
	if s.n-n1 < 1 {
		s.kappa = 1e9
	} else {
		s.kappa = max(2, n1*s.n/(s.n-n1))
	}
	return s.kappa
}

// lr caches and returns the log likelihood ratio of difference delta on
// the relation's links against its probability r between unrelated
// messages (0 when r is 0), smoothed towards r.
func (s *sizeLink) lr(delta int64, r float64) float64 {
	v := 0.0
	if r > 0 {
		kappa := s.unseenWeight()
		v = math.Log((s.link[delta]+kappa*r)/(s.n+kappa)) - math.Log(r)
	}
	s.cache[delta] = v
	return v
}

// logSize returns the log likelihood ratio of a size difference delta
// between the last reply (of kind prev) a request received and its next
// message (next, or its reply for endKind), 0 when the relation is not
// informative.
func (m *nodeModel) logSize(prev, next, pk int32, delta int64) float64 {
	s := m.size[m.sizeKey(prev, next, pk)]
	if s == nil || !s.informative {
		return 0
	}
	return m.sizeLR(m.sizeKey(prev, next, pk), s, delta)
}

// The token evidence is binned by the IDF weight of the tokens a call
// shares with its candidate request, and apart from it, of those it
// shares with the request's other calls only (tokFeature): tokBins0 bins
// each, tokBins in all.
const (
	tokBins0 = 5
	tokBins  = tokBins0 * tokBins0
)

func tokBin(score float64) int {
	switch {
	case score <= 0:
		return 0
	case score <= 3:
		return 1
	case score <= 6:
		return 2
	case score <= 10:
		return 3
	}
	return 4
}

// fifoBins is the number of bins of the FIFO evidence (search.fifoBins).
const fifoBins = 4

// fifoInformative reports whether the FIFO evidence can change a score.
func (m *nodeModel) fifoInformative() bool { return m.fifo.nl >= 1 && m.fifo.no >= 1 }

// logFIFO is the log likelihood ratio of FIFO bin b (-1: none).
func (m *nodeModel) logFIFO(b int8) float64 {
	if b < 0 {
		return 0
	}
	return m.fifoWeight() * m.fifo.logLR(int(b))
}
