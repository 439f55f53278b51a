//go:build e2e

package claude_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// A session a person made in a terminal, continued in parley and handed back.

func continueScenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "remember the word teapot"}, Reply: claudeapi.Text("Remembered teapot.", 1, 0)},
		{Match: claudeapi.Match{Exact: "and the colour green"}, Reply: claudeapi.Text("Green noted.", 1, 0)},
		{Match: claudeapi.Match{Exact: "and the number nine"}, Reply: claudeapi.Text("Nine noted.", 1, 0)},
		{Match: claudeapi.Match{Exact: "what was the word?"}, Reply: claudeapi.Text("teapot", 1, 0)},
	}}
}

// terminal runs the real claude as a person would in a shell in the rig's
// work directory (the agent's HOME and model API), and returns its output.
func (r *rig) terminal(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(r.cfg.Agents[0].Command, args...)
	cmd.Dir = r.work
	cmd.Env = os.Environ()
	for k, v := range r.cfg.Agents[0].Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// onlySession is the id of the one session Claude Code keeps for the rig.
func (r *rig) onlySession(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.home, ".claude", "projects", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("Claude Code's transcripts: %q, want one", files)
	}
	return strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
}

// imported lists the texts of the imported messages and answers in evs, as
// "user: …" and "agent: …".
func imported(evs []client.Event) []string {
	var out []string
	for _, e := range evs {
		if chatsock.FieldOf(e, "imported") != true {
			continue
		}
		switch e.Type {
		case chat.TypeUserMessage:
			out = append(out, "user: "+chatsock.FieldOf(e, "text").(string))
		case chat.TypeAgentChunk:
			out = append(out, "agent: "+chatsock.FieldOf(e, "text").(string))
		}
	}
	return out
}

// continueSession sends resume_session for id and waits for parley's answer
// that the session is continued here.
func continueSession(t *testing.T, s *chatsock.Conn, id, cwd string) int {
	t.Helper()
	at := s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": cwd})
	return s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "the session continued here")
}

