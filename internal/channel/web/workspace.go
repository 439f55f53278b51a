// The work on a thread's working tree, once: this machine's dashboard does
// it for its own threads, and a cluster node does it when its hub asks
// (cluster.Workspace); at the hub a node's thread's goes to its node.

package web

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/filetree"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/router"
)

// Workspace does the work on this machine's threads' working trees.
type Workspace struct {
	Threads interface {
		Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error)
	}
	Router *router.Router
	Roots  []string // the thread's directory must be inside one
}

var _ cluster.Workspace = Workspace{}

func (ws Workspace) Commit(ctx context.Context, id chat.ThreadID, message string) (gitwork.Committed, error) {
	th, err := ws.Threads.Thread(ctx, id)
	if err != nil {
		return gitwork.Committed{}, err
	}
	return gitwork.Commit(ctx, th.Cwd, message)
}

func (ws Workspace) Push(ctx context.Context, id chat.ThreadID) (gitwork.Pushed, error) {
	th, err := ws.Threads.Thread(ctx, id)
	if err != nil {
		return gitwork.Pushed{}, err
	}
	return gitwork.Push(ctx, th.Cwd)
}

func (ws Workspace) PR(ctx context.Context, id chat.ThreadID, title, body string) (gitwork.PullRequest, error) {
	th, err := ws.Threads.Thread(ctx, id)
	if err != nil {
		return gitwork.PullRequest{}, err
	}
	return gitwork.PR(ctx, th.Cwd, title, body)
}

// dir is the thread's directory, resolved and inside the roots.
func (ws Workspace) dir(ctx context.Context, id chat.ThreadID) (string, error) {
	th, err := ws.Threads.Thread(ctx, id)
	if err != nil {
		return "", err
	}
	return config.Confine(th.Cwd, ws.Roots)
}

func (ws Workspace) Files(ctx context.Context, id chat.ThreadID, q filetree.Query) (filetree.View, error) {
	base, err := ws.dir(ctx, id)
	if err != nil {
		return filetree.View{}, err
	}
	return filetree.Read(ctx, base, q)
}

func (ws Workspace) Raw(ctx context.Context, id chat.ThreadID, q filetree.Query, limit int64) ([]byte, error) {
	base, err := ws.dir(ctx, id)
	if err != nil {
		return nil, err
	}
	return filetree.Raw(ctx, base, q, limit)
}

func (ws Workspace) Terminal(ctx context.Context, id chat.ThreadID) (driver.Terminal, error) {
	th, err := ws.Threads.Thread(ctx, id)
	if err != nil {
		return nil, err
	}
	return ws.Router.Pane(ctx, th)
}

// nodeWork is a cluster's hub that asks a node to do the work on its
// thread (cluster.Hub).
type nodeWork interface {
	NodeCommit(ctx context.Context, node string, thread chat.ThreadID, id, message string) (gitwork.Committed, error)
	NodePush(ctx context.Context, node string, thread chat.ThreadID, id string) (gitwork.Pushed, error)
	NodePR(ctx context.Context, node string, thread chat.ThreadID, id, title, body string) (gitwork.PullRequest, error)
	NodeFiles(ctx context.Context, node string, thread chat.ThreadID, q filetree.Query) (filetree.View, error)
	NodeRaw(ctx context.Context, node string, thread chat.ThreadID, q filetree.Query) ([]byte, error)
	NodeTerminal(node string, thread chat.ThreadID) driver.Terminal
}

// onNode is a node's thread's machine, its own id for it there and the hub
// that asks it; ok false for this machine's thread. A node's thread where
// no hub can ask is an error.
func (s *Server) onNode(th chat.Thread) (hub nodeWork, node string, own chat.ThreadID, ok bool, err error) {
	if th.Node == "" && cluster.NodeOf(th.ID) == "" {
		return nil, "", "", false, nil
	}
	hub, can := s.opt.Cluster.(nodeWork)
	if !can {
		return nil, "", "", false, fmt.Errorf("%w: thread %s is on another machine, which this parley cannot ask", chat.ErrBadInput, th.ID)
	}
	node, own, split := cluster.SplitRemoteID(th.ID)
	if !split {
		node, own = th.Node, th.ID
	}
	return hub, node, own, true, nil
}

// work is this machine's Workspace.
func (s *Server) work() Workspace {
	return Workspace{Threads: s.store, Router: s.router, Roots: s.opt.Roots}
}
