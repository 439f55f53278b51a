//go:build e2e

package claude_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

const answer = "Hello from the scripted model, in pieces."

// bashMarker is what the scripted Bash command prints. The command computes it
// (parley-$((6*7))), so the text appears in a tool result only when a shell
// really ran the command, never by echoing the command back.
const bashMarker = "parley-42"

func scenario() claudeapi.Scenario {
	q := func(multi bool) map[string]any {
		return map[string]any{"questions": []map[string]any{{
			"question": "Which colour?", "header": "Colour", "multiSelect": multi,
			"options": []map[string]string{{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}},
		}}}
	}
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(answer, 5, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("echo parley-$((6*7)) && touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
		{Match: claudeapi.Match{Exact: "ask me"}, Reply: claudeapi.ToolUse("AskUserQuestion", q(false))},
		{Match: claudeapi.Match{Exact: "ask me many"}, Reply: claudeapi.ToolUse("AskUserQuestion", q(true))},
		{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks for the answer.", 1, 0)},
		{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 400), 400, 50*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "remember"}, Reply: claudeapi.Text("Noted.", 1, 0)},
	}}
}

func TestPlainTurn(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("plain", -1)
	s.Send(chatsock.Msg("m1", "hello"))
	at := 0
	for _, st := range []string{chat.DeliveryQueued, chat.DeliveryDelivering, chat.DeliverySubmitted} {
		at = s.WaitFor(at, wait, chatsock.Delivery("m1", st), st)
	}
	end := s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "prompt_done end_turn")
	if got := chatsock.Chunks(s.Snapshot()[at:end]); got != answer {
		t.Fatalf("chunks add up to %q, want %q", got, answer)
	}
	// The person's message appears once.
	n := 0
	for _, ev := range s.Snapshot() {
		if ev.Type == chat.TypeUserMessage {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("user_message %d times, want once", n)
	}
}

func permissionCard(t *testing.T, s *chatsock.Conn, from int) (int, string) {
	t.Helper()
	i := s.WaitFor(from, wait, chatsock.Type(chat.TypePermissionRequest), "permission card")
	var p chat.PermissionRequest
	if err := s.Get(i).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Tool.Name != "Bash" {
		t.Fatalf("card for %q, want Bash", p.Tool.Name)
	}
	return i, p.RequestID
}

func TestPermissionAllowRunsTheTool(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("allow", -1)
	s.Send(chatsock.Msg("m1", "make the file"))
	i, rid := permissionCard(t, s, 0)
	s.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "resolved")
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && strings.Contains(fmt.Sprint(chatsock.FieldOf(e, "text")), "The command ran.")
	}, "follow-up text")
	s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
	if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}
	res, ok := r.api.ToolResultFor("Bash")
	if !ok || res.IsError {
		t.Fatalf("stand-in got tool result %+v (found %v), want a success", res, ok)
	}
	if !strings.Contains(res.ResultText(), bashMarker) {
		t.Fatalf("stand-in got tool result %q: want the command's output %q in it", res.ResultText(), bashMarker)
	}
}

func TestPermissionRejectWithReason(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("reject", -1)
	s.Send(chatsock.Msg("m1", "make the file"))
	_, rid := permissionCard(t, s, 0)
	s.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionRejectOnce, "message": "not in this folder"})
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
	testkit.Eventually(t, 10*time.Second, func() bool { _, ok := r.api.ToolResultFor("Bash"); return ok }, "the denial reached the model")
	res, _ := r.api.ToolResultFor("Bash")
	if !strings.Contains(res.ResultText(), "not in this folder") {
		t.Fatalf("tool result %q: want the person's reason in it", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err == nil || strings.Contains(res.ResultText(), bashMarker) {
		t.Fatal("the tool ran although it was rejected")
	}
}

func TestCardResolvedForEveryConnection(t *testing.T) {
	r := newRig(t, scenario(), nil)
	a := r.dial("two", -1)
	b := r.dial("two", -1)
	a.Send(chatsock.Msg("m1", "make the file"))
	_, rid := permissionCard(t, a, 0)
	permissionCard(t, b, 0)
	a.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	j := b.WaitFor(0, wait, chatsock.Type(chat.TypePermissionResolved), "resolved on the other connection")
	if chatsock.FieldOf(b.Get(j), "option_id") != chat.OptionAllowOnce {
		t.Fatalf("resolution %s", b.Get(j).Raw)
	}
	b.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionRejectOnce})
	k := b.WaitFor(j, wait, chatsock.Type(chat.TypeError), "late answer refused")
	if chatsock.FieldOf(b.Get(k), "code") != chat.CodeCardClosed || !strings.Contains(fmt.Sprint(chatsock.FieldOf(b.Get(k), "message")), "no longer open") {
		t.Fatalf("late answer: %s", b.Get(k).Raw)
	}
	a.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
}

