package stream

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// rig is one test's real Claude Code against a stand-in.
type rig struct {
	t    *testing.T
	srv  *claudeapi.Server
	drv  *Driver
	spec driver.Spec
	sink *recSink
}

func newRig(t *testing.T, sc claudeapi.Scenario) *rig {
	t.Helper()
	srv := claudeapi.Start(t, sc)
	home, cwd := t.TempDir(), t.TempDir()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &rig{
		t:    t,
		srv:  srv,
		drv:  New(log),
		sink: &recSink{},
		spec: driver.Spec{
			ThreadID: "t1", AgentID: "claude",
			Command: testkit.ClaudeBin(t),
			Env:     claudeapi.Env(t, srv, home, cwd),
			Cwd:     cwd,
		},
	}
}

// start starts (or resumes) a session that is closed when the test ends.
func (r *rig) start() *proc {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.drv.Start(ctx, r.spec, r.sink)
	if err != nil {
		r.t.Fatalf("start: %v", err)
	}
	r.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*proc)
}

func (r *rig) prompt(s driver.Session, text string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Prompt(ctx, driver.Prompt{MessageID: "m-" + text, Text: text}); err != nil {
		r.t.Fatalf("prompt %q: %v", text, err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const helloText = "Hello there, this is the stand-in speaking."

// 1. A plain turn: the chunks add up to the scripted text; end_turn.
func TestPlainTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "say hi"}, Reply: claudeapi.Reply{Blocks: []claudeapi.Block{
			{Type: claudeapi.BlockThinking, Text: "a greeting, then"},
			{Type: claudeapi.BlockText, Text: helloText, Chunks: 5},
		}}},
	}})
	s := r.start()
	r.prompt(s, "say hi")
	if got, want := r.sink.waitTurns(t, 1), []string{chat.StopEndTurn}; !slices.Equal(got, want) {
		t.Fatalf("turns: got %v want %v", got, want)
	}
	if got := r.sink.text(0); got != helloText {
		t.Errorf("text: got %q want %q", got, helloText)
	}
	if got := r.sink.chunks(); got != 5 {
		t.Errorf("chunks: got %d want 5 (one per streamed delta)", got)
	}
	if got := first[chat.ThoughtChunk](t, r.sink); got.Text != "a greeting, then" {
		t.Errorf("thought: got %q", got.Text)
	}
	u := first[chat.Usage](t, r.sink)
	if u.CostUSD <= 0 || u.OutputTokens == 0 {
		t.Errorf("usage: got %+v, want a cost and output tokens", u)
	}
	r.sink.mu.Lock()
	sessions := r.sink.sessions
	r.sink.mu.Unlock()
	if len(sessions) != 1 || sessions[0] == "" {
		t.Errorf("session ids: got %v want one", sessions)
	}
	if m := first[chat.Mode](t, r.sink); m.Current != "default" {
		t.Errorf("mode: got %q want default", m.Current)
	}
	if cs := first[chat.Commands](t, r.sink); len(cs.Commands) == 0 {
		t.Error("commands: got none")
	}
	// The person's text is not echoed back as agent text.
	if strings.Contains(r.sink.text(0), "say hi") {
		t.Errorf("the prompt was echoed: %q", r.sink.text(0))
	}
	receivedFirst(t, r.sink)
}

// receivedFirst checks that Claude Code's evidence for the prompt was
// reported once, before anything it said in the turn.
func receivedFirst(t *testing.T, sink *recSink) {
	t.Helper()
	calls := sink.snapshot()
	at, n := -1, 0
	for i, c := range calls {
		if c.what == "received" {
			at, n = i, n+1
		}
	}
	if n != 1 {
		t.Fatalf("received reported %d times, want once", n)
	}
	for _, c := range calls[:at] {
		switch c.payload.(type) {
		case chat.AgentChunk, chat.ThoughtChunk, chat.ToolCall, chat.Usage:
			t.Fatalf("received reported after the turn's %s", c.what)
		}
	}
}

func bashScenario(cmd string) claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Prefix: "make file"}, Reply: claudeapi.Bash(cmd, "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The tool is done.", 2, 0)},
	}}
}

