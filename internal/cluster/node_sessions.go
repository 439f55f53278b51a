package cluster

// The node's end of the sessions request: its agents' own sessions, from
// its sessions.Index, to the hub that asks (hub_sessions.go is the other end).

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/sessions"
)

// ServeSessions answers the hub's sessions requests with list (this
// machine's sessions.Index). It lasts as long as the link.
func (l *Link) ServeSessions(list func(context.Context, sessions.Filter) ([]sessions.Session, error)) error {
	return l.serveHub(sessionsSubject(l.opt.Node), func(m *nats.Msg) {
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
}
