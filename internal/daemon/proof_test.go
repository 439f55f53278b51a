package daemon_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// slowProof is an agent whose hand-over takes a while: while Prompt runs, a
// permission card shows up that the message did not cause (a menu left open on
// a terminal agent's screen), then Prompt returns. Prompt waits for release.
type slowProof struct {
	proves  bool // the session is a driver.DeliveryProver
	release chan struct{}
	sink    chan driver.Sink // the session's sink, for the test to report evidence
}

func (d *slowProof) Start(_ context.Context, _ driver.Spec, sink driver.Sink) (driver.Session, error) {
	d.sink <- sink
	s := &slowSession{d: d, sink: sink}
	if d.proves {
		return &provingSession{s}, nil
	}
	return s, nil
}

type slowSession struct {
	d    *slowProof
	sink driver.Sink
}

func (s *slowSession) Prompt(ctx context.Context, p driver.Prompt) error {
	s.sink.Event(chat.PermissionRequest{RequestID: "left-open", Tool: chat.PermissionTool{Name: "Bash"},
		Options: []chat.PermissionOption{{ID: "allow", Label: "Yes", Kind: "allow_once"}}})
	select {
	case <-s.d.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowSession) Cancel(context.Context) error { s.sink.TurnEnded(chat.StopCancelled); return nil }
func (s *slowSession) AnswerPermission(context.Context, string, driver.PermissionAnswer) error {
	return nil
}
func (s *slowSession) AnswerQuestion(context.Context, string, driver.QuestionAnswer) error {
	return nil
}
func (s *slowSession) SetMode(context.Context, string) error                 { return nil }
func (s *slowSession) SetConfigOption(context.Context, string, string) error { return nil }
func (s *slowSession) Close(context.Context) error                           { return nil }

type provingSession struct{ *slowSession }

func (provingSession) ProvesDelivery() {}

// TestOnlyTheDriversEvidenceProvesDelivery: the agent's output while the
// message is handed over (a card that may be a menu left open on a terminal
// agent's screen) is no proof the message arrived. A driver that reads a
// screen proves it with its Prompt; any other reports the agent's evidence
// (Sink.Received), which may come before Prompt returns; a Prompt that
// returns without evidence only handed the text over.
func TestOnlyTheDriversEvidenceProvesDelivery(t *testing.T) {
	t.Parallel()
	for _, proves := range []bool{true, false} {
		name := map[bool]string{true: "screen driver", false: "structured driver"}[proves]
		t.Run(name, func(t *testing.T) {
			drv := &slowProof{proves: proves, release: make(chan struct{}), sink: make(chan driver.Sink, 1)}
			e := startWith(t, drv, nil)
			c := e.ready("chat1")
			c.Send(chatsock.Msg("m1", "hello"))
			card := c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypePermissionRequest), "the card")
			delivering := c.WaitFor(0, 10*time.Second, chatsock.Delivery("m1", chat.DeliveryDelivering), "delivering")
			if slices.ContainsFunc(c.Snapshot(), chatsock.Delivery("m1", chat.DeliverySubmitted)) {
				t.Fatalf("submitted on the agent's output alone (card at %d, delivering at %d):\n%s",
					card, delivering, chatsock.Summary(c.Snapshot()))
			}
			sink := <-drv.sink
			if !proves {
				sink.Received()
				c.WaitFor(0, 10*time.Second, chatsock.Delivery("m1", chat.DeliverySubmitted), "submitted on the driver's evidence")
			}
			close(drv.release)
			if proves {
				c.WaitFor(0, 10*time.Second, chatsock.Delivery("m1", chat.DeliverySubmitted), "submitted on the driver's verdict")
			}
		})
	}
}

// TestQueuedSaysWhatItWaitsFor: a message that cannot go at once says why in
// its queued receipt: behind an open permission request, the person learns
// the card holds it up; a message that goes at once has no such word.
func TestQueuedSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("waits")
	c.Send(chatsock.Msg("m1", "permission Bash"))
	i := c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypePermissionRequest), "the card")
	rid, _ := chatsock.FieldOf(c.Get(i), "request_id").(string)
	if d := c.Get(c.WaitFor(0, 10*time.Second, chatsock.Delivery("m1", chat.DeliveryQueued), "m1 queued")); chatsock.FieldOf(d, "detail") != nil {
		t.Errorf("m1 went at once, but its queued receipt says %v", chatsock.FieldOf(d, "detail"))
	}
	c.Send(chatsock.Msg("m2", "say after"))
	d := c.Get(c.WaitFor(i, 10*time.Second, chatsock.Delivery("m2", chat.DeliveryQueued), "m2 queued"))
	if detail, _ := chatsock.FieldOf(d, "detail").(string); !strings.Contains(detail, "permission request") {
		t.Errorf("m2's queued receipt says %q, want it to name the open permission request", detail)
	}
	c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "allow"})
	c.WaitFor(i, 10*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "m2 ran after the card was answered")
}