func TestContinueTerminalSessionImportsItsTurns(t *testing.T) {
	r := newRig(t, continueScenario(), nil)
	r.terminal(t, "-p", "remember the word teapot")
	id := r.onlySession(t)

	s := r.dial("phone", -1)
	at := continueSession(t, s, id, r.work)
	want := []string{"user: remember the word teapot", "agent: Remembered teapot."}
	if got := imported(s.Snapshot()[:at]); !slices.Equal(got, want) {
		t.Fatalf("imported turns: got %q want %q\n%s", got, want, chatsock.Summary(s.Snapshot()))
	}

	// The next message goes to the agent with its whole memory.
	s.Send(chatsock.Msg("m1", "what was the word?"))
	s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn on the continued session")
	reqs := r.api.ScenarioRequests()
	if got := reqs[len(reqs)-1].UserTexts(); !slices.Equal(got, []string{"remember the word teapot", "what was the word?"}) {
		t.Errorf("the model's request after continuing: user texts %q, want the terminal's turn first", got)
	}

	// In every replay, and searchable.
	again := r.dial("laptop", -1)
	continueSession(t, again, id, r.work) // the same thread: nothing new to import
	if got := imported(again.Snapshot()); !slices.Equal(got, want) {
		t.Errorf("imported turns in another replay: got %q want %q (once)", got, want)
	}
	req, _ := http.NewRequest("GET", "http://"+r.d.Addr()+"/api/search?q="+url.QueryEscape("teapot"), nil)
	req.Header.Set("Authorization", "Bearer "+r.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var found struct {
		Hits []chat.SearchHit `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil || len(found.Hits) == 0 {
		t.Errorf("search for an imported word: %+v, %v", found, err)
	}
}

// The tools a terminal session ran come with its turns: each call as a
// tool_call and its result as a tool_call_update, marked imported, ended
// (never a call in flight, never a card), between the texts they came between.
func TestContinueImportsTheToolCalls(t *testing.T) {
	sc := continueScenario()
	sc.Rules = append(sc.Rules,
		claudeapi.Rule{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-in-terminal", "Make a file")},
		claudeapi.Rule{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)})
	r := newRig(t, sc, nil)
	r.terminal(t, "-p", "make the file", "--allowedTools", "Bash")
	if _, err := os.Stat(filepath.Join(r.work, "made-in-terminal")); err != nil {
		t.Fatalf("the terminal's command did not run: %v", err)
	}
	id := r.onlySession(t)
	toolID := r.api.ToolUseIDs("Bash")[0]

	s := r.dial("phone", -1)
	at := continueSession(t, s, id, r.work)
	var got []string
	for _, e := range s.Snapshot()[:at] {
		switch e.Type {
		case chat.TypeUserMessage, chat.TypeAgentChunk:
			if chatsock.FieldOf(e, "imported") == true {
				got = append(got, e.Type+" "+fmt.Sprint(chatsock.FieldOf(e, "text")))
			}
		case chat.TypeToolCall:
			got = append(got, fmt.Sprintf("%s %v %v %v imported=%v", e.Type, chatsock.FieldOf(e, "tool_call_id"), chatsock.FieldOf(e, "title"),
				chatsock.FieldOf(e, "status"), chatsock.FieldOf(e, "imported")))
		case chat.TypeToolCallUpdate:
			got = append(got, fmt.Sprintf("%s %v %v imported=%v", e.Type, chatsock.FieldOf(e, "tool_call_id"), chatsock.FieldOf(e, "status"),
				chatsock.FieldOf(e, "imported")))
		case chat.TypePermissionRequest, chat.TypeQuestion:
			t.Errorf("a card from the imported turns: %s", e.Raw)
		}
	}
	want := []string{
		"user_message make the file",
		"tool_call " + toolID + " touch made-in-terminal completed imported=true",
		"tool_call_update " + toolID + " completed imported=true",
		"agent_chunk The command ran.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("imported:\n got %q\nwant %q\n%s", got, want, chatsock.Summary(s.Snapshot()))
	}
}

// A session that runs in a terminal now is not continued, nor resumed by a
// message to its thread: two processes on one session fork its transcript.
// Once the terminal's process ended, it continues, with the turn it added.
func TestSessionRunningInATerminalIsRefused(t *testing.T) {
	sc := continueScenario()
	sc.Rules = append(sc.Rules, claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 50), 50, 100*time.Millisecond)})
	r := newRig(t, sc, nil)
	r.terminal(t, "-p", "remember the word teapot")
	id := r.onlySession(t)
	s := r.dial("phone", -1)
	continueSession(t, s, id, r.work)

	running := r.terminalRunning(t, id, "-p", "--resume", id, "slowly")
	at := s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": r.work})
	e := s.Get(s.WaitFor(at, wait, chatsock.Type(chat.TypeError), "the refusal"))
	if chatsock.FieldOf(e, "code") != chat.CodeSessionRunning || !strings.Contains(chatsock.FieldOf(e, "message").(string), fmt.Sprintf("pid %d", running.Process.Pid)) {
		t.Fatalf("refusal: %s, want code %s naming pid %d", e.Raw, chat.CodeSessionRunning, running.Process.Pid)
	}
	// A message to the thread does not start a second process either.
	s.Send(chatsock.Msg("m1", "what was the word?"))
	failed := s.Get(s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryFailed), "the message refused"))
	if !strings.Contains(chatsock.FieldOf(failed, "detail").(string), "not started by parley") {
		t.Errorf("failed receipt: %s", failed.Raw)
	}
	if err := running.Wait(); err != nil {
		t.Fatalf("the terminal's claude: %v", err)
	}

	// It ended: continued here, with what the terminal added.
	at = continueSession(t, s, id, r.work)
	want := []string{"user: remember the word teapot", "agent: Remembered teapot.", "user: slowly", "agent: " + strings.TrimSpace(strings.Repeat("tick ", 50))}
	if got := imported(s.Snapshot()[:at]); !slices.Equal(got, want) {
		t.Fatalf("imported turns: got %q want %q", got, want)
	}
}

// terminalRunning starts the real claude as terminal does, and returns once
// Claude Code says (its ~/.claude/sessions/<pid>.json) it runs session id.
func (r *rig) terminalRunning(t *testing.T, id string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(r.cfg.Agents[0].Command, args...)
	cmd.Dir = r.work
	cmd.Env = os.Environ()
	for k, v := range r.cfg.Agents[0].Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	reg := filepath.Join(r.home, ".claude", "sessions", fmt.Sprintf("%d.json", cmd.Process.Pid))
	testkit.Eventually(t, wait, func() bool {
		b, err := os.ReadFile(reg)
		return err == nil && strings.Contains(string(b), id)
	}, "Claude Code's record of the running session")
	return cmd
}

// Continued here, handed back, resumed with the very command parley showed
// in a terminal (the real claude), continued here again: each side has the
// other's turns, and the thread holds every turn once.
func TestHandBackAndContinueAgain(t *testing.T) {
	r := newRig(t, continueScenario(), nil)
	r.terminal(t, "-p", "remember the word teapot")
	id := r.onlySession(t)
	s := r.dial("phone", -1)
	continueSession(t, s, id, r.work)
	s.Send(chatsock.Msg("m1", "and the colour green"))
	at := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "parley's turn")

	s.Send(map[string]any{"type": "hand_back", "ref": "hb1"})
	hbAt := s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "handed_back"), "handed back")
	hb := s.Get(hbAt)
	// Answered like the other controls: done {ref}. It may come before the
	// handed_back event: prompt_done is on the socket while the lane still
	// closes the turn, and a hand_back that finds a turn closing is taken at
	// once and waits for it (docs/protocol.md).
	s.WaitFor(at, wait, chatsock.Field(chat.TypeDone, "ref", "hb1"), "hand_back's done")
	command := chatsock.FieldOf(hb, "command").(string)
	if want := "cd " + r.work + " && HOME=" + r.home + " claude --resume " + id; command != want {
		t.Fatalf("hand back command: got %q want %q", command, want)
	}
	if pids := r.agentPIDs(); len(pids) != 0 {
		t.Fatalf("parley's claude still runs after the hand back: %v", pids)
	}
	if th := r.thread(t, s); th.State != chat.ThreadHandedBack {
		t.Errorf("thread state after the hand back: %q", th.State)
	}

	// The person types it (with -p, to end) in a terminal.
	sh := exec.Command("sh", "-c", command+" -p 'and the number nine'")
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(r.cfg.Agents[0].Command)+":"+os.Getenv("PATH"))
	for k, v := range r.cfg.Agents[0].Env {
		if k != "HOME" { // the command says it
			sh.Env = append(sh.Env, k+"="+v)
		}
	}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	reqs := r.api.ScenarioRequests()
	if got, want := reqs[len(reqs)-1].UserTexts(), []string{"remember the word teapot", "and the colour green", "and the number nine"}; !slices.Equal(got, want) {
		t.Errorf("the terminal's request: user texts %q, want parley's turn in it", got)
	}

	at = continueSession(t, s, id, r.work)
	want := []string{"user: remember the word teapot", "agent: Remembered teapot.", "user: and the number nine", "agent: Nine noted."}
	if got := imported(s.Snapshot()[:at]); !slices.Equal(got, want) {
		t.Fatalf("imported turns: got %q want %q", got, want)
	}
	texts := map[string]int{}
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypeUserMessage {
			texts[chatsock.FieldOf(e, "text").(string)]++
		}
	}
	for _, x := range []string{"remember the word teapot", "and the colour green", "and the number nine"} {
		if texts[x] != 1 {
			t.Errorf("%q is in the thread %d times, want once (%v)", x, texts[x], texts)
		}
	}
	if th := r.thread(t, s); th.State == chat.ThreadHandedBack {
		t.Errorf("thread state after continuing again: %q", th.State)
	}
}

// thread is the thread s shows, as GET /api/threads/{id} answers.
func (r *rig) thread(t *testing.T, s *chatsock.Conn) chat.Thread {
	t.Helper()
	var id string
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypeThread {
			th, _ := chatsock.FieldOf(e, "thread").(map[string]any)
			id, _ = th["id"].(string)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+r.d.Addr()+"/api/threads/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+r.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Thread chat.Thread `json:"thread"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got.Thread
}

// Handed back while a turn runs: parley's process ends after that turn,
// not during it, and only then does the thread show the command.
func TestHandBackWaitsForTheTurn(t *testing.T) {
	sc := continueScenario()
	sc.Rules = append(sc.Rules, claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 20), 20, 100*time.Millisecond)})
	r := newRig(t, sc, nil)
	s := r.dial("phone", -1)
	s.Send(chatsock.Msg("m1", "remember the word teapot"))
	at := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	s.Send(chatsock.Msg("m2", "slowly"))
	s.WaitFor(at, wait, chatsock.Type(chat.TypeAgentChunk), "the slow answer begun")
	s.Send(map[string]any{"type": "hand_back", "ref": "hb2"})
	s.WaitFor(at, wait, chatsock.Field(chat.TypeDone, "ref", "hb2"), "hand_back's done")
	done := s.WaitFor(at, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the slow turn ends whole")
	hb := s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "handed_back"), "handed back")
	if hb < done {
		t.Fatalf("handed back (frame %d) before the turn ended (frame %d)\n%s", hb, done, chatsock.Summary(s.Snapshot()))
	}
	if got := chatsock.Chunks(s.Snapshot()[at:done]); !strings.Contains(got, strings.TrimSpace(strings.Repeat("tick ", 20))) {
		t.Errorf("the turn handed back during: %q, want it whole", got)
	}
	if pids := r.agentPIDs(); len(pids) != 0 {
		t.Fatalf("parley's claude still runs after the hand back: %v", pids)
	}
}
