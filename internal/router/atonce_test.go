package router

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// The agent is told a message only once its "delivering" receipt is
// stored: a crash after it was told must find the message delivering (and
// ask the agent's record), never queued, which the restart would send again.
// Here the store cannot write that receipt for now (a full disk): the
// message that would go at once is refused whole, never given to the agent,
// and goes once the store writes again.
func TestAMessageWhoseDeliveringCannotBeStoredNeverReachesTheAgent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		full := &refuseDelivering{}
		g := newRigOn(t, "", func(st store.Store) store.Store { full.Store = st; return full },
			func(o *Options) { o.Logger = slog.New(failOnError{t: t, allow: "commit"}) })
		defer g.close()
		th := g.sendOK("m1", "say hi") // the session runs and is idle
		synctest.Wait()
		full.on.Store(true)
		_, _, err := g.send("m2", "say again")
		synctest.Wait()
		for _, p := range g.drv.Prompts() {
			if p.MessageID == "m2" {
				t.Fatalf("m2 was given to the agent while its delivering receipt was not stored (the log: %v)", g.log(th))
			}
		}
		if err == nil || !strings.Contains(err.Error(), "could not store the message") {
			t.Fatalf("send m2: %v; want it refused, the store could not write", err)
		}
		full.on.Store(false)
		g.sendOK("m2", "say again")
		synctest.Wait()
		if log := g.log(th); !slices.Contains(log, "delivery:m2:delivering") || !slices.Contains(log, "prompt_done:m2:end_turn") {
			t.Fatalf("m2 sent again once the store wrote: %v", log)
		}
	})
}

// refuseDelivering refuses, while on, every commit holding a delivering
// receipt, as SQLite refuses a write on a full disk: for now.
type refuseDelivering struct {
	store.Store
	on atomic.Bool
}

func (f *refuseDelivering) Commit(ctx context.Context, b store.Batch) error {
	if f.on.Load() && slices.ContainsFunc(b.Events, func(e chat.Event) bool {
		return e.Type == chat.TypeDelivery && strings.Contains(string(e.Payload), `"state":"delivering"`)
	}) {
		return fmt.Errorf("sqlite: commit: database or disk is full (13) (%w)", store.ErrUnavailable)
	}
	return f.Store.Commit(ctx, b)
}
