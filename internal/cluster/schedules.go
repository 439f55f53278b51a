package cluster

// The schedules request: the hub asks a node's schedule Runner to list,
// add, pause, resume or remove its schedules (internal/schedule's
// Request and Answer, carried as they are: a node keeps and runs its own
// schedules, the hub keeps none of them).

import "context"

// schedulesSubject is where the hub asks node about its schedules.
func schedulesSubject(node string) string { return ToSubject(node) + ".schedules" }

// ServeSchedules answers the hub's schedules requests with serve (this
// machine's schedule.Runner.Serve). It lasts as long as the link.
func (l *Link) ServeSchedules(serve func(ctx context.Context, req []byte) []byte) error {
	return l.servePart(schedulesSubject(l.opt.Node), "schedules", serve)
}

// NodeSchedules sends node a schedules request and returns its answer. A
// node that nothing answers for is chat.ErrAway, saying so.
func (h *Hub) NodeSchedules(ctx context.Context, node string, req []byte) ([]byte, error) {
	return h.askPart(ctx, node, schedulesSubject(node), "schedules", req)
}