// 2 and 3. A Bash tool use: permission card → allow (once, always) or reject.
func TestPermission(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		answer     driver.PermissionAnswer
		wantFile   bool
		wantResult string // substring of the tool result the stand-in received
		wantError  bool
	}{
		{"allow once", driver.PermissionAnswer{OptionID: chat.OptionAllowOnce}, true, "", false},
		{"allow always", driver.PermissionAnswer{OptionID: chat.OptionAllowAlways}, true, "", false},
		{"reject with a reason", driver.PermissionAnswer{OptionID: chat.OptionRejectOnce, Message: "not in this folder, please"}, false, "not in this folder, please", true},
		{"dismissed", driver.PermissionAnswer{Cancelled: true}, false, "dismissed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, bashScenario("touch made-by-bash"))
			s := r.start()
			r.prompt(s, "make file")
			card := first[chat.PermissionRequest](t, r.sink)
			if card.Tool.Name != "Bash" || card.Tool.Title != "touch made-by-bash" || card.Tool.ToolCallID == "" {
				t.Fatalf("card: got %+v", card.Tool)
			}
			if len(card.Options) != 3 {
				t.Fatalf("options: got %+v", card.Options)
			}
			// "Allow always" says what it does: the rule Claude Code suggests.
			if o := card.Options[1]; o.ID != chat.OptionAllowAlways || !strings.Contains(o.Label, "Bash(touch made-by-bash") || !strings.Contains(o.Label, "settings.local.json") {
				t.Errorf("allow always: got %+v, want its label to name the rule and where it goes", o)
			}
			if err := s.AnswerPermission(ctxT(t), card.RequestID, tt.answer); err != nil {
				t.Fatalf("answer: %v", err)
			}
			if got := r.sink.waitTurns(t, 1); got[0] != chat.StopEndTurn {
				t.Fatalf("turn: got %v", got)
			}
			_, err := os.Stat(filepath.Join(r.spec.Cwd, "made-by-bash"))
			if got := err == nil; got != tt.wantFile {
				t.Errorf("the file exists: got %v want %v", got, tt.wantFile)
			}
			res, ok := r.srv.ToolResult(card.Tool.ToolCallID)
			if !ok {
				t.Fatal("the stand-in got no tool result")
			}
			if res.IsError != tt.wantError || !strings.Contains(res.ResultText(), tt.wantResult) {
				t.Errorf("tool result: got %q (error %v), want it to hold %q (error %v)", res.ResultText(), res.IsError, tt.wantResult, tt.wantError)
			}
			if got := r.sink.text(0); got != "The tool is done." {
				t.Errorf("follow-up text: got %q", got)
			}
			upd := first[chat.ToolCallUpdate](t, r.sink)
			wantStatus := "completed"
			if tt.wantError {
				wantStatus = "failed"
			}
			if upd.ToolCallID != card.Tool.ToolCallID || upd.Status != wantStatus {
				t.Errorf("tool_call_update: got %+v want status %s", upd, wantStatus)
			}
			if tc := first[chat.ToolCall](t, r.sink); tc.ToolCallID != card.Tool.ToolCallID || tc.Kind != "execute" {
				t.Errorf("tool_call: got %+v", tc)
			}
			if tt.answer.OptionID == chat.OptionAllowAlways {
				// The suggestions went back: a rule in the project's local settings.
				b, err := os.ReadFile(filepath.Join(r.spec.Cwd, ".claude", "settings.local.json"))
				if err != nil || !strings.Contains(string(b), "touch made-by-bash") {
					t.Errorf("settings.local.json: got %q, %v; want the allow rule", b, err)
				}
			}
			// 4. The card is answered once; a second answer finds it closed.
			err = s.AnswerPermission(ctxT(t), card.RequestID, driver.PermissionAnswer{OptionID: chat.OptionAllowOnce})
			if !errors.Is(err, driver.ErrUnknownCard) {
				t.Errorf("second answer: got %v want ErrUnknownCard", err)
			}
		})
	}
}

func TestPermissionBadOptionKeepsCardOpen(t *testing.T) {
	t.Parallel()
	r := newRig(t, bashScenario("touch x"))
	s := r.start()
	r.prompt(s, "make file")
	card := first[chat.PermissionRequest](t, r.sink)
	if err := s.AnswerPermission(ctxT(t), card.RequestID, driver.PermissionAnswer{OptionID: "maybe"}); !errors.Is(err, chat.ErrBadInput) {
		t.Fatalf("bad option: got %v want ErrBadInput", err)
	}
	if err := s.AnswerQuestion(ctxT(t), card.RequestID, driver.QuestionAnswer{Response: "x"}); !errors.Is(err, chat.ErrBadInput) {
		t.Fatalf("question answer to a permission card: got %v want ErrBadInput", err)
	}
	if err := s.AnswerPermission(ctxT(t), card.RequestID, driver.PermissionAnswer{OptionID: chat.OptionAllowOnce}); err != nil {
		t.Fatalf("answer after a bad one: %v", err)
	}
	r.sink.waitTurns(t, 1)
}

func questionScenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Prefix: "ask"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
			"questions": []map[string]any{
				{"question": "Which color do you prefer?", "header": "Color", "multiSelect": false,
					"options": []map[string]string{{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}}},
				{"question": "Which fruits do you like?", "header": "Fruit", "multiSelect": true,
					"options": []map[string]string{{"label": "Apple", "description": "crisp"}, {"label": "Pear", "description": "soft"}, {"label": "Plum", "description": "sweet"}}},
			},
		})},
		{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks.", 1, 0)},
	}}
}

// 5. Question cards: a label, two labels (multi-select), free words.
func TestQuestion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer driver.QuestionAnswer
		want   []string // what the tool result must say
	}{
		{"a label", driver.QuestionAnswer{Answers: chat.Answers{"Which color do you prefer?": {Text: "Blue"}}},
			[]string{`"Which color do you prefer?"="Blue"`}},
		{"two labels", driver.QuestionAnswer{Answers: chat.Answers{"Which fruits do you like?": {Labels: []string{"Apple", "Plum"}}}},
			[]string{`"Which fruits do you like?"="Apple, Plum"`}},
		{"free words and a response", driver.QuestionAnswer{
			Answers:  chat.Answers{"Which color do you prefer?": {Text: "a deep sea green"}},
			Response: "and make it quick"},
			[]string{`"Which color do you prefer?"="a deep sea green"`, "and make it quick"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, questionScenario())
			s := r.start()
			r.prompt(s, "ask me")
			q := first[chat.Question](t, r.sink)
			if len(q.Questions) != 2 || !q.Questions[1].MultiSelect || q.Questions[0].Header != "Color" ||
				len(q.Questions[0].Options) != 2 || q.Questions[0].Options[0].Description != "cool" {
				t.Fatalf("question card: got %+v", q)
			}
			if err := s.AnswerQuestion(ctxT(t), q.RequestID, driver.QuestionAnswer{}); !errors.Is(err, chat.ErrBadInput) {
				t.Fatalf("empty answer: got %v want ErrBadInput", err)
			}
			if err := s.AnswerQuestion(ctxT(t), q.RequestID, driver.QuestionAnswer{Answers: chat.Answers{"Nope?": {Text: "x"}}}); !errors.Is(err, chat.ErrBadInput) {
				t.Fatalf("answer to an unknown question: got %v want ErrBadInput", err)
			}
			if err := s.AnswerQuestion(ctxT(t), q.RequestID, tt.answer); err != nil {
				t.Fatalf("answer: %v", err)
			}
			r.sink.waitTurns(t, 1)
			ids := r.srv.ToolUseIDs("AskUserQuestion")
			if len(ids) != 1 {
				t.Fatalf("tool uses: %v", ids)
			}
			res, ok := r.srv.ToolResult(ids[0])
			if !ok {
				t.Fatal("the stand-in got no answer")
			}
			for _, w := range tt.want {
				if !strings.Contains(res.ResultText(), w) {
					t.Errorf("tool result: got %q, want it to hold %q", res.ResultText(), w)
				}
			}
			if err := s.AnswerQuestion(ctxT(t), q.RequestID, tt.answer); !errors.Is(err, driver.ErrUnknownCard) {
				t.Errorf("second answer: got %v want ErrUnknownCard", err)
			}
		})
	}
}

func slowScenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Prefix: "slow"}, Reply: claudeapi.Text(strings.Repeat("word ", 40), 40, 200*time.Millisecond)},
		{Match: claudeapi.Match{Prefix: "make file"}, Reply: claudeapi.Bash("touch never-made", "Make a file")},
		{Match: claudeapi.Match{Exact: "next"}, Reply: claudeapi.Text("the next answer", 1, 0)},
	}}
}

