package ruleset

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/testkit/hubrig"
)

// hubRemote is the hub's Remote as parley serve wires it (internal/remote's
// hubRules, which this package cannot import): a node's rules asked over
// the cluster's NATS.
type hubRemote struct{ hub *cluster.Hub }

func (h hubRemote) Ask(ctx context.Context, machine string, req []byte) ([]byte, error) {
	return h.hub.NodeRules(ctx, machine, req)
}

// A rule add at the hub for node b reaches b, which keeps it, but its
// answer is lost (the caller's connection cut while b's answer is held):
// the error says the rule may have been made and the same add can be sent
// again. Sent again with the same id, it answers b's rule, which b keeps
// once and records once, and which answers b's cards. Real NATS with TLS
// between a real hub and node, real SQLite on both.
func TestARuleAddAtTheHubWhoseAnswerIsLostIsMadeOnce(t *testing.T) {
	work := t.TempDir()
	rig := hubrig.Start(t)
	h, hubData, nodeData := rig.Hub, rig.Data, rig.Join(t, "b")

	// Node b: its rules over its own store; the first request's answer is
	// held (kept on b, not yet heard) until released.
	bTrail := &trail{}
	node, closeNode := openAt(t, nodeData, Options{Node: "b", Audit: bTrail, Roots: func(string) []string { return []string{work} }})
	defer closeNode()
	applied, release := make(chan struct{}), make(chan struct{})
	var asked atomic.Int32
	rig.Link(t, "b", nodeData, func(l *cluster.Link) error {
		return l.ServeRules(func(ctx context.Context, req []byte) []byte {
			out := node.Serve(ctx, req)
			if asked.Add(1) == 1 {
				close(applied)
				<-release
			}
			return out
		})
	})

	hub, closeHub := openAt(t, hubData, Options{Node: "hub", Remote: hubRemote{h}})
	defer closeHub()

	sp := Spec{ID: "r_hub-retry", Action: rules.Allow, Tool: "Bash", Command: "go test *"}
	ctx, cut := context.WithCancel(audit.WithActor(context.Background(), audit.ActorDevice+"d1"))
	firstTry := make(chan error, 1)
	go func() {
		_, _, err := hub.addAt(ctx, "b", sp, "phone")
		firstTry <- err
	}()
	select {
	case <-applied:
	case <-time.After(30 * time.Second):
		t.Fatal("the add never reached b")
	}
	cut() // the caller's connection drops before b's answer comes
	err := <-firstTry
	close(release)
	if !errors.Is(err, chat.ErrUnanswered) || !strings.Contains(err.Error(), "may have been made") || !strings.Contains(err.Error(), "sent again safely") {
		t.Fatalf("the add whose answer was lost: %v, want ErrUnanswered saying it may have been made and can be sent again", err)
	}

	e, existed, err := hub.addAt(audit.WithActor(context.Background(), audit.ActorDevice+"d1"), "b", sp, "phone")
	kept := node.List()
	if len(kept) != 1 || kept[0].ID != sp.ID || kept[0].CreatedBy != "phone at hub" {
		t.Fatalf("b keeps %+v, want the one rule %s made by the phone at the hub", kept, sp.ID)
	}
	if err != nil || !existed || e.ID != sp.ID {
		t.Fatalf("the same add sent again: %+v existed=%v %v, want b's rule %s, kept by the first try", e, existed, err, sp.ID)
	}
	if es := bTrail.entries(); len(es) != 1 || !strings.HasPrefix(es[0].Subject, "rule "+sp.ID+" made") {
		t.Fatalf("b's trail: %+v, want the rule made once", es)
	}
	if len(hub.List()) != 0 {
		t.Fatalf("the hub's own rules: %+v, want none", hub.List())
	}
	if a, err := hub.TestAt(context.Background(), "b", Probe{Tool: "Bash", Command: "go test ./..."}); err != nil || a.Action != rules.Allow || a.Rule != 1 {
		t.Fatalf("b's cards by its rules: %+v %v, want allowed by rule 1", a, err)
	}
}
