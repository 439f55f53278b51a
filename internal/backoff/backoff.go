// Package backoff is the one retry curve parley waits by: a wait that grows
// by a factor from a first value up to a cap, with optional jitter. Each
// caller keeps its own numbers (Policy); the arithmetic is written once.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is a retry curve. The wait before retry number attempt (0 for the
// first) is Min·Factor^attempt, at most Max, then spread by Jitter. The first
// wait is Min even when Min exceeds Max.
type Policy struct {
	Min, Max time.Duration
	Factor   float64 // how much each attempt multiplies the wait; 0 means 2
	Jitter   Jitter  // the zero Jitter spreads nothing
}

// Jitter spreads a wait d uniformly over [d·Low, d·(Low+Width)), so clients
// retrying together do not knock together. The zero Jitter leaves d as it is.
type Jitter struct{ Low, Width float64 }

// Delay is the wait before retry number attempt (counted from 0; a negative
// attempt counts as 0).
func (p Policy) Delay(attempt int) time.Duration {
	r := 0.0
	if p.Jitter != (Jitter{}) {
		r = rand.Float64()
	}
	return p.at(attempt, r)
}

// at is Delay with the jitter's draw r in [0, 1) given.
func (p Policy) at(attempt int, r float64) time.Duration {
	factor := p.Factor
	if factor == 0 {
		factor = 2
	}
	d := p.Min
	for range max(attempt, 0) {
		// Compared before multiplying: a large Max never overflows d.
		if float64(d)*factor >= float64(p.Max) {
			d = p.Max
			break
		}
		d = time.Duration(float64(d) * factor)
	}
	if p.Jitter == (Jitter{}) {
		return d
	}
	return time.Duration(float64(d) * (p.Jitter.Low + p.Jitter.Width*r))
}
