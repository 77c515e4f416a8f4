package assembly

import (
	"context"
	"fmt"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// Infer assembles every request of the trace ms and returns them with
// the patterns they aggregate into.
func (e *Engine) Infer(ctx context.Context, ms trace.Messages) (*causal.Result, error) {
	res, _, err := e.infer(ctx, ms)
	return res, err
}

// infer is Infer that also returns the run, for tests.
func (e *Engine) infer(ctx context.Context, ms trace.Messages) (*causal.Result, *run, error) {
	return e.inferHook(ctx, ms, nil)
}

// inferHook is infer with a hook called after each pass of each node.
func (e *Engine) inferHook(ctx context.Context, ms trace.Messages, hook func(r *run, n int32, pass int)) (*causal.Result, *run, error) {
	agg := causal.NewAggregator(ms, e.opt.Aggregate)
	r := newRun(e.opt, ms, agg.Namer())
	if hook != nil {
		r.onPass = func(n int32, pass int) { hook(r, n, pass) }
	}
	if err := r.solve(ctx); err != nil {
		return nil, nil, err
	}
	reqs, tc := r.requests(agg)
	res := &causal.Result{
		Version:  causal.ResultVersion,
		Engine:   Name,
		Params:   e.opt.Params(),
		Trace:    causal.Summarize(ms),
		Patterns: agg.Patterns(e.opt.Rank),
		Requests: reqs,
	}
	res.RequestTypes = agg.RequestTypes()
	r.account(res, agg, tc)
	return res, r, nil
}

// account adds the run's counters and warnings to res. The messages
// balance: every message is in a request or had no timestamp.
func (r *run) account(res *causal.Result, agg *causal.Aggregator, tc treeCounts) {
	count := func(name string, v int64) {
		res.Accounting = append(res.Accounting, trace.Count{Stage: Name, Name: name, Value: v})
	}
	r.countMessages(count, tc)
	r.countLinks(count)
	sc := r.countSearch(count)
	count("cycles_broken", tc.cyclesBroken)
	count("depth_cut", tc.depthCut)
	count("requests", tc.requests-tc.background)
	count("background_trees", tc.background)
	count("requests_outside_window", tc.outside)
	count("unseen_messages", tc.unseenMsgs)
	count("instances_cut_at_unseen", tc.cut)
	count("instances_rejected", tc.rejected)
	_, nPat := agg.Len()
	count("patterns", int64(nPat))
	pc := &r.l.cnt
	if pc.kindsInferred > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the trace has no CALL/RETURN kinds: %d messages were taken for calls and returns from the endpoints' roles and their order", pc.kindsInferred))
	}
	if pc.returnFirst > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d replies are stamped before their calls (clocks disagree): paired anyway", pc.returnFirst))
	}
	if sc.decisions > sc.decisionsExact {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d of %d joint decisions were made by the beam search (windows too large to solve exactly)", sc.decisions-sc.decisionsExact, sc.decisions))
	}
}

// countFunc adds one named counter to a result's accounting.
type countFunc func(name string, v int64)

// countMessages counts the messages and how their calls and returns were
// paired.
func (r *run) countMessages(count countFunc, tc treeCounts) {
	pc := &r.l.cnt
	count("messages", pc.messages)
	count("messages_no_timestamp", pc.noTime)
	count("messages_in_requests", tc.inRequests)
	count("calls_messages", pc.calls)
	count("returns_messages", pc.returns)
	count("one_way_messages", pc.oneWay)
	count("kinds_inferred", pc.kindsInferred)
	count("paired_by_call_id", pc.pairedByID)
	count("paired_by_stream", pc.pairedByStream)
	count("paired_by_ordinal", pc.pairedBySeq)
	count("paired_by_order", pc.pairedByOrder)
	count("unpaired_calls", pc.unpairedCalls)
	count("unpaired_returns", pc.unpairedReturn)
	count("returns_before_call", pc.returnFirst)
}

// countLinks counts the calls by the evidence that linked them.
func (r *run) countLinks(count countFunc) {
	var byEv [len(evidenceNames)]int64
	var noCand int64
	for c := range r.calls {
		byEv[r.evid[c]]++
		if r.evid[c] != evRoot && r.nCand[c] == 0 {
			noCand++
		}
	}
	count("calls", int64(len(r.calls)))
	count("calls_root", byEv[evRoot])
	count("calls_background", byEv[evBackground])
	count("calls_without_candidate", noCand)
	count("links_exact_id", byEv[evExactID])
	count("links_thread", byEv[evThread])
	count("links_only_candidate", byEv[evOnly])
	count("links_joint", byEv[evJoint]+byEv[evTokens])
}

// countSearch counts the passes, the clocks' tolerances, the matchings,
// the queues and the joint search's windows and decisions, and returns
// the search's counts summed over the nodes.
func (r *run) countSearch(count countFunc) searchCounts {
	var sc searchCounts
	var passes int64
	for n, s := range r.search {
		passes += int64(r.passes[n])
		sc.windows += s.windows
		sc.windowsExact += s.windowsExact
		sc.decisions += s.decisions
		sc.decisionsExact += s.decisionsExact
		sc.relaxed += s.relaxed
		sc.forcedCommits += s.forcedCommits
		sc.pruned += s.pruned
	}
	count("search_passes", passes)
	lo, hi, byFrom := r.tolCounts()
	count("clock_error_ns", hi)
	count("clock_error_min_ns", lo)
	count("clock_error_nodes_stated", byFrom[tolStated])
	count("clock_error_nodes_learnt", byFrom[tolLearnt])
	count("clock_error_nodes_pooled", byFrom[tolPooled])
	count("clock_error_nodes_fixed", byFrom[tolFixed])
	count("clock_error_certain_links", r.tols.links)
	r.countMatchings(count)
	count("windows", sc.windows)
	count("windows_exact", sc.windowsExact)
	count("decisions", sc.decisions)
	count("decisions_exact", sc.decisionsExact)
	count("hypotheses_pruned", sc.pruned)
	count("forced_commits", sc.forcedCommits)
	count("constraints_relaxed", sc.relaxed)
	return sc
}

// countMatchings counts the chain and single-call matchings, the last
// pass's second starts and the pools' queues tried and kept.
func (r *run) countMatchings(count countFunc) {
	ch := sumChainCounts(r.chains)
	count("chain_matchings", ch.tried)
	count("chain_matchings_kept", ch.kept)
	count("chain_solver_gave_up", ch.failed)
	count("chain_crossings", ch.crossings)
	count("chain_calls_moved", ch.changed)
	sg := sumChainCounts(r.singles)
	count("single_matchings", sg.tried)
	count("single_matchings_kept", sg.kept)
	count("single_solver_gave_up", sg.failed)
	count("single_calls_moved", sg.changed)
	r.countRestarts(count)
	r.countFIFOStarts(count)
	r.countKindMatches(count)
	r.countKindPairMatches(count)
	r.countUsualFills(count)
	var qc [3]int64
	for _, q := range r.queue {
		if q.tried {
			qc[0]++
		}
		if q.k > 0 {
			qc[1]++
			qc[2] += int64(q.waited)
		}
	}
	count("queues_tried", qc[0])
	count("queues_kept", qc[1])
	count("requests_queued", qc[2])
}
