package client

import (
	"context"
	"net/url"

	"github.com/parleyhq/parley/internal/sessions"
)

// Sessions lists the agents' own sessions (GET /api/sessions): f.Machine
// one machine's, f.All with those parley's threads hold.
func (a API) Sessions(ctx context.Context, f sessions.Filter) (sessions.Listing, error) {
	q := url.Values{}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.Machine != "" {
		q.Set("machine", f.Machine)
	}
	if f.All {
		q.Set("all", "true")
	}
	path := "/api/sessions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l sessions.Listing
	err := a.get(ctx, path, &l)
	return l, err
}
