package frames

import (
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// Matcher is the per-record matcher, for the allocation test.
type Matcher struct{ m *matcher }

// NewMatcherForTest returns a matcher of t's messages.
func NewMatcherForTest(t *trace.Trace) Matcher { return Matcher{newMatcher(t, Options{})} }

// Match matches one record.
func (m Matcher) Match(rec *pcapio.Record) { m.m.match(rec) }