// 6. Stop during a slow answer: cancelled at once, the process lives on.
func TestCancel(t *testing.T) {
	t.Parallel()
	r := newRig(t, slowScenario())
	s := r.start()
	pid := s.Pid()
	r.prompt(s, "slow")
	first[chat.AgentChunk](t, r.sink)
	if err := s.Cancel(ctxT(t)); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopCancelled {
		t.Fatalf("turn: got %v want cancelled", got)
	}
	if n := r.sink.chunks(); n >= 40 {
		t.Errorf("chunks: got all %d, the stream was not stopped", n)
	}
	if errs := all[chat.Error](r.sink); len(errs) != 0 {
		t.Errorf("error events on a stop: %+v", errs)
	}
	mark := len(r.sink.snapshot())
	r.prompt(s, "next")
	if got := r.sink.waitTurns(t, 2); got[1] != chat.StopEndTurn {
		t.Fatalf("next turn: got %v", got)
	}
	if got := r.sink.text(mark); got != "the next answer" {
		t.Errorf("next text: got %q", got)
	}
	if s.Pid() != pid || syscall.Kill(pid, 0) != nil {
		t.Error("the process did not stay alive")
	}
}

// Stop while a permission card is open: the driver lets go of the request
// without reporting a withdrawal (the card is the lane's, closed with the
// stop), and the tool never runs.
func TestCancelLetsGoOfCard(t *testing.T) {
	t.Parallel()
	r := newRig(t, slowScenario())
	s := r.start()
	r.prompt(s, "make file")
	card := first[chat.PermissionRequest](t, r.sink)
	if err := s.Cancel(ctxT(t)); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopCancelled {
		t.Fatalf("turn: got %v want cancelled", got)
	}
	r.sink.mu.Lock()
	withdrawn := slices.Clone(r.sink.withdrawn)
	r.sink.mu.Unlock()
	if len(withdrawn) != 0 {
		t.Errorf("withdrawn: got %v want none (the lane closes the card)", withdrawn)
	}
	if err := s.AnswerPermission(ctxT(t), card.RequestID, driver.PermissionAnswer{OptionID: chat.OptionAllowOnce}); !errors.Is(err, driver.ErrUnknownCard) {
		t.Errorf("answer after stop: got %v want ErrUnknownCard", err)
	}
	if _, err := os.Stat(filepath.Join(r.spec.Cwd, "never-made")); err == nil {
		t.Error("the tool ran after the stop")
	}
	r.prompt(s, "next")
	if got := r.sink.waitTurns(t, 2); got[1] != chat.StopEndTurn {
		t.Fatalf("next turn: got %v", got)
	}
}

// 7. Idle unload, then resume: a new process, the earlier turns sent along.
func TestResume(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "remember the word teapot"}, Reply: claudeapi.Text("Remembered.", 1, 0)},
		{Match: claudeapi.Match{Exact: "what was the word?"}, Reply: claudeapi.Text("teapot", 1, 0)},
	}})
	s := r.start()
	r.prompt(s, "remember the word teapot")
	r.sink.waitTurns(t, 1)
	r.sink.mu.Lock()
	id := r.sink.sessions[0]
	r.sink.mu.Unlock()
	pid := s.Pid()
	if err := s.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Error("the process is still alive after Close")
	}
	r.sink.mu.Lock()
	exits := len(r.sink.exits)
	r.sink.mu.Unlock()
	if exits != 0 {
		t.Errorf("Close reported Exited %d times, want 0", exits)
	}

	// The transcript is listed as a native session.
	list, err := r.drv.ListSessions(ctxT(t), r.spec)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Title != "remember the word teapot" {
		t.Fatalf("ListSessions: got %+v, %v; want %s titled by its first prompt", list, err, id)
	}

	r.spec.ResumeID = id
	s2 := r.start()
	if s2.Pid() == pid {
		t.Fatal("same pid after a restart")
	}
	r.prompt(s2, "what was the word?")
	if got := r.sink.waitTurns(t, 2); got[1] != chat.StopEndTurn {
		t.Fatalf("resumed turn: got %v", got)
	}
	reqs := r.srv.ScenarioRequests()
	last := reqs[len(reqs)-1]
	if got, want := last.UserTexts(), []string{"remember the word teapot", "what was the word?"}; !slices.Equal(got, want) {
		t.Errorf("the resumed request's user texts: got %q want %q", got, want)
	}
	if got := last.AssistantTexts(); !slices.Contains(got, "Remembered.") {
		t.Errorf("the resumed request's assistant texts: got %q", got)
	}
	r.sink.mu.Lock()
	sessions := slices.Clone(r.sink.sessions)
	r.sink.mu.Unlock()
	if sessions[len(sessions)-1] != id {
		t.Errorf("session ids: got %v, want the resumed one last", sessions)
	}
}

