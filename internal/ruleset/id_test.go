package ruleset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// openAt is a Set over the real SQLite store in dir (its database opened
// again when called again: a restart), and a function to close that store.
func openAt(t *testing.T, dir string, opt Options) (*Set, func()) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opt.Store = st
	s, err := Open(context.Background(), opt)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return s, func() { st.Close() }
}

// The same rule add sent twice (its first answer lost) is one rule: the
// second answers the first's rule, says it existed, and the trail records
// it once. After a restart (its SQLite opened again) the same add still
// finds it. The same id with another rule is refused, the kept one
// unchanged, and it still answers the cards it did.
func TestTheSameRuleAddSentAgainIsOneRule(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	call := rules.Call{Tool: "Bash", Command: "go test ./...", Dir: work, Roots: []string{work}}
	tr := &trail{}
	s, closeStore := openAt(t, dir, Options{Audit: tr})
	sp := Spec{ID: "r_retry-1", Action: rules.Allow, Tool: "Bash", Command: "go test *"}
	first, existed, err := s.add(context.Background(), sp, "phone")
	if err != nil || existed || first.ID != sp.ID || first.N != 1 {
		t.Fatalf("first add: %+v existed=%v %v, want rule %s made, number 1", first, existed, err, sp.ID)
	}
	again, existed, err := s.add(context.Background(), sp, "phone")
	if err != nil || !existed || again.ID != first.ID || !again.CreatedAt.Equal(*first.CreatedAt) {
		t.Fatalf("the same add again: %+v existed=%v %v, want the first's rule", again, existed, err)
	}
	if l := s.List(); len(l) != 1 {
		t.Fatalf("%d rules after the same add twice, want 1: %+v", len(l), l)
	}
	if es := tr.entries(); len(es) != 1 || es[0].Subject != "rule "+sp.ID+" made" {
		t.Fatalf("the trail after the same add twice: %+v, want one rule made", es)
	}

	// parley restarts: the add sent again finds the kept rule.
	closeStore()
	s, closeStore = openAt(t, dir, Options{Audit: tr})
	defer closeStore()
	again, existed, err = s.add(context.Background(), sp, "phone")
	if err != nil || !existed || again.ID != sp.ID || again.N != 1 {
		t.Fatalf("the same add after a restart: %+v existed=%v %v, want the kept rule", again, existed, err)
	}
	other := sp
	other.Command = "rm *"
	if _, err := s.Add(context.Background(), other, "phone"); !errors.Is(err, chat.ErrIDTaken) || !strings.Contains(err.Error(), "choose a new id") {
		t.Fatalf("the same id, another rule: %v, want ErrIDTaken", err)
	}
	if l := s.List(); len(l) != 1 || l[0].Command != "go test *" {
		t.Fatalf("after the refused add: %+v, want the one rule unchanged", l)
	}
	if v := s.Decide(call); v.Action != rules.Allow || v.Rule != 1 {
		t.Fatalf("a call the rule allows: %+v, want allowed by rule 1", v)
	}
	if es := tr.entries(); len(es) != 1 {
		t.Fatalf("the trail after the repeats and the refusal: %+v, want the one rule made", es)
	}
}

// A rule's id must be letters, digits, "_" and "-", at most chat.MaxAddID
// bytes: anything else is refused saying so, here and at a hub for another
// machine (before that machine is asked), and nothing is kept.
func TestABadRuleIDIsRefused(t *testing.T) {
	b := &node{name: "b", set: openSet(t, Options{Node: "b"})}
	hub := openSet(t, Options{Node: "hub", Remote: b})
	for _, id := range []string{"a@b", "has space", "a/b", "../x", "é", "x\n", strings.Repeat("x", chat.MaxAddID+1)} {
		sp := Spec{ID: id, Action: rules.Allow, Tool: "Edit"}
		for _, machine := range []string{"", "b"} {
			if _, err := hub.AddAt(context.Background(), machine, sp, "phone"); !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "id") {
				t.Errorf("id %q on machine %q: %v, want bad input about the id", id, machine, err)
			}
		}
	}
	if l, bl := hub.List(), b.set.List(); len(l) != 0 || len(bl) != 0 {
		t.Errorf("refused adds were kept: %+v, on b %+v", l, bl)
	}
	if _, err := hub.Add(context.Background(), Spec{ID: strings.Repeat("x", chat.MaxAddID), Action: rules.Allow, Tool: "Edit"}, "phone"); err != nil {
		t.Errorf("an id of %d bytes: %v", chat.MaxAddID, err)
	}
}

