package push

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// Another machine's open card is pushed once per subscription from its
// summary, named with that machine; a restart of the hub (a new service on
// the same outbox), the machine telling the same cards again (a reconnect)
// and an event of the thread reaching the hub add nothing and close nothing
// (the hub's store holds no card of that thread: it must not read "closed"
// from it); the card gone from the summary sends the closing push.
func TestAnotherMachinesCardPushesOnceAndClosesWhenItCloses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PushSubscribe(ctx, store.PushSubscription{Endpoint: "https://push.example/1", Device: "phone", P256dh: "p", Auth: "a"}); err != nil {
		t.Fatal(err)
	}
	id := chat.ThreadID("t_1@b")
	open := []RemoteThread{{Thread: chat.Thread{ID: id, Agent: "claude", Node: "b"}, AgentName: "Claude Code",
		Cards: []Card{{RequestID: "r1", Kind: chat.CardPermission, Asks: "asks for permission: Bash"}}}}
	rem := NewTestRemote(open...)
	service := func() *Service {
		rem.Restart()
		return &Service{opt: Options{Store: st, Remote: rem, Machine: "hub", Clock: realClock{}},
			log: slog.New(slog.DiscardHandler), remote: map[chat.ThreadID]string{}}
	}
	due := func() []store.PushItem {
		t.Helper()
		items, err := st.PushDue(ctx, time.Now().Add(time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items { // as the sender marks what it sent
			if err := st.PushMark(ctx, it.ID, store.PushSent, 1, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		return items
	}
	s := service()
	s.reconcileAll(ctx)
	items := due()
	var m Message
	if len(items) != 1 || json.Unmarshal(items[0].Payload, &m) != nil || m.Kind != store.PushOpen ||
		m.Title != "Claude Code on b" || m.Body != "asks for permission: Bash" || m.Tag != Tag(id, "r1") {
		t.Fatalf("pushes queued: %+v (%+v)", items, m)
	}

	s = service() // the hub restarted
	s.reconcileAll(ctx)
	rem.Set(append([]RemoteThread(nil), open...)...) // b linked again and told its summaries
	s.reconcileRemote(ctx, nil)
	s.reconcile(ctx, id) // an event of b's thread reached the hub's own hub
	if items := due(); len(items) != 0 {
		t.Fatalf("pushed again: %+v", items)
	}

	rem.Set() // answered on b: its summary has no open card
	s.reconcileRemote(ctx, nil)
	items = due()
	if len(items) != 1 || items[0].Kind != store.PushClose || items[0].RequestID != "r1" || items[0].Thread != id {
		t.Fatalf("closing pushes: %+v", items)
	}
}
