package ruleset

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

type trail struct {
	mu sync.Mutex
	es []audit.Entry
}

func (t *trail) Record(e audit.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.es = append(t.es, e)
}

func (t *trail) entries() []audit.Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]audit.Entry(nil), t.es...)
}

// node is a Remote reaching one node's Set in process, as the cluster's
// request would: the bytes as they are, or away.
type node struct {
	name string
	set  *Set
	away bool
}

func (n *node) Ask(ctx context.Context, machine string, req []byte) ([]byte, error) {
	if machine != n.name {
		return nil, fmt.Errorf("no machine %q is joined to this hub: %w", machine, chat.ErrBadInput)
	}
	if n.away {
		return nil, fmt.Errorf("machine %s does not answer: %w", machine, chat.ErrAway)
	}
	return n.set.Serve(ctx, req), nil
}

func openSet(t *testing.T, opt Options) *Set {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opt.Store = st
	s, err := Open(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// At a hub, machine b's rules are b's: made, changed, tested and removed
// there, named in b's trail as the hub's act for the person there and in
// the hub's as made on b; the hub's own rules untouched. A machine away or
// not joined is an error with nothing made, and a machine that is not a hub
// refuses another machine's rules.
func TestRulesOfAnotherMachineAreKeptThere(t *testing.T) {
	dir := t.TempDir()
	roots := func(string) []string { return []string{dir} }
	bTrail, hubTrail := &trail{}, &trail{}
	b := &node{name: "b", set: openSet(t, Options{Node: "b", Roots: roots, Audit: bTrail})}
	hub := openSet(t, Options{Node: "hub", Roots: roots, Audit: hubTrail, Remote: b})
	ctx := audit.WithActor(context.Background(), audit.ActorDevice+"d1")

	e, err := hub.AddAt(ctx, "b", Spec{Action: rules.Allow, Tool: "Bash", Command: "go test *"}, "phone")
	if err != nil {
		t.Fatal(err)
	}
	if e.N != 1 || e.CreatedBy != "phone at hub" {
		t.Fatalf("made on b: %+v, want b's rule 1 made by the phone at the hub", e)
	}
	if l := b.set.List(); len(l) != 1 || l[0].ID != e.ID {
		t.Fatalf("b lists %+v", l)
	}
	if l := hub.List(); len(l) != 0 {
		t.Fatalf("the hub's own rules: %+v, want none", l)
	}
	if l, err := hub.ListAt(ctx, "b"); err != nil || len(l) != 1 || l[0].ID != e.ID {
		t.Fatalf("b's rules at the hub: %+v, %v", l, err)
	}
	be, he := bTrail.entries(), hubTrail.entries()
	if len(be) != 1 || be[0].Actor != audit.ActorMachine+"hub" || be[0].Subject != "rule "+e.ID+" made at machine hub by phone" ||
		!strings.Contains(string(be[0].Detail), `"hub_actor":"device:d1"`) {
		t.Fatalf("b's trail: %+v", be)
	}
	if len(he) != 1 || he[0].Actor != audit.ActorDevice+"d1" || he[0].Subject != "rule "+e.ID+" made on machine b" {
		t.Fatalf("the hub's trail: %+v", he)
	}

	// A test at the hub answers by b's rules: b's own name is the call's
	// machine, its agent's roots the directory.
	a, err := hub.TestAt(ctx, "b", Probe{Tool: "Bash", Command: "go test ./..."})
	if err != nil || a.Action != rules.Allow || a.Rule != 1 {
		t.Fatalf("a test of b's rules: %+v, %v", a, err)
	}
	if a, _ := hub.TestAt(ctx, "", Probe{Tool: "Bash", Command: "go test ./..."}); a.Action != rules.Ask {
		t.Fatalf("a test of the hub's own rules: %+v, want ask", a)
	}

	// b judges what it is asked: a bad rule and an unknown id as b says.
	if _, err := hub.UpdateAt(ctx, "b", "r_none", Spec{Action: rules.Allow, Tool: "Bash"}); !errors.Is(err, chat.ErrNotFound) || !strings.Contains(err.Error(), "machine b") {
		t.Fatalf("a change of no rule on b: %v", err)
	}
	if _, err := hub.UpdateAt(ctx, "b", e.ID, Spec{Action: rules.Deny, Tool: "Bash", Command: "go test *"}); err != nil {
		t.Fatal(err)
	}
	if l := b.set.List(); l[0].Action != rules.Deny {
		t.Fatalf("b after a change at the hub: %+v", l)
	}

	// Away: refused, nothing made anywhere, nothing recorded.
	b.away = true
	if _, err := hub.AddAt(ctx, "b", Spec{Action: rules.Allow, Tool: "Edit"}, "phone"); !errors.Is(err, chat.ErrAway) {
		t.Fatalf("a rule for b while it is away: %v", err)
	}
	if _, err := hub.AddAt(ctx, "c", Spec{Action: rules.Allow, Tool: "Edit"}, "phone"); !errors.Is(err, chat.ErrBadInput) {
		t.Fatalf("a rule for a machine never joined: %v", err)
	}
	b.away = false
	if len(b.set.List()) != 1 || len(hub.List()) != 0 || len(hubTrail.entries()) != 2 || len(bTrail.entries()) != 2 {
		t.Fatalf("after the refusals: b %+v, hub %+v, trails %d and %d", b.set.List(), hub.List(), len(hubTrail.entries()), len(bTrail.entries()))
	}
	if err := hub.RemoveAt(ctx, "b", e.ID); err != nil || len(b.set.List()) != 0 {
		t.Fatalf("removed at the hub: %v, b lists %+v", err, b.set.List())
	}

	// A machine that is not a hub keeps only its own rules.
	if _, err := b.set.AddAt(ctx, "hub", Spec{Action: rules.Allow, Tool: "Edit"}, "phone"); !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "not a cluster's hub") {
		t.Fatalf("another machine's rule on a node: %v", err)
	}
}
