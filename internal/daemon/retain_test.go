package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// A client replaying with a since whose events were pruned is told
// (history_pruned on the socket, pruned_through over REST), never shown a silent
// gap; the log goes on after the last seq, which pruning never reuses.
func TestReplayAfterPrunedSeqsSaysSo(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("retain")
	for _, id := range []string{"m1", "m2"} {
		c.Send(chatsock.Msg(id, "say "+id))
		c.WaitFor(0, 5*time.Second, chatsock.PromptDone(id, chat.StopEndTurn), id)
	}
	c.Client().Close()
	th, _ := e.restThread(threadOf(t, c).ID)
	last := th.LastSeq

	// Prune everything, as limits.retain_events would once the thread is old: a
	// second handle on the daemon's own database.
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(e.cfg.DataDir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneEvents(ctx, time.Now().Add(time.Minute))
	st.Close()
	if err != nil || n != last {
		t.Fatalf("PruneEvents: got %d, %v; want %d, nil", n, err, last)
	}

	r := e.dial("retain", 3)
	i := r.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "replay")
	var pruned int64 = -1
	for _, ev := range r.Snapshot()[:i] {
		switch {
		case ev.Type == chat.TypeHistoryPruned:
			pruned = int64(chatsock.FieldOf(ev, "through_seq").(float64))
		case ev.Seq > 0:
			t.Errorf("replayed %s seq %d from a pruned log", ev.Type, ev.Seq)
		}
	}
	if pruned != last {
		t.Fatalf("history_pruned through_seq: got %d, want %d (%s)", pruned, last, chatsock.Summary(r.Snapshot()))
	}
	if got := chatsock.FieldOf(r.Get(i), "last_seq"); got != float64(last) {
		t.Errorf("replay_done last_seq: got %v, want %d", got, last)
	}

	// The log goes on after the pruned seqs.
	r.Send(chatsock.Msg("m3", "say m3"))
	j := r.WaitFor(i, 5*time.Second, chatsock.Type(chat.TypeUserMessage), "m3 logged")
	if got := r.Get(j).Seq; got != last+1 {
		t.Errorf("m3's seq: got %d, want %d", got, last+1)
	}
	r.WaitFor(i, 5*time.Second, chatsock.PromptDone("m3", chat.StopEndTurn), "m3")

	// REST says the same.
	var page struct {
		Events        []json.RawMessage `json:"events"`
		PrunedThrough int64             `json:"pruned_through"`
	}
	if code := e.getJSON(fmt.Sprintf("/api/threads/%s/events?since=3", th.ID), &page); code != 200 {
		t.Fatalf("events: %d", code)
	}
	if page.PrunedThrough != last || len(page.Events) == 0 {
		t.Fatalf("REST after a pruned seq: got pruned_through %d and %d events, want %d and the new events", page.PrunedThrough, len(page.Events), last)
	}
	page.PrunedThrough = 0
	e.getJSON(fmt.Sprintf("/api/threads/%s/events?since=%d", th.ID, last), &page)
	if page.PrunedThrough != 0 {
		t.Errorf("REST after a kept seq: got pruned_through %d, want none", page.PrunedThrough)
	}
}
