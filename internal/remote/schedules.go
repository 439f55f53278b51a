package remote

import (
	"context"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/schedule"
)

// Schedules is the nodes' schedules as the hub's schedule.Runner reaches
// them: each asked of its node (cluster.Hub.NodeSchedules).
func (h *Hub) Schedules() schedule.Remote { return hubSchedules{hub: h.hub} }

type hubSchedules struct{ hub *cluster.Hub }

func (s hubSchedules) Machines(ctx context.Context) ([]string, error) {
	nodes, err := s.hub.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out, nil
}

func (s hubSchedules) Ask(ctx context.Context, machine string, req []byte) ([]byte, error) {
	return s.hub.NodeSchedules(ctx, machine, req)
}

func (hubSchedules) ThreadID(machine string, local chat.ThreadID) chat.ThreadID {
	return cluster.RemoteID(machine, local)
}

func (hubSchedules) SplitThread(id chat.ThreadID) (string, chat.ThreadID, bool) {
	return cluster.SplitRemoteID(id)
}
