package cluster

// The node's end of the changes request (hub_changes.go is the other end).

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/gitwork"
)

// ServeChanges answers the hub's changes requests with read (this machine's
// thread's change, from its store and working tree). It lasts as long as
// the link.
func (l *Link) ServeChanges(read func(context.Context, chat.ThreadID, gitwork.Query) (gitwork.Changes, error)) error {
	return l.serveHub(changesSubject(l.opt.Node), func(m *nats.Msg) {
		var req changesRequest
		var ans changesAnswer
		var b []byte
		if err := json.Unmarshal(m.Data, &req); err != nil {
			ans.Error = "a changes request must be JSON"
		} else {
			// A page JSON makes too large for one message is asked smaller.
			for page := gitwork.PageBytes; ; page /= 2 {
				ctx, cancel := context.WithTimeout(context.Background(), sourceTimeout)
				c, err := read(ctx, req.Thread, gitwork.Query{Path: req.Path, Offset: req.Offset, PageBytes: page})
				cancel()
				ans = changesAnswer{}
				switch {
				case errors.Is(err, chat.ErrNotFound):
					ans.Code, ans.Error = chat.CodeNotFound, err.Error()
				case err != nil:
					ans.Code, ans.Error = gitwork.CodeOf(err), err.Error()
				default:
					ans.Changes = &c
				}
				b, _ = json.Marshal(ans)
				if len(b) <= maxChangesAnswer || page < 4096 {
					break
				}
			}
		}
		if b == nil {
			b, _ = json.Marshal(ans)
		}
		if err := m.Respond(b); err != nil {
			l.log.Warn("cluster: answer a changes request", "err", err)
		}
	})
}
