package acpagent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// oneRoute is the router's Subscribe for one route attached to one thread.
type oneRoute struct {
	h      *fanout.Fanout
	st     store.Store
	thread chat.ThreadID
}

func (o oneRoute) Subscribe(ctx context.Context, route chat.RouteKey, buffer int) (*fanout.Sub, *chat.Thread, error) {
	sub := o.h.Subscribe(route, o.thread, buffer)
	th, err := o.st.Thread(ctx, o.thread)
	if err != nil {
		o.h.Unsubscribe(sub)
		return nil, nil, err
	}
	return sub, &th, nil
}

// A session that fell behind is dropped by the hub and caught up from the log.
// What it missed meanwhile happened while it was open: a turn that ended then
// answers the prompt waiting for it (it is not history replayed on load).
func TestASessionCaughtUpAfterADropAnswersItsPrompt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := fanout.New(nil)
	th := chat.Thread{ID: "t1", Agent: "echo", Cwd: "/w", State: chat.ThreadWorking, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	write := func(ps ...chat.Payload) {
		var b store.Batch
		for _, p := range ps {
			ev, err := chat.NewEvent(th.ID, p, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			th.LastSeq++
			ev.Seq = th.LastSeq
			b.Events = append(b.Events, ev)
		}
		cp := th
		b.Thread = &cp
		if err := st.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
		for _, ev := range b.Events {
			h.Publish(ev)
		}
	}
	write(chat.UserMessage{MessageID: "m1", Text: "hi"})

	// The client reads what the agent side writes, until paused.
	toClient, fromAgent := io.Pipe()
	toAgent, fromClient := io.Pipe()
	defer fromAgent.Close()
	defer fromClient.Close()
	var mu sync.Mutex
	paused := false
	resume := sync.NewCond(&mu)
	go func() {
		r := bufio.NewReader(toClient)
		for {
			mu.Lock()
			for paused {
				resume.Wait()
			}
			mu.Unlock()
			if _, err := r.ReadBytes('\n'); err != nil {
				return
			}
		}
	}()
	a := &agent{log: slog.New(slog.DiscardHandler), modeOf: map[chat.ThreadID]chat.Mode{}}
	a.conn = acp.NewAgentSideConnection(a, fromAgent, toAgent)

	route := chat.RouteKey{Channel: "acp", Chat: "s1"}
	f, shown, err := follow.Subscribe(ctx, follow.Deps{Source: st, Router: oneRoute{h, st, th.ID}, Hub: h}, route, follow.Options{Buffer: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &session{id: "s1", route: route, f: f, waiters: map[string][]*waiter{}, asking: map[string]context.CancelFunc{}, shownCh: make(chan struct{})}
	replayed := make(chan error, 1)
	pctx, stop := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() { defer close(ended); a.pump(pctx, s, shown, 0, replayed) }()
	defer func() { stop(); fromAgent.Close(); <-ended }()
	if err := <-replayed; err != nil {
		t.Fatal(err)
	}
	w := s.wait("m1") // the prompt call of message m1, waiting for its turn to end

	mu.Lock()
	paused = true
	mu.Unlock()
	for i := range 40 { // far more than the buffer of 16 while the client reads nothing
		write(chat.AgentChunk{Text: fmt.Sprintf("c%d ", i)})
	}
	write(chat.PromptDone{MessageID: "m1", StopReason: chat.StopEndTurn})
	select {
	case <-f.Sub().Done():
	case <-ctx.Done():
		t.Fatal("the hub did not drop the session that fell behind")
	}
	mu.Lock()
	paused = false
	resume.Broadcast()
	mu.Unlock()

	select {
	case o := <-w.ch:
		if o.stop != chat.StopEndTurn {
			t.Fatalf("the prompt ended with %+v, want end_turn", o)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt whose turn ended while the session was dropped was never answered")
	}
}
