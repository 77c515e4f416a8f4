package assembly

import (
	"math"
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
	lvl      uint8
	pk, prev int32
	pos, ret uint8
}

type gKey struct {
	lvl            uint8
	pk, prev, next int32
	ret            uint8
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
}

// nodeModel is everything learnt about one node: its call graph (which
// kinds of calls each kind of request makes, in which order, serial or
// parallel), the delays before each call and each reply, how often each
// kind of call is made by no request, and the likelihood ratios of the
// size, token, request-id and thread evidence.
type nodeModel struct {
	trans   map[tKey]*dist
	gaps    map[gKey]*hist
	ov      map[int32]*[2]float64
	bg      map[int32]float64
	nKinds  int // distinct child kinds at the node, for the uniform prior
	logSpan float64

	size     map[sKey]*sizeLink
	retSizes map[int32]map[int64]float64 // child kind -> reply sizes
	reqSizes map[int32]map[int64]float64 // child kind -> request sizes
	repSizes map[int32]map[int64]float64 // parent kind -> reply sizes

	tok, rid, thr lrTable

	// kappaT is the weight of each level's prior in the call graph: large
	// in the first passes, whose assignments are poor.
	kappaT float64

	tcache map[tcKey]float64
	gcache map[gKey]*[nGapBins]float64
}

func newNodeModel(nKinds int, span float64) *nodeModel {
	return &nodeModel{
		trans:    make(map[tKey]*dist),
		gaps:     make(map[gKey]*hist),
		ov:       make(map[int32]*[2]float64),
		bg:       make(map[int32]float64),
		nKinds:   nKinds,
		logSpan:  math.Log(math.Max(span, 1e9)),
		size:     make(map[sKey]*sizeLink),
		retSizes: make(map[int32]map[int64]float64),
		reqSizes: make(map[int32]map[int64]float64),
		repSizes: make(map[int32]map[int64]float64),
		tok:      newLR(tokBins),
		rid:      newLR(2),
		thr:      newLR(2),
		kappaT:   kappaTrans,
		tcache:   make(map[tcKey]float64),
		gcache:   make(map[gKey]*[nGapBins]float64),
	}
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
		{lvl: 0, pk: c.pk, prev: c.prev, next: next, ret: c.ret},
		{lvl: 1, prev: c.prev, next: next, ret: c.ret},
		{lvl: 2, next: next},
		{lvl: 3},
	}
}

// observe records one event of a request: its next call (or endKind) in
// context c after a delay of gap, with weight w.
func (m *nodeModel) observe(c ctxKey, next int32, gap int64, w float64) {
	for _, k := range c.transKeys() {
		d := m.trans[k]
		if d == nil {
			d = &dist{}
			m.trans[k] = d
		}
		d.add(next, w)
	}
	b := gapBin(gap)
	for _, k := range c.gapKeys(next) {
		h := m.gaps[k]
		if h == nil {
			h = &hist{}
			m.gaps[k] = h
		}
		h.add(b, w)
	}
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
		p = (d.c[next] + m.kappaT*p) / (d.n + m.kappaT)
	}
	v := math.Log(p)
	m.tcache[ck] = v
	return v
}

// logGap returns the log density of a delay of gap before next in
// context c.
func (m *nodeModel) logGap(c ctxKey, next int32, gap int64) float64 {
	keys := c.gapKeys(next)
	d := m.gcache[keys[0]]
	if d == nil {
		mass := priorMass
		for i := len(keys) - 1; i >= 0; i-- {
			mass = mixMass(m.gaps[keys[i]], &mass)
		}
		d = logDensity(&mass)
		m.gcache[keys[0]] = d
	}
	return d[gapBin(gap)]
}

// logOverlap returns the log probability that a request of kind pk sends
// a call while one of its calls is outstanding (busy) or not.
func (m *nodeModel) logOverlap(pk int32, busy bool) float64 {
	o := m.ov[pk]
	if o == nil {
		return math.Log(0.5)
	}
	if busy {
		return math.Log((o[0] + 0.5) / (o[1] + 1))
	}
	return math.Log((o[1] - o[0] + 0.5) / (o[1] + 1))
}

func (m *nodeModel) addOverlap(pk int32, busy bool, w float64) {
	o := m.ov[pk]
	if o == nil {
		o = new([2]float64)
		m.ov[pk] = o
	}
	if busy {
		o[0] += w
	}
	o[1] += w
}

// logBackground is the log rate (per nanosecond) of calls of kind ck that
// no request makes.
func (m *nodeModel) logBackground(ck int32) float64 {
	return math.Log(m.bg[ck]+0.5) - m.logSpan
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

// randDelta is the probability of a difference delta between a reply of
// kind prev and a message of the sizes next, for unrelated messages.
func randDelta(prev, next map[int64]float64, delta int64) float64 {
	var np, nn float64
	for _, v := range prev {
		np += v
	}
	for _, v := range next {
		nn += v
	}
	if np == 0 || nn == 0 {
		return 0
	}
	p := 0.0
	for x, v := range prev {
		p += v * next[x+delta]
	}
	return p / (np * nn)
}

func (m *nodeModel) sizeKey(prev, next, pk int32) sKey {
	if next != endKind {
		pk = 0
	}
	return sKey{prev, next, pk}
}

func (m *nodeModel) nextSizes(k sKey) map[int64]float64 {
	if k.next == endKind {
		return m.repSizes[k.pk]
	}
	return m.reqSizes[k.next]
}

// addSizeLink records the size difference of one link.
func (m *nodeModel) addSizeLink(prev, next, pk int32, delta int64, w float64) {
	k := m.sizeKey(prev, next, pk)
	s := m.size[k]
	if s == nil {
		s = &sizeLink{link: make(map[int64]float64)}
		m.size[k] = s
	}
	s.link[delta] += w
	s.n += w
}

// finishSizes decides which size relations are informative: those whose
// links gain on average more than 0.3 nats over unrelated messages.
func (m *nodeModel) finishSizes() {
	for k, s := range m.size {
		s.cache = make(map[int64]float64)
		if s.n < 5 {
			continue
		}
		gain := 0.0
		for d, v := range s.link {
			gain += v * m.sizeLR(k, s, d)
		}
		s.informative = gain/s.n > 0.3
	}
}

func (m *nodeModel) sizeLR(k sKey, s *sizeLink, delta int64) float64 {
	if v, ok := s.cache[delta]; ok {
		return v
	}
	r := randDelta(m.retSizes[k.prev], m.nextSizes(k), delta)
	v := 0.0
	if r > 0 {
		const kappa = 2
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
// shares with its candidate request.
const tokBins = 5

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
