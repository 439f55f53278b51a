package remote

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// askRouter is a router over the SQLite store in dir (its agent "echo" on
// the scripted driver, confined to work), with remote when not nil (a hub's).
func askRouter(t *testing.T, dir, work string, remote router.Remote) (*router.Router, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := router.Options{
		Agents:       []config.Agent{{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{work}}},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"scripted": &scripted.Driver{}},
	}
	if remote != nil {
		opt.Remote = remote
	}
	r := router.New(st, fanout.New(nil), opt)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r, st
}

func closeRouter(t *testing.T, r *router.Router, st *sqlite.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Errorf("router close: %v", err)
	}
	st.Close()
}

func waitOnline(t *testing.T, h *cluster.Hub, node string) {
	t.Helper()
	var nodes []cluster.NodeStatus
	var err error
	testkit.Eventually(t, 60*time.Second, func() bool {
		nodes, err = h.Nodes(t.Context())
		return err == nil && len(nodes) == 1 && nodes[0].Name == node && nodes[0].Online
	}, "machine %s never came online: %v", node, testkit.Later(func() any { return fmt.Sprintf("%+v %v", nodes, err) }))
}

// A hub killed after node b made the thread a chat asked for there
// ("echo@b") but before it heard b's answer: the route still has its ask
// after the restart, and the chat's next message, asking again, gets the
// thread b made (with the message in it), never a second one, and the
// route shows it. Real NATS, real stores and routers on both sides; the
// node's answer is held until the hub is gone.
func TestAnAskedThreadIsMadeOnceWhenTheHubDiesBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	hubData, nodeData, work := filepath.Join(root, "hub"), filepath.Join(root, "b"), t.TempDir()
	h, err := cluster.StartHub(t.Context(), cluster.HubOptions{DataDir: hubData, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := h.Addr()
	tok, err := cluster.IssueToken(hubData, addr, "b", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), nodeData, tok, "b", "test"); err != nil {
		t.Fatal(err)
	}

	// Node b: its router applies the hub's inputs; the first one's answer
	// is held until released (made and committed on b, not yet heard).
	nodeRouter, nodeStore := askRouter(t, nodeData, work, nil)
	defer closeRouter(t, nodeRouter, nodeStore)
	apply := Inputs(nodeRouter)
	applied, release := make(chan struct{}), make(chan struct{})
	var inputs atomic.Int32
	l, err := cluster.Dial(cluster.LinkOptions{DataDir: nodeData, Hub: addr, Node: "b", Heartbeat: 2 * time.Second,
		Store: nodeStore, Events: fanout.New(nil),
		Inputs: func(ctx context.Context, id string, data []byte) ([]byte, error) {
			res, err := apply(ctx, id, data)
			if inputs.Add(1) == 1 {
				close(applied)
				<-release
			}
			return res, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitOnline(t, h, "b")

	from := chat.RouteKey{Channel: "irc", Chat: "#dev"}
	rem := &remoteThreads{hub: h, node: "hub"}
	hubRouter, hubStore := askRouter(t, hubData, work, rem)
	rem.failed = &remoteFailures{st: hubStore, events: fanout.New(nil), log: slog.New(slog.DiscardHandler)}
	if id, err := hubRouter.NewThread(t.Context(), from, "echo@b", work); err != nil || id != "" {
		t.Fatalf("NewThread echo@b: %q %v, want no thread yet", id, err)
	}
	first := make(chan error, 1)
	go func() {
		_, _, err := hubRouter.Send(context.Background(), router.SendRequest{From: from,
			Message: router.Message{MessageID: "m1", Text: "hello b"}})
		first <- err
	}()
	select {
	case <-applied:
	case <-time.After(30 * time.Second):
		t.Fatal("the first message never reached b")
	}
	// The hub goes before it hears b's answer.
	closeRouter(t, hubRouter, hubStore)
	h.Close()
	if err := <-first; err == nil {
		t.Fatal("the first message: its hub went before b answered, yet it reports no error")
	}
	close(release)

	h2, err := cluster.StartHub(t.Context(), cluster.HubOptions{DataDir: hubData, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	rem = &remoteThreads{hub: h2, node: "hub"}
	hubRouter, hubStore = askRouter(t, hubData, work, rem)
	rem.failed = &remoteFailures{st: hubStore, events: fanout.New(nil), log: slog.New(slog.DiscardHandler)}
	defer closeRouter(t, hubRouter, hubStore)
	waitOnline(t, h2, "b")

	// The hub asks b which thread the kept ask made (as it does each time a
	// machine comes online): the route shows it before any next message.
	resolveAsks(t.Context(), hubRouter, h2, slog.New(slog.DiscardHandler))
	madeThreads, err := nodeStore.Threads(t.Context())
	if err != nil || len(madeThreads) != 1 {
		t.Fatalf("b's threads: %+v %v, want the one the ask made", madeThreads, err)
	}
	if rt, err := hubStore.Route(t.Context(), from); err != nil || rt.ThreadID != cluster.RemoteID("b", madeThreads[0].ID) {
		t.Fatalf("the route at the hub once b is back: %+v %v, want b's thread %q before the chat's next message", rt, err, madeThreads[0].ID)
	}

	_, got, err := hubRouter.Send(t.Context(), router.SendRequest{From: from,
		Message: router.Message{MessageID: "m2", Text: "are you there?"}})
	if err != nil {
		t.Fatalf("the next message after the restart: %v", err)
	}
	ths, err := nodeStore.Threads(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ths) != 1 {
		t.Fatalf("b has %d threads, want the one the ask made: %+v", len(ths), ths)
	}
	made := ths[0].ID
	if want := cluster.RemoteID("b", made); got != want {
		t.Fatalf("the next message went to %q, want b's thread %q", got, want)
	}
	if rt, err := hubStore.Route(t.Context(), from); err != nil || rt.ThreadID != cluster.RemoteID("b", made) {
		t.Fatalf("the route at the hub: %+v %v, want it on %q", rt, err, cluster.RemoteID("b", made))
	}
	nodeFrom := chat.RouteKey{Channel: hubChannel, Chat: from.String()}
	for _, id := range []string{"m1", "m2"} {
		if in, err := nodeStore.Input(t.Context(), nodeFrom, id); err != nil || in.ThreadID != made {
			t.Fatalf("message %s on b: %+v %v, want it in %q", id, in, err, made)
		}
	}
}
