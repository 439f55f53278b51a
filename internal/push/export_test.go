package push

import (
	"context"
	"net/netip"
)

// WithLookup makes opt resolve an endpoint's host at subscription with
// lookup: a DNS answer that changes before the dial.
func WithLookup(opt Options, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) Options {
	opt.lookup = lookup
	return opt
}

// Wake makes the sender look at the outbox now.
func (s *Service) Wake() { s.wake() }
