package daemon_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// speakingAtStart is an agent that is already speaking when its session
// starts (a terminal session taken over mid-turn, the tail of its transcript):
// Start passes that output on, and returns once the test has seen it. Its
// Prompt then fails: the message never got there.
type speakingAtStart struct {
	proves bool // the session is a driver.DeliveryProver
	seen   chan struct{}
}

func (d *speakingAtStart) Start(ctx context.Context, _ driver.Spec, sink driver.Sink) (driver.Session, error) {
	sink.Event(chat.AgentChunk{Text: "still answering an earlier turn"})
	select {
	case <-d.seen:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := failingSession{&slowSession{d: &slowProof{}, sink: sink}}
	if d.proves {
		return provingFailingSession{s}, nil
	}
	return s, nil
}

type failingSession struct{ *slowSession }

func (failingSession) Prompt(context.Context, driver.Prompt) error {
	return errors.New("the text never got there")
}

type provingFailingSession struct{ failingSession }

func (provingFailingSession) ProvesDelivery() {}

// The agent's output before its Prompt was even called is not the answer to
// the message: a message waiting for its session is never shown submitted on
// what the session said while it started.
func TestOutputBeforePromptIsNoProof(t *testing.T) {
	t.Parallel()
	for _, proves := range []bool{true, false} {
		name := map[bool]string{true: "screen driver", false: "structured driver"}[proves]
		t.Run(name, func(t *testing.T) {
			drv := &speakingAtStart{proves: proves, seen: make(chan struct{})}
			e := startWith(t, drv, nil)
			c := e.ready("early")
			c.Send(chatsock.Msg("m1", "hello"))
			c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeAgentChunk), "the output at start")
			close(drv.seen)
			i := c.WaitFor(0, 10*time.Second, func(ev client.Event) bool {
				return chatsock.Delivery("m1", chat.DeliverySubmitted)(ev) || chatsock.Delivery("m1", chat.DeliveryFailed)(ev)
			}, "m1's receipt")
			if st := chatsock.FieldOf(c.Get(i), "state"); st != chat.DeliveryFailed {
				t.Fatalf("m1 %v on output from before its Prompt, want failed (Prompt's verdict):\n%s", st, chatsock.Summary(c.Snapshot()))
			}
		})
	}
}
