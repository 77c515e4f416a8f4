package assembly

// The origin relation: the size of a request's own message (its CALL as
// it arrived at the node) against the size of each message it sends (a
// call, or its reply). A service that passes part of its request on (a
// key in the URL becomes a cache key, a query becomes a query) sends
// calls whose sizes move with its request's: GET /item/7 asks for
// item:7, GET /item/12 for item:12, GET /cart?user=u14 for cart:u14. The
// difference of the two sizes is then nearly constant per (request kind,
// call kind) on the true links and spread out between unrelated
// messages. Learnt as the size relations are (sizeLink): a histogram of
// the differences on the links, weighed against what unrelated messages
// of those kinds give, and used only where it gains more than 0.3 nats a
// link on average (finishOrigin).

// oKey names one origin relation: a request kind and what it sends (a
// call kind, or endKind for its reply).
type oKey struct{ pk, next int32 }

// addOriginLink records the difference between the size of what a
// request of kind pk sent (next) and its own size on one link.
func (m *nodeModel) addOriginLink(pk, next int32, delta int64, w float64) {
	k := oKey{pk, next}
	s := m.origin[k]
	if s == nil {
		s = &sizeLink{link: make(map[int64]float64)}
		m.origin[k] = s
	}
	s.add(delta, w)
}

// originLR returns the log likelihood ratio of difference delta in
// relation k: on links against between unrelated messages.
func (m *nodeModel) originLR(k oKey, s *sizeLink, delta int64) float64 {
	if v, ok := s.cache[delta]; ok {
		return v
	}
	nt, nk := nextTab(k.next, k.pk)
	return s.lr(delta, m.randDeltaOf(tabArr, k.pk, nt, nk, delta))
}

// finishOrigin decides which origin relations are informative, as
// finishSizes does.
func (m *nodeModel) finishOrigin() {
	for k, s := range m.origin {
		s.decide(func(d int64) float64 { return m.originLR(k, s, d) })
	}
}

// logOrigin returns the log likelihood ratio of a request of kind pk
// whose own message was reqBytes sending a message of kind next (endKind:
// its reply) of nextBytes; 0 when a size is unknown or the relation is
// not informative.
func (m *nodeModel) logOrigin(pk, next int32, reqBytes, nextBytes int64) float64 {
	if reqBytes < 0 || nextBytes < 0 {
		return 0
	}
	k := oKey{pk, next}
	s := m.origin[k]
	if s == nil || !s.informative {
		return 0
	}
	return m.originLR(k, s, nextBytes-reqBytes)
}

// observeOrigin records the origin link of request pc sending nextBytes
// (a call of kind next, or its reply).
func (m *nodeModel) observeOrigin(pc *call, next int32, nextBytes int64, w float64) {
	if pc.reqBytes >= 0 && nextBytes >= 0 {
		m.addOriginLink(pc.kind, next, nextBytes-pc.reqBytes, w)
	}
}
