//go:build e2e

package claude_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// auditOf is the rig's audit trail of a thread, as GET /api/audit answers it.
func (r *rig) auditOf(t *testing.T, thread string) []audit.Entry {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.d.Addr()+"/api/audit?thread="+thread, nil)
	req.Header.Set("Authorization", "Bearer "+r.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Entries []audit.Entry }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/audit: %d %v", resp.StatusCode, err)
	}
	return got.Entries
}

// A session a person made in a terminal, continued in parley and handed back
// with the real Claude Code: the thread's audit says who continued it and who
// handed it back, naming the session, never a message's text.
func TestContinueAndHandBackAreAudited(t *testing.T) {
	r := newRig(t, continueScenario(), nil)
	r.terminal(t, "-p", "remember the word teapot")
	id := r.onlySession(t)
	s := r.dial("phone", -1)
	continueSession(t, s, id, r.work)
	s.Send(chatsock.Msg("m1", "and the colour green"))
	at := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "parley's turn")
	s.Send(map[string]any{"type": "hand_back", "ref": "hb1"})
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "handed_back"), "handed back")
	s.WaitFor(at, wait, chatsock.Field(chat.TypeDone, "ref", "hb1"), "hand_back's done")

	th := r.thread(t, s)
	var got []string
	for _, e := range r.auditOf(t, string(th.ID)) {
		got = append(got, e.Kind+" by "+e.Actor+": "+e.Subject)
		if strings.Contains(e.Subject+string(e.Detail), "green") {
			t.Errorf("entry %d holds a message's text: %s %s", e.Seq, e.Subject, e.Detail)
		}
		if e.Kind == audit.KindSessionContinue || e.Kind == audit.KindSessionHandBack {
			var d map[string]any
			json.Unmarshal(e.Detail, &d)
			if d["session_id"] != id || d["agent"] != "claude" || d["route"] != "web:phone" {
				t.Errorf("%s's detail: %s", e.Kind, e.Detail)
			}
		}
	}
	want := []string{
		"session.continue by token: claude session " + id + " continued",
		"message.sent by token: message m1 sent",
		"session.handback by token: claude session " + id + " handed back to a terminal",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the thread's audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
