package score

import "math"

// Calibration says whether an engine's stated confidences mean what they
// say: of the links (and requests) given a confidence of about p, a share
// p should be right. It is measured where the result states a confidence
// per link (an engine's own requests: the assembly engine).
type Calibration struct {
	// Links are the calls the result gave a parent call, each with the
	// confidence of that link, right when the parent is the true one.
	Links Reliability `json:"links"`
	// JointLinks are those of Links decided by the joint assignment
	// (evidence joint-timing or tokens): the links that are inferred, not
	// read from the trace.
	JointLinks Reliability `json:"joint_links"`
	// Requests are the true requests (background ones excluded) whose
	// every message the trace holds (a request the captures lost part of
	// cannot be right, whatever the engine could know), each with the
	// confidence of the result's request that holds its root call, right
	// when its whole call tree is (Requests.Right).
	Requests Reliability `json:"requests"`
}

// Reliability is a reliability diagram of stated confidences against
// outcomes, with its summary figures.
type Reliability struct {
	// N counts the cases, Right those right.
	N     int `json:"n"`
	Right int `json:"right"`
	// MeanConfidence is the mean stated confidence; Share the share right.
	// A confidence that means what it says has the two equal, and so in
	// every bin.
	MeanConfidence float64 `json:"mean_confidence"`
	Share          float64 `json:"share"`
	// Brier is the mean squared difference between the stated confidence
	// and the outcome (1 right, 0 wrong): 0 is perfect, 0.25 a coin's.
	Brier float64 `json:"brier"`
	// ECE is the expected calibration error: the mean, over the bins
	// weighted by their cases, of |mean confidence − share right|.
	ECE float64 `json:"ece"`
	// Overconfidence is the same mean of (mean confidence − share right)
	// over the bins that state more than they get right.
	Overconfidence float64 `json:"overconfidence"`
	// Bins are the non-empty bins of stated confidence (ReliabilityEdges).
	Bins []ReliabilityBin `json:"bins,omitempty"`
}

// ReliabilityBin is the cases whose stated confidence lies in [Lo, Hi)
// (the last bin holds 1).
type ReliabilityBin struct {
	Lo             float64 `json:"lo"`
	Hi             float64 `json:"hi"`
	N              int     `json:"n"`
	Right          int     `json:"right"`
	MeanConfidence float64 `json:"mean_confidence"`
	Share          float64 `json:"share"`
}

// ReliabilityEdges are the bins' edges: tenths, with the top tenth split
// where confident links gather (0.95, 0.99, and 1 itself apart: the
// exact links).
var ReliabilityEdges = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999999, 1}

// ReliabilityCounter accumulates cases for a Reliability.
type ReliabilityCounter struct {
	n, right []int
	sumConf  []float64
	brier    float64
}

// Add counts one case: a stated confidence p (clamped to [0,1]; NaN
// counts as 0) and whether it was right.
func (c *ReliabilityCounter) Add(p float64, right bool) {
	if c.n == nil {
		nb := len(ReliabilityEdges) - 1
		c.n, c.right, c.sumConf = make([]int, nb), make([]int, nb), make([]float64, nb)
	}
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	p = min(p, 1)
	b := binOf(p)
	c.n[b]++
	c.sumConf[b] += p
	o := 0.0
	if right {
		c.right[b]++
		o = 1
	}
	c.brier += (p - o) * (p - o)
}

// binOf returns the bin of confidence p in [0,1].
func binOf(p float64) int {
	last := len(ReliabilityEdges) - 2
	for b := 0; b < last; b++ {
		if p < ReliabilityEdges[b+1] {
			return b
		}
	}
	return last
}

// Reliability returns the figures of the cases counted.
func (c *ReliabilityCounter) Reliability() Reliability {
	var r Reliability
	var sumConf float64
	for b := range c.n {
		if c.n[b] == 0 {
			continue
		}
		bin := ReliabilityBin{Lo: ReliabilityEdges[b], Hi: ReliabilityEdges[b+1], N: c.n[b], Right: c.right[b],
			MeanConfidence: c.sumConf[b] / float64(c.n[b]), Share: rate(c.right[b], c.n[b])}
		r.Bins = append(r.Bins, bin)
		r.N += bin.N
		r.Right += bin.Right
		sumConf += c.sumConf[b]
	}
	if r.N == 0 {
		return r
	}
	n := float64(r.N)
	r.MeanConfidence, r.Share, r.Brier = sumConf/n, rate(r.Right, r.N), c.brier/n
	for _, b := range r.Bins {
		gap := b.MeanConfidence - b.Share
		r.ECE += float64(b.N) / n * math.Abs(gap)
		if gap > 0 {
			r.Overconfidence += float64(b.N) / n * gap
		}
	}
	return r
}
