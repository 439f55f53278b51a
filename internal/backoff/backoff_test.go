package backoff

import (
	"testing"
	"time"
)

// Each caller's curve, pinned: the numbers are the ones the five hand-written
// curves gave before this package (the old formulas are kept below and
// compared over many attempts and jitter draws).
func TestCallersCurves(t *testing.T) {
	t.Parallel()
	const ms, s = time.Millisecond, time.Second
	cases := []struct {
		name  string
		p     Policy
		old   func(attempt int, r float64) time.Duration
		want  []time.Duration // at attempt 0, 1, …, with the jitter's lowest draw
		slack time.Duration
	}{
		{"plugin restart (channel/plugin: fails-1)",
			Policy{Min: 500 * ms, Max: 30 * s, Jitter: Jitter{Low: 0.8, Width: 0.4}}, oldPlugin(500*ms, 30*s),
			[]time.Duration{400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 24 * s, 24 * s}, 0},
		{"push send (push: attempts-1)",
			Policy{Min: s, Max: 10 * time.Minute}, shifted(oldPushSend),
			[]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s, 512 * s, 600 * s, 600 * s}, 0},
		{"push store retry (push: passes-1)",
			Policy{Min: s, Max: time.Minute}, shifted(oldPushRetry),
			[]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}, 0},
		{"cluster link (cluster: attempts)",
			Policy{Min: 500 * ms, Max: 30 * s, Jitter: Jitter{Low: 0.5, Width: 0.5}}, oldLink,
			[]time.Duration{250 * ms, 500 * ms, s, 2 * s, 4 * s, 8 * s, 15 * s, 15 * s}, 1},
		{"cluster input redelivery (cluster: deliveries-1)",
			Policy{Min: 100 * ms, Max: 5 * s}, shifted(oldInputStep),
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5 * s, 5 * s}, 0},
		{"client follow (client: attempt-1)",
			Policy{Min: 200 * ms, Max: 3 * s}, oldFollow(200*ms, 3*s),
			[]time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3 * s, 3 * s}, 0},
	}
	for _, c := range cases {
		for i, w := range c.want {
			if got := c.p.at(i, 0); got != w {
				t.Errorf("%s: attempt %d waits %v, want %v", c.name, i, got, w)
			}
		}
		for i := range 80 {
			for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
				// The link drew its jitter as whole nanoseconds (rand.N): 1ns of rounding.
				if got, want := c.p.at(i, r), c.old(i, r); got < want-c.slack || got > want+c.slack {
					t.Errorf("%s: attempt %d draw %v waits %v, the old curve %v", c.name, i, r, got, want)
				}
			}
		}
	}
}

// A follower configured with its first wait above its cap waits that first
// wait once, then the cap: as client.Follow and the plugin host always did.
func TestMinAboveMax(t *testing.T) {
	t.Parallel()
	p := Policy{Min: 5 * time.Second, Max: time.Second}
	for i, want := range []time.Duration{5 * time.Second, time.Second, time.Second} {
		if got := p.Delay(i); got != want {
			t.Errorf("attempt %d: %v, want %v", i, got, want)
		}
	}
	if got := p.Delay(-3); got != 5*time.Second {
		t.Errorf("a negative attempt waits %v, want the first wait", got)
	}
}

// Delay's jitter stays within its spread.
func TestDelayJitterBounds(t *testing.T) {
	t.Parallel()
	p := Policy{Min: time.Second, Max: time.Minute, Jitter: Jitter{Low: 0.5, Width: 0.5}}
	for range 1000 {
		if d := p.Delay(3); d < 4*time.Second || d >= 8*time.Second {
			t.Fatalf("Delay(3) = %v, want within [4s, 8s)", d)
		}
	}
}

// A Max near the largest duration never overflows the doubling.
func TestHugeMax(t *testing.T) {
	t.Parallel()
	p := Policy{Min: time.Second, Max: time.Duration(1<<63 - 1)}
	prev := time.Duration(0)
	for i := range 100 {
		d := p.Delay(i)
		if d < prev {
			t.Fatalf("attempt %d waits %v, less than attempt %d's %v", i, d, i-1, prev)
		}
		prev = d
	}
}

// The old curves, as written in their packages before, with the jitter's
// draw given: rand.Float64 for the plugin; for the link, rand.N(d/2+1) is
// taken as r·(d/2), the same draw up to a nanosecond's rounding.

func oldPlugin(min, max time.Duration) func(int, float64) time.Duration {
	return func(fails int, r float64) time.Duration {
		d := min
		for range fails {
			d *= 2
			if d >= max {
				d = max
				break
			}
		}
		j := 0.8 + 0.4*r
		return time.Duration(float64(d) * j)
	}
}

func oldPushSend(n int) time.Duration {
	d := time.Second << min(n-1, 20)
	return min(d, 10*time.Minute)
}

func oldPushRetry(n int) time.Duration {
	return min(time.Second<<min(max(n-1, 0), 6), time.Minute)
}

func oldLink(attempts int, r float64) time.Duration {
	d := 500 * time.Millisecond << min(attempts, 6)
	d = min(d, 30*time.Second)
	return d/2 + time.Duration(float64(d/2)*r)
}

// oldInputStep with its caller's cap (inputs.go: min(backoffStep(n), 5s)).
func oldInputStep(tries int) time.Duration {
	return min(100*time.Millisecond<<min(max(tries-1, 0), 10), 5*time.Second)
}

// oldFollow is client.Follow's wait after its attempt-th failed dial in a row.
func oldFollow(minB, maxB time.Duration) func(int, float64) time.Duration {
	return func(i int, _ float64) time.Duration {
		backoff := minB
		for range i {
			backoff = min(backoff*2, maxB)
		}
		return backoff
	}
}

// shifted adapts an old curve counted from 1 to attempts counted from 0.
func shifted(f func(int) time.Duration) func(int, float64) time.Duration {
	return func(i int, _ float64) time.Duration { return f(i + 1) }
}
