package daemon_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// The audit trail answers "who let this agent do what, from where": a
// paired device's messages and card answers name the device, a rule's answer
// names the rule, a rule made and the revocation name who did it; never a
// message's text.
// The trail is listed per device and per thread, and verifies after a
// restart.
func TestAuditRecordsWhoDidWhat(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) {
		c.Rules = []rules.Rule{{Action: rules.Deny, Tool: "Bash", Command: "rm *"}}
	})
	tok := e.d.Token()
	var pc pairCode
	if st := e.call("POST", "/api/pair-codes", tok, map[string]string{"name": "phone"}, &pc); st != 200 {
		t.Fatalf("pair code: %d", st)
	}
	var paired struct {
		DeviceID string `json:"device_id"`
		Token    string `json:"token"`
	}
	if st := e.call("POST", "/api/pair", "", map[string]string{"code": pc.Code}, &paired); st != 200 {
		t.Fatalf("pair: %d", st)
	}
	dev := paired.DeviceID
	c := chatsock.Dial(t, e.url(), paired.Token, client.Options{Chat: "audit", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "permission Bash secret words"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	rid := chatsock.FieldOf(c.Snapshot()[i], "request_id").(string)
	c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "allow"})
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn over")
	c.Send(chatsock.Msg("m2", "permission Bash rm -rf /"))
	c.WaitFor(0, 5*time.Second, func(ev client.Event) bool {
		text, _ := chatsock.FieldOf(ev, "text").(string)
		return ev.Type == chat.TypeAgentChunk && strings.HasPrefix(text, "permission: reject")
	}, "the rule denied")
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "second turn over")
	if st := e.call("POST", "/api/rules", tok, map[string]string{"action": "allow", "tool": "Read"}, nil); st != 200 && st != 201 {
		t.Fatalf("make a rule: %d", st)
	}
	if st := e.call("DELETE", "/api/devices/"+dev, tok, nil, nil); st != http.StatusNoContent && st != 200 {
		t.Fatalf("revoke: %d", st)
	}

	var all struct{ Entries []audit.Entry }
	if st := e.getJSON("/api/audit", &all); st != 200 {
		t.Fatalf("GET /api/audit: %d", st)
	}
	var got []string
	thread := ""
	for _, en := range all.Entries {
		got = append(got, en.Kind+" by "+en.Actor)
		if strings.Contains(string(en.Detail)+en.Subject, "secret words") {
			t.Errorf("entry %d holds a message's text: %s %s", en.Seq, en.Subject, en.Detail)
		}
		if en.Kind == audit.KindMessageSent {
			thread = en.Thread
		}
	}
	want := []string{
		"pair by device:" + dev,
		"message.sent by device:" + dev,
		"card.answer by device:" + dev,
		"message.sent by device:" + dev,
		"card.answer by rule:1",
		"rule.change by token",
		"device.revoke by token",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var byDev, byThread struct{ Entries []audit.Entry }
	e.getJSON("/api/audit?device="+dev, &byDev)
	e.getJSON("/api/audit?thread="+thread, &byThread)
	if len(byDev.Entries) != 4 || len(byThread.Entries) != 4 {
		t.Fatalf("per device %d entries, per thread %d; want 4 and 4", len(byDev.Entries), len(byThread.Entries))
	}
	if st := e.getJSON("/api/audit?since=yesterday", nil); st != http.StatusBadRequest {
		t.Fatalf("a bad since: %d, want 400", st)
	}

	// After a restart the chain goes on from where it was, and verifies.
	e.stop()
	e.start()
	e.call("POST", "/api/pair-codes", tok, map[string]string{"name": "again"}, &pc)
	e.call("POST", "/api/pair", "", map[string]string{"code": pc.Code}, nil)
	e.stop()
	r, err := sqlite.OpenAuditReader(context.Background(), filepath.Join(e.cfg.DataDir, "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := audit.Verify(context.Background(), r); err != nil || n != 8 {
		t.Fatalf("verify: %d entries, %v; want 8, nil", n, err)
	}
}
