package remote

import (
	"context"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/filetree"
	"github.com/parleyhq/parley/internal/gitwork"
)

// The work on a node's thread's working tree, done on the node
// (cluster/hub_work.go): the web channel's commit, push, pull request,
// files and terminal at the hub.

func (m Machines) NodeCommit(ctx context.Context, node string, thread chat.ThreadID, id, message string) (gitwork.Committed, error) {
	return m.hub.NodeCommit(ctx, node, thread, id, message)
}

func (m Machines) NodePush(ctx context.Context, node string, thread chat.ThreadID, id string) (gitwork.Pushed, error) {
	return m.hub.NodePush(ctx, node, thread, id)
}

func (m Machines) NodePR(ctx context.Context, node string, thread chat.ThreadID, id, title, body string) (gitwork.PullRequest, error) {
	return m.hub.NodePR(ctx, node, thread, id, title, body)
}

func (m Machines) NodeFiles(ctx context.Context, node string, thread chat.ThreadID, q filetree.Query) (filetree.View, error) {
	return m.hub.NodeFiles(ctx, node, thread, q)
}

func (m Machines) NodeRaw(ctx context.Context, node string, thread chat.ThreadID, q filetree.Query) ([]byte, error) {
	return m.hub.NodeRaw(ctx, node, thread, q)
}

func (m Machines) NodeTerminal(node string, thread chat.ThreadID) driver.Terminal {
	return m.hub.NodeTerminal(node, thread)
}