func TestResumeUnknownSession(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{})
	r.spec.ResumeID = "00000000-0000-4000-8000-000000000000"
	_, err := r.drv.Start(ctxT(t), r.spec, r.sink)
	if !errors.Is(err, driver.ErrHistoryLost) {
		t.Fatalf("start: got %v want ErrHistoryLost", err)
	}
}

// 8. The process killed mid-turn: error with the reason; the next start resumes.
func TestCrashMidTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, slowScenario())
	s := r.start()
	r.prompt(s, "slow")
	first[chat.AgentChunk](t, r.sink)
	if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopError {
		t.Fatalf("turn: got %v want error", got)
	}
	e := first[chat.Error](t, r.sink)
	if e.Code != chat.CodeAgent || !strings.Contains(e.Message, "killed") {
		t.Errorf("error event: got %+v, want the exit status in words", e)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		r.sink.mu.Lock()
		defer r.sink.mu.Unlock()
		return len(r.sink.exits) == 1 && r.sink.exits[0] != nil
	}, "want one Exited(err)")
	if err := s.Prompt(ctxT(t), driver.Prompt{Text: "next"}); !errors.Is(err, driver.ErrNotRunning) {
		t.Errorf("prompt to the dead session: got %v want ErrNotRunning", err)
	}
	r.sink.mu.Lock()
	r.spec.ResumeID = r.sink.sessions[0]
	r.sink.mu.Unlock()
	s2 := r.start()
	r.prompt(s2, "next")
	if got := r.sink.waitTurns(t, 2); got[1] != chat.StopEndTurn {
		t.Fatalf("recovered turn: got %v", got)
	}
}

func TestModesAndModel(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{})
	r.spec.Options = map[string]string{OptionAllowBypass: "true"}
	// Claude Code refuses the bypass flags as root unless it is told it runs in a sandbox.
	r.spec.Env = append(r.spec.Env, "IS_SANDBOX=1")
	s := r.start()
	r.prompt(s, "hello")
	r.sink.waitTurns(t, 1)
	for _, mode := range []string{"acceptEdits", "plan", "bypassPermissions", "default"} {
		if err := s.SetMode(ctxT(t), mode); err != nil {
			t.Fatalf("set mode %s: %v", mode, err)
		}
		ms := all[chat.Mode](r.sink)
		if got := ms[len(ms)-1].Current; got != mode {
			t.Errorf("mode event: got %q want %q", got, mode)
		}
	}
	if err := s.SetMode(ctxT(t), "yolo"); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("unknown mode: got %v want ErrUnsupported", err)
	}
	if err := s.SetConfigOption(ctxT(t), "effort", "high"); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("unknown option: got %v want ErrUnsupported", err)
	}
	if err := s.SetConfigOption(ctxT(t), "model", "claude-sonnet-4-5"); err != nil {
		t.Fatalf("set model: %v", err)
	}
	ms := all[chat.Mode](r.sink)
	if got := ms[len(ms)-1].ConfigOptions[0]; got.ID != "model" || got.Current != "claude-sonnet-4-5" || len(got.Values) == 0 {
		t.Errorf("model option: got %+v", got)
	}
	r.prompt(s, "hello again")
	r.sink.waitTurns(t, 2)
	reqs := r.srv.ScenarioRequests()
	if got := reqs[len(reqs)-1].Model; got != "claude-sonnet-4-5" {
		t.Errorf("the model asked for: got %q want claude-sonnet-4-5", got)
	}
}

// An API error the CLI does not retry ends the turn error, in words.
func TestAPIError(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "break"}, Reply: claudeapi.Reply{Error: &claudeapi.Error{
			Status: 400, Type: "invalid_request_error", Message: "the stand-in refuses this"}}},
		{Match: claudeapi.Match{Exact: "next"}, Reply: claudeapi.Text("fine again", 1, 0)},
	}})
	s := r.start()
	r.prompt(s, "break")
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopError {
		t.Fatalf("turn: got %v want error", got)
	}
	if e := first[chat.Error](t, r.sink); !strings.Contains(e.Message, "the stand-in refuses this") {
		t.Errorf("error event: got %+v", e)
	}
	r.prompt(s, "next")
	if got := r.sink.waitTurns(t, 2); got[1] != chat.StopEndTurn {
		t.Fatalf("next turn: got %v", got)
	}
}

