package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
)

// A message the hub queued for a node meets a limit that passes (the thread's
// queue full, the new-thread rate, the sessions cap): the node's answer lets
// the hub try it again (it stays queued) instead of failing it for good, which
// lost a message the sender saw "queued". A control, asked now and never
// kept, ends with any such answer.
func TestAQueuedMessageMeetingALimitIsTriedAgain(t *testing.T) {
	t.Parallel()
	for _, e := range []error{chat.ErrBusy, chat.ErrRateLimited, chat.ErrSessionLimit, chat.ErrClosed, context.DeadlineExceeded} {
		err := refusal(fmt.Errorf("%w: a limit", e))
		var r *cluster.Refusal
		if errors.As(err, &r) {
			t.Errorf("message meeting %v: refused for good (%v); want it tried again", e, err)
		}
		if !errors.Is(err, e) {
			t.Errorf("message meeting %v: %v; want the error kept", e, err)
		}
	}
	for _, e := range []error{chat.ErrBadInput, chat.ErrNotFound, chat.ErrTooLarge} {
		var r *cluster.Refusal
		if err := refusal(fmt.Errorf("%w: no", e)); !errors.As(err, &r) || !errors.Is(err, e) {
			t.Errorf("message meeting %v: %v; want refused for good as %v", e, err, e)
		}
	}
	var r *cluster.Refusal
	if err := controlRefusal(fmt.Errorf("%w: unload while a turn runs", chat.ErrBusy)); !errors.As(err, &r) || !errors.Is(err, chat.ErrBusy) {
		t.Errorf("control meeting busy: %v; want refused (a control is not kept)", err)
	}
}
