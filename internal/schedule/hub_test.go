package schedule

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/hubrig"
)

// hubRemote is the hub's Remote as parley serve wires it (internal/remote's
// hubSchedules, which this package cannot import): every node's schedules
// asked over the cluster's NATS.
type hubRemote struct{ hub *cluster.Hub }

func (h hubRemote) Machines(ctx context.Context) ([]string, error) {
	nodes, err := h.hub.Nodes(ctx)
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out, err
}

func (h hubRemote) Ask(ctx context.Context, machine string, req []byte) ([]byte, error) {
	return h.hub.NodeSchedules(ctx, machine, req)
}

func (hubRemote) ThreadID(machine string, local chat.ThreadID) chat.ThreadID {
	return cluster.RemoteID(machine, local)
}

func (hubRemote) SplitThread(id chat.ThreadID) (string, chat.ThreadID, bool) {
	return cluster.SplitRemoteID(id)
}

// openStore is a real SQLite store in dir, closed with the test.
func openStore(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// An add at the hub for node b reaches b, which keeps it, but its answer
// is lost (the caller's connection cut while b's answer is held): the
// error says the schedule may have been made and the same add can be sent
// again. Sent again with the same id, it answers b's schedule, which b
// keeps once and runs once at its due time. Real NATS with TLS between a
// real hub and node, real SQLite on both, the real clock (an --at a few
// seconds ahead).
func TestAnAddAtTheHubWhoseAnswerIsLostIsMadeOnce(t *testing.T) {
	work := t.TempDir()
	rig := hubrig.Start(t)
	h, hubData, nodeData := rig.Hub, rig.Data, rig.Join(t, "b")

	// Node b: its runner over its own store; the first request's answer is
	// held (kept on b, not yet heard) until released.
	rec := &recorder{sends: map[chat.RouteKey]map[string]int{}}
	nodeStore := openStore(t, nodeData)
	node, err := Start(context.Background(), Options{Store: nodeStore, Send: rec, Machine: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	applied, release := make(chan struct{}), make(chan struct{})
	var asked atomic.Int32
	rig.Link(t, "b", nodeData, func(l *cluster.Link) error {
		return l.ServeSchedules(func(ctx context.Context, req []byte) []byte {
			out := node.Serve(ctx, req)
			if asked.Add(1) == 1 {
				close(applied)
				<-release
			}
			return out
		})
	})

	hub, err := Start(context.Background(), Options{Store: openStore(t, hubData), Send: rec, Machine: "hub", Remote: hubRemote{h}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()

	at := time.Now().Add(3 * time.Second).Truncate(time.Second).UTC()
	sp := Spec{ID: "sch_hub-retry", Machine: "b", Agent: "echo", Cwd: work, At: at.Format(time.RFC3339), Text: "tag the release"}
	ctx, cut := context.WithCancel(context.Background())
	firstTry := make(chan error, 1)
	go func() {
		_, _, err := hub.addAt(ctx, sp)
		firstTry <- err
	}()
	select {
	case <-applied:
	case <-time.After(30 * time.Second):
		t.Fatal("the add never reached b")
	}
	cut() // the caller's connection drops before b's answer comes
	err = <-firstTry
	close(release)
	if !errors.Is(err, ErrUnanswered) || !strings.Contains(err.Error(), "may have been made") || !strings.Contains(err.Error(), "sent again safely") {
		t.Fatalf("the add whose answer was lost: %v, want ErrUnanswered saying it may have been made and can be sent again", err)
	}

	s, existed, err := hub.addAt(context.Background(), sp)
	kept, lerr := node.List(context.Background())
	if lerr != nil || len(kept) != 1 || kept[0].ID != sp.ID {
		t.Fatalf("b keeps %+v %v, want the one schedule %s", kept, lerr, sp.ID)
	}
	if err != nil || !existed || s.ID != sp.ID+"@b" || s.Node != "b" {
		t.Fatalf("the same add sent again: %+v existed=%v %v, want b's schedule %s@b, kept by the first try", s, existed, err, sp.ID)
	}

	// Its due time: b runs it once (every schedule b keeps has run).
	testkit.Eventually(t, 60*time.Second, func() bool {
		all, err := node.List(context.Background())
		if err != nil {
			return false
		}
		for _, s := range all {
			if s.LastRun == nil {
				return false
			}
		}
		return true
	}, "b's schedule ran")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.sends) != 1 || len(rec.sends[Route(sp.ID)]) != 1 || rec.sends[Route(sp.ID)][runID(sp.ID, at)] != 1 {
		t.Fatalf("runs sent: %v, want one, of %s at %v", rec.sends, sp.ID, at)
	}
}
