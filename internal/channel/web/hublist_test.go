package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
)

// countingStore counts the reads of a thread's cards made after counting
// starts.
type countingStore struct {
	*sqlite.Store
	on    atomic.Bool
	reads atomic.Int32
}

func (c *countingStore) Cards(ctx context.Context, id chat.ThreadID, state string) ([]chat.Card, error) {
	if c.on.Load() {
		c.reads.Add(1)
	}
	return c.Store.Cards(ctx, id, state)
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// The hub's thread list says what a node's thread waits for from the node's
// summary in the directory, never by asking the node (a node between its
// goodbye and its close dropped the read, and the list, and every refresh
// behind it, waited out the read's timeout); once the node is offline its
// thread is listed waiting for nobody (its card cannot be answered). Real
// NATS with TLS on loopback, a real joined node.
func TestTheHubsThreadListTakesANodesCardsFromTheDirectory(t *testing.T) {
	t.Parallel()
	hubData := t.TempDir()
	h, err := cluster.StartHub(t.Context(), cluster.HubOptions{DataDir: hubData, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	tok, err := cluster.IssueToken(hubData, h.AdvertiseAddr(), "", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	dataB := t.TempDir()
	if _, err := cluster.Join(t.Context(), dataB, tok, "b", "test"); err != nil {
		t.Fatal(err)
	}

	b := &countingStore{Store: openStore(t)}
	now := time.Now()
	perm, _ := json.Marshal(chat.PermissionRequest{RequestID: "p1", Tool: chat.PermissionTool{Name: "Bash", Title: "rm -rf build"}})
	if err := b.Commit(t.Context(), store.Batch{
		Thread: &chat.Thread{ID: "t_b", Agent: "claude", Cwd: "/w", State: chat.ThreadWorking, CreatedAt: now, UpdatedAt: now},
		Cards:  []chat.Card{{ThreadID: "t_b", RequestID: "p1", Kind: chat.CardPermission, State: chat.CardOpen, Request: perm, CreatedAt: now}},
	}); err != nil {
		t.Fatal(err)
	}
	l, err := cluster.Dial(cluster.LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: 2 * time.Second,
		Store: b, Events: fanout.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)

	srv := httptest.NewServer(New(nil, cluster.NewView(openStore(t), h), nil, Options{Token: testToken}))
	t.Cleanup(srv.Close)
	type listed struct {
		ID      string `json:"id"`
		Node    string `json:"node"`
		Waiting string `json:"waiting"`
		Card    *struct {
			RequestID string `json:"request_id"`
			Title     string `json:"title"`
		} `json:"card"`
	}
	list := func() []listed {
		t.Helper()
		r, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/threads", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/threads at the hub: %s", resp.Status)
		}
		var v struct{ Threads []listed }
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v.Threads
	}
	remote := string(cluster.RemoteID("b", "t_b"))
	// The list shows an online node's cards: b's record and its thread's
	// summary are two writes, and either may come first.
	testkit.Eventually(t, 10*time.Second, func() bool {
		ths, _ := h.Threads(t.Context())
		nodes, _ := h.Nodes(t.Context())
		return len(ths) == 1 && len(ths[0].Cards) == 1 && len(nodes) == 1 && nodes[0].Online
	}, "b online, and its thread and card in the hub's directory")

	b.on.Store(true)
	got := list()
	if len(got) != 1 || got[0].ID != remote || got[0].Node != "b" || got[0].Waiting != chat.CardPermission ||
		got[0].Card == nil || got[0].Card.RequestID != "p1" || got[0].Card.Title != "Bash" {
		t.Fatalf("the hub's list: %+v, want b's thread waiting on p1 (Bash), its command never told", got)
	}
	if n := b.reads.Load(); n != 0 {
		t.Fatalf("listing the threads read b's cards %d times, want none (the directory says them)", n)
	}

	l.Close()
	testkit.Eventually(t, 10*time.Second, func() bool {
		ns, _ := h.Nodes(t.Context())
		return len(ns) == 1 && !ns[0].Online
	}, "b offline at the hub")
	if got := list(); len(got) != 1 || got[0].ID != remote || got[0].Waiting != "" || got[0].Card != nil {
		t.Fatalf("the hub's list with b offline: %+v, want b's thread waiting for nobody", got)
	}
}
