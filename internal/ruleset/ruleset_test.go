package ruleset

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// A stored rule's `for` counts from when it was saved: it answers until
// then, is listed as expired after, and an edit makes it hold again.
func TestStoredRuleExpires(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s, err := Open(context.Background(), Options{Store: st, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	call := rules.Call{Tool: "Bash", Command: "make check", Dir: dir, Roots: []string{dir}}
	sp := Spec{Action: rules.Allow, Tool: "Bash", Command: "make *", For: "1h"}
	e, err := s.Add(context.Background(), sp, "phone")
	if err != nil {
		t.Fatal(err)
	}
	if e.CreatedBy != "phone" || e.ExpiresAt == nil || !e.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("added %+v, want made by phone, expiring in an hour", e)
	}
	now = now.Add(59 * time.Minute)
	if v := s.Decide(call); v.Action != rules.Allow || v.Rule != 1 {
		t.Fatalf("within the hour: %+v, want allowed by rule 1", v)
	}
	now = now.Add(2 * time.Minute)
	if v := s.Decide(call); v.Action != rules.Ask {
		t.Fatalf("after the hour: %+v, want ask", v)
	}
	if l := s.List(); len(l) != 1 || !l[0].Expired {
		t.Fatalf("after the hour the list is %+v, want the rule shown expired", l)
	}
	if _, err := s.Update(context.Background(), e.ID, sp); err != nil {
		t.Fatal(err)
	}
	if v := s.Decide(call); v.Action != rules.Allow {
		t.Fatalf("edited: %+v, want allowed again for an hour from the edit", v)
	}
	// A restart reads the same rule with the same start.
	again, err := Open(context.Background(), Options{Store: st, Now: func() time.Time { return now.Add(time.Hour + time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	if v := again.Decide(call); v.Action != rules.Ask {
		t.Fatalf("an hour after the edit, reopened: %+v, want ask", v)
	}
}
