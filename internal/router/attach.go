package router

import (
	"context"

	"github.com/parleyhq/parley/internal/chat"
)

// Attach makes a route show an existing thread (an editor attaching to a hosted
// thread with `parley acp --thread`). Every connection on the route is switched.
func (r *Router) Attach(ctx context.Context, from chat.RouteKey, id chat.ThreadID) error {
	return r.call(ctx, func() error {
		if _, err := r.store.Thread(ctx, id); err != nil {
			return err
		}
		return r.attach(ctx, from, id)
	})
}