func TestBypassNeedsConsent(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{})
	s := r.start()
	if err := s.SetMode(ctxT(t), "bypassPermissions"); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("bypass without allow_bypass: got %v want ErrUnsupported", err)
	}
	m := first[chat.Mode](t, r.sink)
	for _, o := range m.Available {
		if o.ID == "bypassPermissions" {
			t.Errorf("bypassPermissions offered without consent: %+v", m.Available)
		}
	}
}

// An overloaded API (529) is retried by Claude Code; the person is told why it is slow.
func TestOverloadedRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "say hi"}, Times: 1, Reply: claudeapi.Reply{Error: &claudeapi.Error{Status: 529}}},
		{Match: claudeapi.Match{Exact: "say hi"}, Reply: claudeapi.Text("after the retry", 1, 0)},
	}})
	s := r.start()
	r.prompt(s, "say hi")
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopEndTurn {
		t.Fatalf("turn: got %v want end_turn", got)
	}
	if e := first[chat.Error](t, r.sink); e.Code != chat.CodeRateLimit || !strings.Contains(e.Message, "529") {
		t.Errorf("retry notice: got %+v", e)
	}
	if got := r.sink.text(0); got != "after the retry" {
		t.Errorf("text: got %q", got)
	}
}

// A start that fails says why, in Claude Code's own words from stderr.
func TestStartFailureCarriesStderr(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{})
	r.spec.Args = []string{"--no-such-flag"}
	_, err := r.drv.Start(ctxT(t), r.spec, r.sink)
	if err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("start: got %v, want Claude Code's complaint about the flag", err)
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if len(r.sink.exits) != 0 {
		t.Errorf("a failed start also reported Exited: %v", r.sink.exits)
	}
}

func TestListSessionsEmpty(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{})
	list, err := r.drv.ListSessions(ctxT(t), r.spec)
	if err != nil || len(list) != 0 {
		t.Errorf("got %v, %v; want none", list, err)
	}
}

func TestProjectDir(t *testing.T) {
	t.Parallel()
	tests := []struct{ cwd, want string }{
		{"/tmp/probe/cwd", "/h/.claude/projects/-tmp-probe-cwd"},
		{"/home/a.b/my_proj-1", "/h/.claude/projects/-home-a-b-my-proj-1"},
	}
	for _, tt := range tests {
		if got := ProjectDir("/h/.claude", tt.cwd); got != tt.want {
			t.Errorf("ProjectDir(%q): got %q want %q", tt.cwd, got, tt.want)
		}
	}
}

// Started in acceptEdits, a Write runs without a card and its diff is reported.
func TestWriteInAcceptEdits(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{})
	path := filepath.Join(r.spec.Cwd, "notes.txt")
	r.srv.SetScenario(claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "write"}, Reply: claudeapi.ToolUse("Write", map[string]string{"file_path": path, "content": "first line\n"})},
		{Match: claudeapi.Match{ToolResult: "Write"}, Reply: claudeapi.Text("Written.", 1, 0)},
	}})
	r.spec.Mode = "acceptEdits"
	s := r.start()
	if m := first[chat.Mode](t, r.sink); m.Current != "acceptEdits" {
		t.Errorf("mode: got %q want acceptEdits", m.Current)
	}
	r.prompt(s, "write")
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopEndTurn {
		t.Fatalf("turn: got %v", got)
	}
	if cards := all[chat.PermissionRequest](r.sink); len(cards) != 0 {
		t.Errorf("cards in acceptEdits: %+v", cards)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "first line\n" {
		t.Errorf("file: got %q, %v", b, err)
	}
	tc := first[chat.ToolCall](t, r.sink)
	if tc.Kind != "edit" || len(tc.Locations) != 1 || tc.Locations[0].Path != path {
		t.Errorf("tool_call: got %+v", tc)
	}
	upd := first[chat.ToolCallUpdate](t, r.sink)
	if len(upd.Diffs) != 1 || upd.Diffs[0].Path != path || upd.Diffs[0].NewText != "first line\n" {
		t.Errorf("diffs: got %+v", upd.Diffs)
	}
}

// Close in the middle of a turn ends the process promptly and reports nothing more.
func TestCloseMidTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, slowScenario())
	s := r.start()
	pid := s.Pid()
	r.prompt(s, "slow")
	first[chat.AgentChunk](t, r.sink)
	if err := s.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Error("the process is alive after Close")
	}
	if err := s.Close(ctxT(t)); err != nil {
		t.Errorf("second Close: %v", err)
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if len(r.sink.exits) != 0 {
		t.Errorf("Exited after Close: %v", r.sink.exits)
	}
}
