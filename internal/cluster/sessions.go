package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/sessions"
)

// sessionsSubject is where the hub asks node for its agents' own sessions
// (parley sessions at the hub): a request with a sessions.Filter, answered
// with a sessionsAnswer.
func sessionsSubject(node string) string { return ToSubject(node) + ".sessions" }

// sessionsAnswer is a node's answer to a sessions request.
type sessionsAnswer struct {
	Sessions []sessions.Session `json:"sessions"`
	Error    string             `json:"error,omitempty"`
}

// maxSessionsAnswer bounds what the hub takes of a node's list (NATS
// carries at most 8 MiB a message); the node cuts its newest-first list to it.
const maxSessionsAnswer = 4 << 20

// ServeSessions answers the hub's sessions requests with list (this
// machine's sessions.Index). It lasts as long as the link.
func (l *Link) ServeSessions(list func(context.Context, sessions.Filter) ([]sessions.Session, error)) error {
	_, err := l.nc.Subscribe(sessionsSubject(l.opt.Node), func(m *nats.Msg) {
		if !strings.HasPrefix(m.Reply, hubInbox+".") {
			return // only the hub asks
		}
		var ans sessionsAnswer
		var f sessions.Filter
		if err := json.Unmarshal(m.Data, &f); err != nil {
			ans.Error = "a sessions request must be JSON"
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), sourceTimeout)
			f.Machine = "" // this machine's, whatever the hub's filter named
			ans.Sessions, err = list(ctx, f)
			cancel()
			if err != nil {
				ans.Error = err.Error()
			}
		}
		b, _ := json.Marshal(ans)
		for len(b) > maxSessionsAnswer && len(ans.Sessions) > 0 {
			ans.Sessions = ans.Sessions[:len(ans.Sessions)/2]
			b, _ = json.Marshal(ans)
		}
		if err := m.Respond(b); err != nil {
			l.log.Warn("cluster: answer a sessions request", "err", err)
		}
	})
	return err
}

// NodeSessions asks node for its agents' own sessions, each named by node
// (a node speaks only for itself). ErrNodeOffline: nothing answers for it.
func (h *Hub) NodeSessions(ctx context.Context, node string, f sessions.Filter) ([]sessions.Session, error) {
	b, _ := json.Marshal(f)
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	m, err := h.nc.RequestWithContext(ctx, sessionsSubject(node), b)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("%w: %s", ErrNodeOffline, node)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: ask machine %s for its sessions: %w", node, err)
	}
	var ans sessionsAnswer
	if err := json.Unmarshal(m.Data, &ans); err != nil {
		return nil, fmt.Errorf("cluster: machine %s answered something that is not JSON", node)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("machine %s: %s", node, ans.Error)
	}
	for i := range ans.Sessions {
		ans.Sessions[i].Node, ans.Sessions[i].Path = node, ""
	}
	return ans.Sessions, nil
}
