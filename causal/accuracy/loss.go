package accuracy

import (
	"context"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
)

// LossPoint is one loss rate of a loss sweep (LossSweep), for one engine:
// what a sniffer's loss costs beyond the requests that lost a message.
type LossPoint struct {
	// Rate is the probability that the sniffer lost each message.
	Rate float64
	// Requests are the path instances; Lost those that lost a message
	// (none of them can be right); Right those an inferred instance
	// matches exactly, and RightNoLoss the same without loss.
	Requests, Lost, Right, RightNoLoss int
	// Spoiled are the requests right without loss that lost nothing and
	// are wrong with it: the damage a loss does to other requests.
	// Healed are the reverse.
	Spoiled, Healed int
}

// LostShare is the share of the requests that lost a message: the most
// a loss that stays local may add to the wrong requests.
func (p LossPoint) LostShare() float64 { return frac(p.Lost, p.Requests) }

// WrongRise is how much the share of wrong requests rose with the loss.
func (p LossPoint) WrongRise() float64 { return frac(p.RightNoLoss-p.Right, p.Requests) }

func frac(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// LossSweep runs the engine on cfgName shortened to dur, without loss and
// with the sniffer losing each message with each of rates (gen's random
// loss, which draws from a stream of its own: the paths are the same at
// every rate), and compares the runs request by request.
func LossSweep(ctx context.Context, cfgName string, dur time.Duration, rates []float64, eng Engine) ([]LossPoint, error) {
	run := func(rate float64) (*Run, error) {
		return Do(ctx, Case{Config: cfgName, Duration: dur, Edit: func(c *gen.Config) { c.Drop = gen.Drop{Random: rate} }}, eng)
	}
	base, err := run(0)
	if err != nil {
		return nil, err
	}
	var out []LossPoint
	for _, rate := range rates {
		r := base
		if rate > 0 {
			if r, err = run(rate); err != nil {
				return nil, err
			}
		}
		out = append(out, comparePerRequest(rate, base, r))
	}
	return out, nil
}

// comparePerRequest compares two runs on traces of the same paths.
func comparePerRequest(rate float64, base, r *Run) LossPoint {
	tr := r.Out.Truth
	lost := make([]bool, tr.NumInstances())
	for i, o := range tr.Observed {
		if o < 0 {
			lost[tr.Instance[i]] = true
		}
	}
	p := LossPoint{Rate: rate, Requests: len(lost)}
	was, now := base.Score.Matched, r.Score.Matched
	for i := range lost {
		if now[i] {
			p.Right++
		}
		if was[i] {
			p.RightNoLoss++
		}
		switch {
		case lost[i]:
			p.Lost++
		case was[i] && !now[i]:
			p.Spoiled++
		case !was[i] && now[i]:
			p.Healed++
		}
	}
	return p
}