func TestQuestionAnswers(t *testing.T) {
	cases := []struct {
		name, prompt string
		answer       any
		want         string
	}{
		{"a label", "ask me", "Blue", `"Which colour?"="Blue"`},
		{"two labels", "ask me many", []string{"Red", "Blue"}, `"Which colour?"="Red, Blue"`},
		{"free text", "ask me", "green, like grass", `"Which colour?"="green, like grass"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, scenario(), nil)
			s := r.dial("q", -1)
			s.Send(chatsock.Msg("m1", c.prompt))
			i := s.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
			var q chat.Question
			s.Get(i).Decode(&q)
			if len(q.Questions) != 1 || q.Questions[0].Question != "Which colour?" || len(q.Questions[0].Options) != 2 {
				t.Fatalf("card %s", s.Get(i).Raw)
			}
			if multi := c.prompt == "ask me many"; q.Questions[0].MultiSelect != multi {
				t.Fatalf("multi_select %v, want %v", q.Questions[0].MultiSelect, multi)
			}
			s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]any{"Which colour?": c.answer}})
			s.WaitFor(i, wait, chatsock.Type(chat.TypeQuestionResolved), "resolved")
			s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
			res, ok := r.api.ToolResultFor("AskUserQuestion")
			if !ok || !strings.Contains(res.ResultText(), c.want) {
				t.Fatalf("model got %q (found %v), want it to contain %s", res.ResultText(), ok, c.want)
			}
		})
	}
}

func TestStopDuringSlowAnswer(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("stop", -1)
	s.Send(chatsock.Msg("m1", "slowly"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeAgentChunk), "streaming")
	s.Send(map[string]any{"type": "stop"})
	// Every screen hears the stop taken before Claude Code ends the turn.
	st := s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeTurnStatus && e.Seq != 0 && chatsock.FieldOf(e, "stopping") == true
	}, "stopping")
	if d := s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopCancelled), "cancelled"); d < st {
		t.Fatalf("prompt_done cancelled (frame %d) came before the stopping status (frame %d)", d, st)
	}
	// The answer is 400 ticks over 20 s: the stop cut it short (how fast is
	// the benchmarks' to say, not a time limit here).
	ticks := 0
	for _, ev := range s.Snapshot() {
		if ev.Type == chat.TypeAgentChunk {
			ticks += strings.Count(fmt.Sprint(chatsock.FieldOf(ev, "text")), "tick")
		}
	}
	if ticks >= 400 {
		t.Errorf("%d ticks shown before the turn ended: the stop did not cut the answer short", ticks)
	}
	pids := r.agentPIDs()
	s.Send(chatsock.Msg("m2", "hello"))
	s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the next message works")
	if after := r.agentPIDs(); fmt.Sprint(after) != fmt.Sprint(pids) {
		t.Errorf("agent processes %v before, %v after: stop should keep the process", pids, after)
	}
}

func TestIdleUnloadResumesWithHistory(t *testing.T) {
	r := newRig(t, scenario(), func(c *config.Config) { c.Agents[0].IdleTimeout = config.Duration{Duration: 300 * time.Millisecond} })
	s := r.dial("idle", -1)
	s.Send(chatsock.Msg("m1", "remember"))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	s.WaitFor(0, wait, func(e client.Event) bool {
		return e.Type == chat.TypeSessionInfo && chatsock.FieldOf(e, "state") == "unloaded"
	}, "unloaded")
	testkit.Eventually(t, 10*time.Second, func() bool { return len(r.agentPIDs()) == 0 }, "the agent process was stopped")
	s.Send(chatsock.Msg("m2", "hello"))
	s.WaitFor(0, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "resumed turn")
	reqs := r.api.ScenarioRequests()
	last := reqs[len(reqs)-1]
	if texts := strings.Join(last.UserTexts(), "|"); !strings.Contains(texts, "remember") {
		t.Fatalf("the resumed session's request lacks the earlier turn: user texts %q", texts)
	}
}

func TestAgentKilledMidTurnThenRecovers(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("kill", -1)
	s.Send(chatsock.Msg("m0", "remember"))
	h := s.WaitFor(0, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "a first, whole turn")
	s.Send(chatsock.Msg("m1", "slowly"))
	// Well into the turn (five chunks, a quarter of a second at the stand-in's
	// pace), so Claude Code has written the earlier turn to its transcript: a kill
	// within a few ms of a turn's end can lose it, and the resume then reports
	// history_lost.
	for range 5 {
		h = s.WaitFor(h+1, wait, chatsock.Type(chat.TypeAgentChunk), "streaming")
	}
	killed := r.agentPIDs()
	kill(t, killed)
	i := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopError), "turn ends with error")
	s.WaitFor(0, wait, func(e client.Event) bool { return e.Type == chat.TypeError && e.Seq != 0 }, "an error event")
	s.Send(chatsock.Msg("m2", "hello"))
	s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the next message recovers")
	// A new process resumed the same conversation: the model sees the turns
	// before the crash.
	if after := r.agentPIDs(); len(after) != 1 || fmt.Sprint(after) == fmt.Sprint(killed) {
		t.Errorf("agent processes %v after the recovery (killed %v): want one new one", after, killed)
	}
	reqs := r.api.ScenarioRequests()
	texts := reqs[len(reqs)-1].UserTexts()
	// The killed turn's own message may or may not have reached the transcript;
	// the whole turn before it must have.
	if len(texts) < 2 || texts[0] != "remember" || texts[len(texts)-1] != "hello" {
		t.Fatalf("the recovered session's request: user texts %q, want the earlier turn (remember) before hello", texts)
	}
	noHistoryLost(t, s)
}

func TestDaemonRestartResumesWithHistory(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("restart", -1)
	s.Send(chatsock.Msg("m1", "remember"))
	i := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	thread := s.Get(i).Thread
	// Claude Code writes its transcript a little after the turn; a graceful stop
	// ends the session (the process exits).
	r.stop()
	testkit.Eventually(t, 20*time.Second, func() bool { return len(r.agentPIDs()) == 0 }, "the agent process ended with the daemon")
	before := len(r.api.ScenarioRequests())
	// The same data directory, a new daemon: the route still shows the thread,
	// and the next message resumes Claude's session.
	r.start()
	s2 := r.dial("restart", -1)
	j := s2.WaitFor(0, wait, func(e client.Event) bool { return e.Type == chat.TypeThread && e.Thread == thread }, "the same thread after the restart")
	s2.Send(chatsock.Msg("m2", "hello"))
	s2.WaitFor(j, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "a turn after the restart")
	s2.WaitFor(j, wait, func(e client.Event) bool {
		return e.Type == chat.TypeSessionInfo && chatsock.FieldOf(e, "state") == "resumed"
	}, "the session resumed")
	pids := r.agentPIDs()
	if len(pids) != 1 {
		t.Fatalf("agent processes after the restart: %v, want one", pids)
	}
	cmdline, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pids[0]), "cmdline"))
	if !strings.Contains(string(cmdline), "--resume") {
		t.Errorf("the agent after the restart was not started with --resume: %q", strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	reqs := r.api.ScenarioRequests()
	if len(reqs) <= before {
		t.Fatal("the stand-in got no request after the restart")
	}
	if texts := reqs[len(reqs)-1].UserTexts(); strings.Join(texts, "|") != "remember|hello" {
		t.Fatalf("the request after the restart: user texts %q, want the earlier turn (remember) before hello", texts)
	}
	noHistoryLost(t, s2)
}

// noHistoryLost fails the test when the thread says its earlier conversation
// could not be restored.
func noHistoryLost(t *testing.T, s *chatsock.Conn) {
	t.Helper()
	for _, ev := range s.Snapshot() {
		if ev.Type == chat.TypeError && chatsock.FieldOf(ev, "code") == chat.CodeNoHistory {
			t.Fatalf("the resume lost the history: %s", ev.Raw)
		}
	}
}

func TestReconnectMidTurnWithSince(t *testing.T) {
	r := newRig(t, scenario(), nil)
	a := r.dial("re", -1)
	a.Send(chatsock.Msg("m1", "make the file"))
	i, rid := permissionCard(t, a, 0)
	// Hold everything up to a point before the card, then reconnect.
	cut := a.Get(i - 1).Seq
	a.Client().CloseNow()
	b := r.dial("re", cut)
	j := b.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay")
	seen := map[int64]int{}
	openAgain := false
	for _, ev := range b.Snapshot()[:j] {
		if ev.Seq != 0 {
			seen[ev.Seq]++
		}
		if ev.Type == chat.TypePermissionRequest && ev.Seq == 0 && chatsock.FieldOf(ev, "request_id") == rid {
			openAgain = true
		}
	}
	for seq, n := range seen {
		if n != 1 || seq <= cut {
			t.Fatalf("seq %d seen %d times (since=%d)", seq, n, cut)
		}
	}
	for seq := cut + 1; seq <= a.Get(i).Seq; seq++ {
		if seen[seq] != 1 {
			t.Fatalf("seq %d missing from the replay", seq)
		}
	}
	if !openAgain {
		t.Fatal("the open card was not sent again after the replay")
	}
	b.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	b.WaitFor(j, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn goes on")
}

func TestNativeSessionResumedOnAnotherRoute(t *testing.T) {
	r := newRig(t, scenario(), nil)
	a := r.dial("first", -1)
	a.Send(chatsock.Msg("m1", "remember"))
	a.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	// The agent's own sessions for the directory, as the dashboard lists them.
	var list struct {
		Sessions []struct {
			ID  string `json:"session_id"`
			Cwd string `json:"cwd"`
		} `json:"sessions"`
	}
	// Claude Code writes its transcript a little after the turn: poll the list.
	testkit.Eventually(t, 20*time.Second, func() bool {
		req, _ := http.NewRequest("GET", "http://"+r.d.Addr()+"/api/agents/claude/sessions?cwd="+url.QueryEscape(r.work), nil)
		req.Header.Set("Authorization", "Bearer "+r.d.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&list) == nil && len(list.Sessions) > 0
	}, "the session in the agent's own list")
	if len(list.Sessions) != 1 || list.Sessions[0].ID == "" || list.Sessions[0].Cwd != r.work {
		t.Fatalf("native sessions: %+v, want the one session in %s", list, r.work)
	}
	// Another chat attaches it and goes on with the same conversation.
	b := r.dial("second", -1)
	b.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": list.Sessions[0].ID, "cwd": r.work})
	b.WaitFor(0, wait, chatsock.Type(chat.TypeThread), "the route shows the session's thread")
	b.Send(chatsock.Msg("m2", "hello"))
	b.WaitFor(0, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "turn on the resumed session")
	reqs := r.api.ScenarioRequests()
	if texts := strings.Join(reqs[len(reqs)-1].UserTexts(), "|"); !strings.Contains(texts, "remember") {
		t.Fatalf("the resumed conversation lacks the earlier turn: %q", texts)
	}
}
