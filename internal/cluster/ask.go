package cluster

// What only a node can do with its own threads' working trees (their
// commit, push, pull request, files and terminal: node_work.go,
// hub_work.go), asked over the one request to a node's part
// (noderequest.go) with the result or the node's error as JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/gitwork"
)

// ErrNodeSlow is a node that did not answer in time: what was asked may
// still happen there.
var ErrNodeSlow = errors.New("the machine did not answer in time")

// nodeAnswer is a node's answer: the result as JSON, or why not. Code is a
// gitwork code; Chat a chat error carried by its place in chatErrors (from
// 1), as an input's refusal is.
type nodeAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Code   string          `json:"code,omitempty"`
	Chat   int             `json:"chat,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// answerOf is the answer for a result or an error, as JSON.
func answerOf(v any, err error) []byte {
	a := nodeAnswer{Code: gitwork.CodeOf(err), Chat: chatErrorCode(err)}
	if err != nil {
		a.Error = err.Error()
	} else if a.Result, err = json.Marshal(v); err != nil {
		a = nodeAnswer{Error: "the answer cannot be sent: " + err.Error()}
	}
	b, _ := json.Marshal(a)
	return b
}

// askWork sends req to node's part (subject, named what) and decodes its
// result into res. The error is the node's own (its gitwork code or chat
// error kept, its words prefixed with the machine), or askPartWithin's.
func (h *Hub) askWork(ctx context.Context, node, subject, what string, within time.Duration, req, res any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	data, err := h.askPartWithin(ctx, node, subject, what, within, b)
	if err != nil {
		return err
	}
	var ans nodeAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return fmt.Errorf("cluster: machine %s answered something that is not JSON", node)
	}
	switch {
	case ans.Code != "":
		return &gitwork.Error{Code: ans.Code, Message: "machine " + node + ": " + ans.Error}
	case ans.Chat > 0 && ans.Chat <= len(chatErrors):
		return &Refusal{Reason: "machine " + node + ": " + ans.Error, Err: chatErrors[ans.Chat-1]}
	case ans.Error != "":
		return fmt.Errorf("machine %s: %s", node, ans.Error)
	}
	if err := json.Unmarshal(ans.Result, res); err != nil {
		return fmt.Errorf("cluster: machine %s answered about its %s with something unexpected: %v", node, what, err)
	}
	return nil
}
