package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// A node linking again with nothing changed (its parley restarted, or its
// link came back) tells the hub every thread's summary, and the hub writes
// none of them again: with thousands of threads per node, a link-up no
// longer rewrites the directory and wakes every reader of it. The hub's
// watch then names only the thread that did change, and a revoke tells the
// watch that every thread may have (its machine's are no longer listed).
func TestANodeLinkingAgainRewritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	const threads = 20
	for k := range threads {
		b.write(chat.ThreadID(fmt.Sprintf("t%d", k)), 2, true)
	}
	link := func() *Link {
		l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub,
			Inputs: func(context.Context, string, []byte) ([]byte, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := link()
	waitFor(t, 10*time.Second, "b's threads listed at the hub", func() bool {
		ths, _ := h.Threads(t.Context())
		return len(ths) == threads
	})
	w := h.WatchThreads()
	if _, all := w.Take(); !all {
		t.Fatal("a new watch's first Take does not say all")
	}
	before := h.summaries.revision()

	l.Close() // b's parley restarts
	l = link()
	t.Cleanup(l.Close)
	b.write("t7", 1, false) // then one thread changes
	changed := RemoteID("b", "t7")
	waitFor(t, 10*time.Second, "t7's change listed at the hub", func() bool {
		rt, ok := h.Thread(changed)
		return ok && rt.Thread.LastSeq == 3
	})
	// b's summaries reach the hub in the order b sent them: the link-up's
	// twenty came before t7's change.
	if got := h.summaries.revision() - before; got != 1 {
		t.Errorf("the hub wrote %d summaries for b's link-up and one change; want 1", got)
	}
	if ids, all := w.Take(); all || !slices.Equal(ids, []chat.ThreadID{changed}) {
		t.Errorf("the watch names %v (all: %v); want only %s", ids, all, changed)
	}

	if err := h.Revoke(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if _, all := w.Take(); !all {
		t.Error("after b's revoke the watch does not say every thread may have changed")
	}
	if _, ok := h.Thread(changed); ok {
		t.Error("a revoked machine's thread is still listed")
	}
}
