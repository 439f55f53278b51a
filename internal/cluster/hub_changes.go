package cluster

// A node's thread's change (its git working tree is on the node): the hub
// asks, the node reads it with internal/gitwork and answers
// (node_changes.go is the other end).

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/gitwork"
)

// changesRequest asks for one page of a node's thread's change.
type changesRequest struct {
	Thread chat.ThreadID `json:"thread"`
	Path   string        `json:"path,omitempty"`
	Offset int           `json:"offset,omitempty"`
}

// changesAnswer is the node's answer: the change, or why not (Code is a
// gitwork code, or "not_found").
type changesAnswer struct {
	Changes *gitwork.Changes `json:"changes,omitempty"`
	Code    string           `json:"code,omitempty"`
	Error   string           `json:"error,omitempty"`
}

// maxChangesAnswer bounds a node's answer under NATS's 8 MiB: a page that
// JSON makes larger is cut smaller.
const maxChangesAnswer = 6 << 20

// NodeChanges asks node for its thread's change (thread is the node's own
// id). ErrNodeOffline: nothing answers for it.
func (h *Hub) NodeChanges(ctx context.Context, node string, thread chat.ThreadID, q gitwork.Query) (gitwork.Changes, error) {
	b, _ := json.Marshal(changesRequest{Thread: thread, Path: q.Path, Offset: q.Offset})
	data, err := h.askPartWithin(ctx, node, changesSubject(node), "changes", sourceTimeout, b)
	if err != nil {
		return gitwork.Changes{}, err
	}
	var ans changesAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return gitwork.Changes{}, fmt.Errorf("cluster: machine %s answered something that is not JSON", node)
	}
	switch {
	case ans.Code == chat.CodeNotFound:
		return gitwork.Changes{}, fmt.Errorf("machine %s: %s: %w", node, ans.Error, chat.ErrNotFound)
	case ans.Code != "":
		return gitwork.Changes{}, &gitwork.Error{Code: ans.Code, Message: "machine " + node + ": " + ans.Error}
	case ans.Error != "" || ans.Changes == nil:
		return gitwork.Changes{}, fmt.Errorf("machine %s: %s", node, ans.Error)
	}
	return *ans.Changes, nil
}
