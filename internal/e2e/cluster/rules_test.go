//go:build e2e

package cluster_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/ruleset"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

type ruleList struct {
	Rules   []ruleset.Entry `json:"rules"`
	Machine string          `json:"machine"`
}

// ruleResolution is the one permission_resolved among evs.
func ruleResolution(t *testing.T, evs []client.Event) chat.PermissionResolved {
	t.Helper()
	var out []chat.PermissionResolved
	for _, e := range evs {
		if e.Type == chat.TypePermissionResolved {
			var p chat.PermissionResolved
			if err := e.Decode(&p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d permission answers, want 1", len(out))
	}
	return out[0]
}

// hubRules runs the parley command at the hub (its config: its data
// directory, its cluster listener) and returns what it printed.
func (r *rig) hubRules(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// The address file `parley serve` writes, for the command to find the
	// hub's daemon (here in the test's process).
	if err := os.WriteFile(filepath.Join(r.hub.cfg.DataDir, "addr"), []byte(r.hub.d.LinkAddr()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "hub.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("data = %q\n[cluster]\nlisten = %q\nnode = \"hub\"\n",
		r.hub.cfg.DataDir, r.hub.cfg.Cluster.Listen)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testkit.ParleyBinary(t), append(args, "--config", cfg)...)
	cmd.Env = append(os.Environ(), "PARLEY_CONFIG=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ruleChanges are the rule.change entries of m's audit trail.
func ruleChanges(m *machine) []audit.Entry {
	var a struct {
		Entries []audit.Entry `json:"entries"`
	}
	m.get("/api/audit", &a)
	var out []audit.Entry
	for _, e := range a.Entries {
		if e.Kind == audit.KindRuleChange {
			out = append(out, e)
		}
	}
	return out
}

// A rule made at the hub for machine b is kept on b (b lists it, the hub's
// own rules stay empty), recorded in both trails with who made it, tested
// at the hub against b's rules, and answers b's next matching card with
// nobody asked: the hub's view of b's thread shows it answered by rule 1,
// and Claude Code on b ran the command. With b away a rule for it is
// refused saying so, and nothing is made anywhere; with the hub away b
// still answers by its rule.
func TestARuleMadeAtTheHubAnswersTheNodesCards(t *testing.T) {
	r := newRig(t)
	spec := map[string]any{"action": "allow", "tool": "Bash", "command": "touch *"}
	st, body := r.hub.rest("POST", "/api/rules?machine=b", spec)
	if st != http.StatusOK {
		t.Fatalf("a rule for b at the hub: %d %s", st, body)
	}
	var made struct{ Rule ruleset.Entry }
	if err := json.Unmarshal(body, &made); err != nil {
		t.Fatal(err)
	}
	if made.Rule.N != 1 || made.Rule.ID == "" || made.Rule.CreatedBy != "token at hub" {
		t.Fatalf("the hub answered %+v, want b's rule 1 made by the token at the hub", made.Rule)
	}
	var atB, atHub, bAtHub ruleList
	r.node.get("/api/rules", &atB)
	r.hub.get("/api/rules", &atHub)
	r.hub.get("/api/rules?machine=b", &bAtHub)
	if len(atB.Rules) != 1 || atB.Rules[0].ID != made.Rule.ID || atB.Rules[0].Command != "touch *" {
		t.Fatalf("b's own rules: %+v, want the rule made at the hub", atB.Rules)
	}
	if len(atHub.Rules) != 0 {
		t.Fatalf("the hub's own rules: %+v, want none (the rule is b's)", atHub.Rules)
	}
	if bAtHub.Machine != "b" || len(bAtHub.Rules) != 1 || bAtHub.Rules[0].ID != made.Rule.ID {
		t.Fatalf("b's rules read at the hub: %+v", bAtHub)
	}

	// Both trails say who made it: b's names the hub and the token there,
	// the hub's names machine b.
	onB, onHub := ruleChanges(r.node), ruleChanges(r.hub)
	if len(onB) != 1 || onB[0].Actor != audit.ActorMachine+"hub" || !strings.Contains(onB[0].Subject, made.Rule.ID+" made at machine hub by token") {
		t.Fatalf("b's trail: %+v, want the rule made by machine hub for the token", onB)
	}
	if len(onHub) != 1 || onHub[0].Actor != audit.ActorToken || onHub[0].Subject != "rule "+made.Rule.ID+" made on machine b" {
		t.Fatalf("the hub's trail: %+v, want the rule made on machine b by the token", onHub)
	}

	// A test at the hub answers with b's rules; the hub's own say ask.
	var a ruleset.Answer
	st, body = r.hub.rest("POST", "/api/rules/test?machine=b", map[string]any{"agent": "claude", "tool": "Bash", "command": "touch x"})
	if err := json.Unmarshal(body, &a); st != http.StatusOK || err != nil || a.Action != "allow" || a.Rule != 1 {
		t.Fatalf("a test of b's rules at the hub: %d %s", st, body)
	}

	// `parley rules --machine b` at the hub lists b's, and its test answers
	// by them.
	if out, err := r.hubRules(t, "rules", "--machine", "b"); err != nil || !strings.HasPrefix(out, "1\tallow tool=Bash \"touch *\"\t(dashboard "+made.Rule.ID+" by token at hub)") {
		t.Fatalf("parley rules --machine b at the hub: %v\n%s", err, out)
	}
	if out, err := r.hubRules(t, "rules", "test", "--machine", "b", "--agent", "claude", "--tool", "Bash", "--command", "touch x"); err != nil || !strings.HasPrefix(out, "allow by rule 1") {
		t.Fatalf("parley rules test --machine b at the hub: %v\n%s", err, out)
	}

	// b's next matching card is answered by it, seen from the hub.
	s := r.hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "touch it", r.work))
	end := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn on b")
	res := ruleResolution(t, s.Snapshot()[:end])
	if res.By == nil || res.By.Channel != "rule" || res.By.Chat != "1" || res.Rule != `rule 1 (allow tool=Bash "touch *")` || res.OptionID != chat.OptionAllowOnce {
		t.Fatalf("b's card as the hub shows it: %+v, want allowed by rule 1", res)
	}
	if _, err := os.Stat(filepath.Join(r.work, "made-by-rule")); err != nil {
		t.Fatalf("the allowed command did not run on b: %v", err)
	}
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))

	// b away: a rule for it is refused, saying so, and made nowhere.
	r.node.stop()
	st, body = r.hub.rest("POST", "/api/rules?machine=b", map[string]any{"action": "deny", "tool": "Bash"})
	if st != http.StatusServiceUnavailable || !strings.Contains(string(body), "machine b does not answer") || !strings.Contains(string(body), "nothing was changed") {
		t.Fatalf("a rule for b while it is away: %d %s", st, body)
	}
	if st, body := r.hub.rest("GET", "/api/rules?machine=b", nil); st != http.StatusServiceUnavailable {
		t.Fatalf("b's rules while it is away: %d %s", st, body)
	}
	if out, err := r.hubRules(t, "rules", "--machine", "b"); err == nil || !strings.Contains(out, "machine b does not answer") {
		t.Fatalf("parley rules --machine b with b away: %v\n%s", err, out)
	}
	r.hub.get("/api/rules", &atHub)
	if len(atHub.Rules) != 0 || len(ruleChanges(r.hub)) != 1 {
		t.Fatalf("after the refused rule the hub has rules %+v and trail %+v", atHub.Rules, ruleChanges(r.hub))
	}
	r.node.start()
	r.waitOnline(true)
	r.node.get("/api/rules", &atB)
	if len(atB.Rules) != 1 || len(ruleChanges(r.node)) != 1 {
		t.Fatalf("b back: rules %+v, trail %+v, want only the first rule", atB.Rules, ruleChanges(r.node))
	}

	// The hub away: b answers its own cards by its rule.
	r.hub.stop()
	os.Remove(filepath.Join(r.work, "made-by-rule"))
	_, local, _ := cluster.SplitRemoteID(remoteID)
	onb := r.node.dial("own", -1, local)
	from := onb.Len()
	onb.Send(chatsock.Msg("m2", "touch it"))
	end = onb.WaitFor(from, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the turn on b, the hub away")
	if res := ruleResolution(t, onb.Snapshot()[from:end]); res.By == nil || res.By.Chat != "1" || res.OptionID != chat.OptionAllowOnce {
		t.Fatalf("b's card with the hub away: %+v, want allowed by rule 1", res)
	}
}