// Over POST /api/rules: the same add twice answers 200 both times with one
// rule, the second saying it existed; the id with another rule is a 409
// id_taken; a bad id a 400. A removal sent twice answers 404 the second
// time: it is gone either way.
func TestTheRulesAPIAnswersTheSameAddOnce(t *testing.T) {
	s := openSet(t, Options{Node: "here"})
	mux := http.NewServeMux()
	s.Handle(func(p string, h http.Handler) { mux.Handle(p, h) })
	send := func(method, path string, body map[string]any) (int, map[string]any) {
		b, _ := json.Marshal(body)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(string(b))))
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("answer %d %q: %v", w.Code, w.Body, err)
		}
		return w.Code, out
	}
	add := map[string]any{"id": "r_web1", "action": "allow", "tool": "Bash", "command": "make check"}
	st, first := send(http.MethodPost, "/api/rules", add)
	if st != 200 || first["existed"] != nil {
		t.Fatalf("first add: %d %v", st, first)
	}
	st, again := send(http.MethodPost, "/api/rules", add)
	if st != 200 || again["existed"] != true || again["rule"].(map[string]any)["id"] != "r_web1" {
		t.Fatalf("the same add again: %d %v, want 200 with the rule, existed", st, again)
	}
	add["action"] = "deny"
	if st, out := send(http.MethodPost, "/api/rules", add); st != http.StatusConflict || out["error"].(map[string]any)["code"] != chat.CodeIDTaken {
		t.Fatalf("the id with another action: %d %v, want 409 %s", st, out, chat.CodeIDTaken)
	}
	add["id"] = "r@hub"
	if st, out := send(http.MethodPost, "/api/rules", add); st != http.StatusBadRequest || !strings.Contains(out["error"].(map[string]any)["message"].(string), "id") {
		t.Fatalf("a bad id: %d %v, want 400 about the id", st, out)
	}
	if l := s.List(); len(l) != 1 || l[0].Action != rules.Allow {
		t.Fatalf("kept: %+v, want the first add's one rule", l)
	}
	if st, _ := send(http.MethodDelete, "/api/rules/r_web1", nil); st != 200 {
		t.Fatalf("remove: %d", st)
	}
	if st, out := send(http.MethodDelete, "/api/rules/r_web1", nil); st != http.StatusNotFound || out["error"].(map[string]any)["code"] != chat.CodeNotFound {
		t.Fatalf("the removal again: %d %v, want 404 not_found", st, out)
	}
}

// loses is a Remote whose node keeps what it is asked but whose first
// answer is lost on the way back.
type loses struct {
	node
	lost bool
}

func (l *loses) Ask(ctx context.Context, machine string, req []byte) ([]byte, error) {
	out, err := l.node.Ask(ctx, machine, req)
	if err == nil && !l.lost {
		l.lost = true
		return nil, fmt.Errorf("machine %s did not answer in time: %w", machine, context.DeadlineExceeded)
	}
	return out, err
}

// At a hub's API, an add for node b whose answer is lost is a 503
// "unanswered" saying it may have been made and can be sent again; sent
// again it is 200 with b's one rule, existed.
func TestAtTheHubALostAnswerIsA503Unanswered(t *testing.T) {
	b := &loses{node: node{name: "b", set: openSet(t, Options{Node: "b"})}}
	hub := openSet(t, Options{Node: "hub", Remote: b})
	mux := http.NewServeMux()
	hub.Handle(func(p string, h http.Handler) { mux.Handle(p, h) })
	post := func() (int, map[string]any) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/rules?machine=b",
			strings.NewReader(`{"id": "r_lost", "action": "allow", "tool": "Bash", "command": "make check"}`)))
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("answer %d %q: %v", w.Code, w.Body, err)
		}
		return w.Code, out
	}
	st, out := post()
	if e, _ := out["error"].(map[string]any); st != http.StatusServiceUnavailable || e["code"] != chat.CodeUnanswered ||
		!strings.Contains(e["message"].(string), "may have been made") {
		t.Fatalf("the add whose answer was lost: %d %v, want 503 %s saying it may have been made", st, out, chat.CodeUnanswered)
	}
	st, out = post()
	if st != 200 || out["existed"] != true || out["rule"].(map[string]any)["id"] != "r_lost" {
		t.Fatalf("sent again: %d %v, want 200 with b's rule, existed", st, out)
	}
	if l := b.set.List(); len(l) != 1 {
		t.Fatalf("b keeps %+v, want one rule", l)
	}
}
