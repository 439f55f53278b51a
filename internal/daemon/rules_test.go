package daemon_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/ruleset"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

func (e *testEnv) client() client.API { return client.API{Server: e.url(), Token: e.d.Token()} }

// listRules is GET /api/rules.
func listRules(t *testing.T, api client.API) []ruleset.Entry {
	t.Helper()
	var out struct {
		Rules []ruleset.Entry `json:"rules"`
	}
	if err := api.Call(context.Background(), http.MethodGet, "/api/rules", nil, &out); err != nil {
		t.Fatal(err)
	}
	return out.Rules
}

// addRule is POST /api/rules; a refusal fails the test.
func addRule(t *testing.T, api client.API, sp ruleset.Spec) ruleset.Entry {
	t.Helper()
	var out struct {
		Rule ruleset.Entry `json:"rule"`
	}
	if err := api.Call(context.Background(), http.MethodPost, "/api/rules", sp, &out); err != nil {
		t.Fatal(err)
	}
	return out.Rule
}

// A rule added in the dashboard answers the next card at once, with no
// restart, and is named on the card's answer by its number after the
// config's rules; removed, it answers no more.
func TestStoredRuleAnswersCardsWithoutRestart(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) {
		c.Rules = []rules.Rule{{Action: rules.Deny, Tool: "Bash", Command: "rm *"}}
	})
	api := e.client()
	a := e.dial("rules", -1)
	a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")

	r := addRule(t, api, ruleset.Spec{Action: rules.Allow, Tool: "Bash", Command: "go test *"})
	if r.N != 2 || r.From != ruleset.FromDashboard || r.ID == "" || r.CreatedBy != "token" {
		t.Fatalf("added rule = %+v, want number 2 (after the config's), from the dashboard, made by the token", r)
	}
	a.Send(chatsock.Msg("m1", "permission Bash go test ./..."))
	i := a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionResolved), "the card answered by the rule")
	if by := chatsock.FieldOf(a.Get(i), "rule"); by != `rule 2 (allow tool=Bash "go test *")` {
		t.Fatalf("answered by %v, want rule 2", by)
	}
	a.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "permission: allow"), "the agent was allowed")
	a.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "turn over")

	// Removed: the same call asks a person again.
	if err := api.Call(context.Background(), http.MethodDelete, "/api/rules/"+r.ID, nil, &struct{}{}); err != nil {
		t.Fatal(err)
	}
	from := a.Len()
	a.Send(chatsock.Msg("m2", "permission Bash go test ./..."))
	j := a.WaitFor(from, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "the card asks again")
	for _, ev := range a.Snapshot()[from:] {
		if ev.Type == chat.TypePermissionResolved {
			t.Fatalf("a removed rule answered: %s", ev.Raw)
		}
	}
	rid := chatsock.FieldOf(a.Get(j), "request_id").(string)
	a.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "reject"})
	a.WaitFor(from, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "turn over")
}

// The API keeps the order (config first, then stored ones as made), refuses
// a rule that would not answer as written with a clear 400, keeps config
// rules read-only, and stored rules outlive a restart.
func TestRulesAPI(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) {
		c.Rules = []rules.Rule{{Action: rules.Deny, Command: "rm *"}}
	})
	api := e.client()
	ctx := context.Background()
	for _, bad := range []struct {
		spec ruleset.Spec
		want string
	}{
		{ruleset.Spec{Action: "always"}, "want allow, deny or ask"},
		{ruleset.Spec{Action: rules.Allow, Command: "go test; rm -rf ~"}, "one simple command"},
		{ruleset.Spec{Action: rules.Allow, Command: "echo $(id)"}, "one simple command"},
		{ruleset.Spec{Action: rules.Allow, For: "soon"}, "want a duration"},
		{ruleset.Spec{Action: rules.Allow, Paths: []string{"[x"}}, "paths"},
	} {
		err := api.Call(ctx, http.MethodPost, "/api/rules", bad.spec, &struct{}{})
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, bad.want) {
			t.Errorf("POST %+v: %v, want a 400 saying %q", bad.spec, err, bad.want)
		}
	}
	err := api.Call(ctx, http.MethodPost, "/api/rules", map[string]any{"action": "allow", "comand": "ls"}, &struct{}{})
	if ae := (*client.APIError)(nil); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "comand") {
		t.Errorf("a misspelt field: %v, want a 400 naming it", err)
	}

	first := addRule(t, api, ruleset.Spec{Action: rules.Allow, Tool: "Bash", Command: "go test *"})
	second := addRule(t, api, ruleset.Spec{Action: rules.Allow, Tool: "Edit", Paths: []string{"internal/*"}, For: "1h"})
	if second.ExpiresAt == nil || second.Expired {
		t.Errorf("a rule for 1h: %+v, want an expiry to come", second)
	}
	// An edit refused leaves the rule as it was; one taken changes it in place.
	if err := api.Call(ctx, http.MethodPut, "/api/rules/"+first.ID, ruleset.Spec{Action: "maybe"}, &struct{}{}); err == nil {
		t.Error("PUT of a bad rule was taken")
	}
	var upd struct{ Rule ruleset.Entry }
	if err := api.Call(ctx, http.MethodPut, "/api/rules/"+first.ID, ruleset.Spec{Action: rules.Allow, Tool: "Bash", Command: "go vet *"}, &upd); err != nil {
		t.Fatal(err)
	}
	if upd.Rule.N != 2 || upd.Rule.Command != "go vet *" {
		t.Errorf("edited rule = %+v, want number 2 with the new command", upd.Rule)
	}
	var probe ruleset.Answer
	if err := api.Call(ctx, http.MethodPost, "/api/rules/test", ruleset.Probe{Agent: "echo", Tool: "Bash", Command: "go vet ./... && rm -rf x"}, &probe); err != nil {
		t.Fatal(err)
	}
	if probe.Action != rules.Deny || probe.Rule != 1 {
		t.Errorf("test of a line with rm: %+v, want denied by rule 1 (the config's)", probe)
	}
	if err := api.Call(ctx, http.MethodPost, "/api/rules/test", ruleset.Probe{Agent: "echo", Tool: "Bash", Command: "go vet ./..."}, &probe); err != nil {
		t.Fatal(err)
	}
	if probe.Action != rules.Allow || probe.Rule != 2 {
		t.Errorf("test of go vet: %+v, want allowed by rule 2", probe)
	}

	// Config rules are listed, numbered first, and cannot be changed here.
	e.stop()
	e.start()
	api = e.client()
	got := listRules(t, api)
	if len(got) != 3 || got[0].From != ruleset.FromConfig || got[0].ID != "" || got[1].ID != first.ID || got[2].ID != second.ID || got[2].N != 3 {
		t.Fatalf("after a restart the rules are %+v, want the config's then the two made, in order", got)
	}
	if err := api.Call(ctx, http.MethodDelete, "/api/rules/"+first.ID, nil, &struct{}{}); err != nil {
		t.Fatal(err)
	}
	got = listRules(t, api)
	if len(got) != 2 || got[1].ID != second.ID || got[1].N != 2 {
		t.Fatalf("after removing rule 2: %+v, want the last one numbered 2", got)
	}
	err = api.Call(ctx, http.MethodDelete, "/api/rules/"+first.ID, nil, &struct{}{})
	if ae := (*client.APIError)(nil); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("removing it again: %v, want 404", err)
	}
}
