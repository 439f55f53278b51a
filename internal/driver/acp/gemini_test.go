package acp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
)

var update = flag.Bool("update", false, "rewrite the recorded ACP transcripts and golden files in testdata/")

// turnWait bounds one turn against the real Gemini CLI and the stand-in.
const turnWait = 60 * time.Second

// lineBuf collects tapped JSON-RPC lines.
type lineBuf struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *lineBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *lineBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

// rig is one real Gemini CLI against one scripted stand-in.
type rig struct {
	t    *testing.T
	srv  *geminiapi.Server
	home string
	cwd  string
	env  []string
	tap  *lineBuf
	drv  *Driver
}

func newRig(t *testing.T, sc geminiapi.Scenario) *rig {
	t.Helper()
	srv := geminiapi.Start(t, sc)
	home := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, srv: srv, home: home, cwd: cwd, env: geminiapi.Env(t, srv, home), tap: &lineBuf{}}
	r.drv = New(nil, WithTap(r.tap))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ACP transcript:\n%s", r.tap.String())
		}
	})
	return r
}

func (r *rig) spec(resume string) driver.Spec {
	return driver.Spec{
		ThreadID: chat.ThreadID("t-" + r.t.Name()),
		AgentID:  "gemini",
		Command:  testkit.GeminiBin(r.t),
		Args:     []string{"--acp"},
		Env:      r.env,
		Cwd:      r.cwd,
		ResumeID: resume,
		Options:  map[string]string{OptAuthMethod: "gemini-api-key"},
	}
}

// start starts a session (resuming resume when set) and closes it at the end.
func (r *rig) start(resume string) (*Session, *recSink) {
	r.t.Helper()
	sink := &recSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*turnWait)
	defer cancel()
	s, err := r.drv.Start(ctx, r.spec(resume), sink)
	if err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*Session), sink
}

// prompt sends text and fails the test if it is not delivered.
func prompt(t *testing.T, s *Session, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Prompt(ctx, driver.Prompt{MessageID: "m-" + text, Text: text}); err != nil {
		t.Fatalf("Prompt(%q): %v", text, err)
	}
}

// waitTurn waits for the n-th TurnEnded from index from on and returns its reason.
func waitTurn(t *testing.T, sink *recSink, from int) string {
	t.Helper()
	testkit.Eventually(t, turnWait, func() bool { return sink.count(from, "turn_ended", "") > 0 }, "no TurnEnded; records:\n%s", sink.dump())
	for _, rec := range sink.since(from) {
		if rec.Kind == "turn_ended" {
			return rec.Value
		}
	}
	return ""
}

// saveTranscript writes the tapped transcript under testdata with -update.
func (r *rig) saveTranscript(name string) {
	if !*update {
		return
	}
	dir := filepath.Join("testdata", "gemini-"+testkit.GeminiVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	// Temporary paths differ per run: make them stable.
	out := strings.ReplaceAll(r.tap.String(), r.cwd, "/work")
	out = strings.ReplaceAll(out, r.home, "/home")
	if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(out), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func TestGeminiPlainTurn(t *testing.T) {
	t.Parallel()
	const want = "Hello from the stand-in, streamed in pieces."
	r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{
		{Match: geminiapi.Match{Contains: "say hi"}, Reply: geminiapi.Text(want, 5, 20*time.Millisecond)},
	}})
	s, sink := r.start("")
	from := sink.len()
	prompt(t, s, "say hi")
	if got := waitTurn(t, sink, from); got != chat.StopEndTurn {
		t.Fatalf("stop reason: got %q want %q\n%s", got, chat.StopEndTurn, sink.dump())
	}
	if got := sink.text(from); got != want {
		t.Errorf("agent text: got %q want %q", got, want)
	}
	if n := len(payloads[chat.AgentChunk](sink, from)); n < 2 {
		t.Errorf("agent chunks: got %d want several (a stream, not one block)", n)
	}
	// The agent's evidence that it has the prompt comes once, before its words.
	var kinds []string
	for _, rec := range sink.since(from) {
		kinds = append(kinds, rec.Kind+":"+rec.Value)
	}
	if n := sink.count(from, "received", ""); n != 1 {
		t.Errorf("received %d times, want once: %v", n, kinds)
	} else if i := slices.Index(kinds, "received:"); i < 0 || slices.Index(kinds, "event:"+chat.TypeAgentChunk) < i {
		t.Errorf("received after the first chunk: %v", kinds)
	}
	r.saveTranscript("plain_turn")
}

// waitPayload waits for the first payload of type T from index from on.
func waitPayload[T chat.Payload](t *testing.T, sink *recSink, from int, what string) T {
	t.Helper()
	var got T
	testkit.Eventually(t, turnWait, func() bool {
		ps := payloads[T](sink, from)
		if len(ps) == 0 {
			return false
		}
		got = ps[0]
		return true
	}, "no %s; records:\n%s", what, sink.dump())
	return got
}

// optionOfKind returns the id of the card's first option of that kind.
func optionOfKind(t *testing.T, req chat.PermissionRequest, kind string) string {
	t.Helper()
	for _, o := range req.Options {
		if o.Kind == kind {
			return o.ID
		}
	}
	t.Fatalf("permission card has no %s option: %+v", kind, req.Options)
	return ""
}

func TestGeminiShellPermission(t *testing.T) {
	t.Parallel()
	const marker = "parley-was-here"
	tests := []struct {
		name       string
		kind       string // the option chosen
		wantRan    bool
		wantStatus string // the tool call's last status
	}{
		{name: "allow", kind: chat.OptionAllowOnce, wantRan: true, wantStatus: "completed"},
		{name: "reject", kind: chat.OptionRejectOnce, wantRan: false, wantStatus: "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{
				{Match: geminiapi.Match{Contains: "run the command"}, Reply: geminiapi.Shell("printf '%s-%s\\n' "+marker+" 42", "Print a marker")},
				{Match: geminiapi.Match{FunctionResponse: "run_shell_command"}, Reply: geminiapi.Text("The command is done.", 1, 0)},
			}})
			s, sink := r.start("")
			from := sink.len()
			prompt(t, s, "run the command")
			req := waitPayload[chat.PermissionRequest](t, sink, from, "permission_request")
			if req.Tool.ToolCallID == "" || req.Tool.Name != "execute" {
				t.Errorf("card tool: got %+v want an execute tool call", req.Tool)
			}
			// The tool call is on the screen before the card that asks about it.
			calls := payloads[chat.ToolCall](sink, from)
			if len(calls) == 0 || calls[0].ToolCallID != req.Tool.ToolCallID {
				t.Errorf("tool calls before the card: got %+v want one with id %q", calls, req.Tool.ToolCallID)
			}
			if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: optionOfKind(t, req, tt.kind)}); err != nil {
				t.Fatalf("AnswerPermission: %v", err)
			}
			if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: optionOfKind(t, req, tt.kind)}); err == nil {
				t.Errorf("second answer to the same card: got nil want an error (a card is answered once)")
			}
			if got := waitTurn(t, sink, from); got != chat.StopEndTurn {
				t.Fatalf("stop reason: got %q want %q", got, chat.StopEndTurn)
			}
			fr, ok := r.srv.FunctionResponse("run_shell_command")
			if !ok {
				t.Fatalf("the stand-in never got the shell result; requests: %d", len(r.srv.Requests()))
			}
			if got := strings.Contains(string(fr.Response), marker+"-42"); got != tt.wantRan {
				t.Errorf("command output reached the model: got %v want %v (response %s)", got, tt.wantRan, fr.Response)
			}
			ups := payloads[chat.ToolCallUpdate](sink, from)
			last := ""
			for _, u := range ups {
				if u.ToolCallID == req.Tool.ToolCallID && u.Status != "" {
					last = u.Status
				}
			}
			if last != tt.wantStatus {
				t.Errorf("tool call's last status: got %q want %q\n%s", last, tt.wantStatus, sink.dump())
			}
			if got := sink.text(from); got != "The command is done." {
				t.Errorf("agent text: got %q", got)
			}
			r.saveTranscript("shell_" + tt.name)
		})
	}
}

func TestGeminiStop(t *testing.T) {
	t.Parallel()
	slow := geminiapi.Text(strings.Repeat("slow words ", 60), 60, 150*time.Millisecond)
	tests := []struct {
		name string
		ask  string
		// ready says the turn is where the stop should land.
		ready     func(sink *recSink, from int) bool
		wantCards int
	}{
		{name: "slow stream", ask: "talk slowly", wantCards: 0,
			ready: func(sink *recSink, from int) bool { return len(payloads[chat.AgentChunk](sink, from)) > 0 }},
		{name: "open card", ask: "run the command", wantCards: 1,
			ready: func(sink *recSink, from int) bool { return len(payloads[chat.PermissionRequest](sink, from)) > 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{
				{Match: geminiapi.Match{Contains: "talk slowly"}, Reply: slow},
				{Match: geminiapi.Match{Contains: "run the command"}, Reply: geminiapi.Shell("touch stopped-command-ran", "Create a file")},
				{Match: geminiapi.Match{Contains: "and now"}, Reply: geminiapi.Text("Still here.", 1, 0)},
			}})
			s, sink := r.start("")
			from := sink.len()
			prompt(t, s, tt.ask)
			testkit.Eventually(t, turnWait, func() bool { return tt.ready(sink, from) }, "the turn never got going:\n%s", sink.dump())
			if err := s.Cancel(context.Background()); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			if got := waitTurn(t, sink, from); got != chat.StopCancelled {
				t.Fatalf("stop reason: got %q want %q", got, chat.StopCancelled)
			}
			// The cards are the lane's, closed with the stop: the driver
			// reports no withdrawal of its own.
			if got := sink.count(from, "withdrawn", ""); got != 0 {
				t.Errorf("withdrawn cards: got %d want 0", got)
			}
			// Each open permission request was answered cancelled on the wire,
			// as the protocol requires after session/cancel.
			perms := r.agentCalls("session/request_permission")
			if len(perms) != tt.wantCards {
				t.Errorf("permission requests from the agent: got %d want %d", len(perms), tt.wantCards)
			}
			for _, c := range perms {
				var res struct {
					Outcome struct {
						Outcome  string `json:"outcome"`
						OptionID string `json:"optionId"`
					} `json:"outcome"`
				}
				if json.Unmarshal(c.Result, &res) != nil || res.Outcome.Outcome != "cancelled" || res.Outcome.OptionID != "" {
					t.Errorf("answer to the open permission request: got result %s error %s want {\"outcome\":{\"outcome\":\"cancelled\"}}", c.Result, c.Error)
				}
			}

			for _, req := range payloads[chat.PermissionRequest](sink, from) {
				if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: req.Options[0].ID}); err == nil {
					t.Errorf("answering a withdrawn card: got nil want an error")
				}
			}
			if _, err := os.Stat(filepath.Join(r.cwd, "stopped-command-ran")); err == nil {
				t.Errorf("the stopped command ran")
			}
			next := sink.len()
			prompt(t, s, "and now")
			if got := waitTurn(t, sink, next); got != chat.StopEndTurn {
				t.Fatalf("next turn: got %q want %q\n%s", got, chat.StopEndTurn, sink.dump())
			}
			if got := sink.text(next); got != "Still here." {
				t.Errorf("next turn's text: got %q want %q", got, "Still here.")
			}
			r.saveTranscript("stop_" + strings.ReplaceAll(tt.name, " ", "_"))
		})
	}
}

func TestGeminiSetMode(t *testing.T) {
	t.Parallel()
	r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{
		{Match: geminiapi.Match{Contains: "run the command"}, Reply: geminiapi.Shell("printf '%s-%s\\n' yolo 42", "Print")},
		{Match: geminiapi.Match{FunctionResponse: "run_shell_command"}, Reply: geminiapi.Text("Ran it.", 1, 0)},
	}})
	s, sink := r.start("")
	modes := payloads[chat.Mode](sink, 0)
	if len(modes) == 0 || modes[0].Current != "default" {
		t.Fatalf("mode at start: got %+v want current default", modes)
	}
	var ids []string
	for _, m := range modes[0].Available {
		ids = append(ids, m.ID)
	}
	if !strings.Contains(strings.Join(ids, ","), "yolo") {
		t.Fatalf("available modes: got %v want yolo among them", ids)
	}
	from := sink.len()
	if err := s.SetMode(context.Background(), "yolo"); err != nil {
		t.Fatalf("SetMode: %v", err)
	}
	got := waitPayload[chat.Mode](t, sink, from, "mode")
	if got.Current != "yolo" {
		t.Errorf("mode after set: got %q want yolo", got.Current)
	}
	// The agent itself reported the new mode (not only parley, which reports
	// a mode it set). Gemini CLI 0.61.0 reports it as an agent message chunk
	// "[MODE_UPDATE] yolo", never as current_mode_update; either counts, and
	// the marker must not reach the screen as text.
	if !agentReportedMode(r.tap.String(), "yolo") {
		t.Errorf("the agent never reported mode yolo (current_mode_update or [MODE_UPDATE]):\n%s", r.tap.String())
	}
	if n := len(payloads[chat.Mode](sink, from)); n != 1 {
		t.Errorf("mode events for one change: got %d want 1", n)
	}
	if txt := sink.text(from); txt != "" {
		t.Errorf("text after set mode: got %q want none", txt)
	}
	// The agent really is in yolo: the command runs without asking.
	prompt(t, s, "run the command")
	if reason := waitTurn(t, sink, from); reason != chat.StopEndTurn {
		t.Fatalf("stop reason: got %q", reason)
	}
	if n := len(payloads[chat.PermissionRequest](sink, from)); n != 0 {
		t.Errorf("permission cards in yolo mode: got %d want 0", n)
	}
	if fr, ok := r.srv.FunctionResponse("run_shell_command"); !ok || !strings.Contains(string(fr.Response), "yolo-42") {
		t.Errorf("shell result at the stand-in: got %s (found %v) want yolo-42", fr.Response, ok)
	}
	if err := s.SetMode(context.Background(), "no-such-mode"); err == nil {
		t.Errorf("SetMode(no-such-mode): got nil want an error")
	}

	// The model is a config option (Gemini CLI lists models the unstable way).
	next := sink.len()
	if err := s.SetConfigOption(context.Background(), "model", "gemini-2.5-pro"); err != nil {
		t.Fatalf("SetConfigOption(model): %v", err)
	}
	m := waitPayload[chat.Mode](t, sink, next, "mode after the model change")
	cur := ""
	for _, o := range m.ConfigOptions {
		if o.ID == "model" {
			cur = o.Current
		}
	}
	if cur != "gemini-2.5-pro" {
		t.Errorf("model option after the change: got %q want gemini-2.5-pro", cur)
	}
	if err := s.SetConfigOption(context.Background(), "model", "no-such-model"); !errors.Is(err, chat.ErrBadInput) {
		t.Errorf("SetConfigOption(no-such-model): got %v want ErrBadInput", err)
	}
	before := len(r.srv.ScenarioRequests())
	prompt(t, s, "run the command")
	if reason := waitTurn(t, sink, next); reason != chat.StopEndTurn {
		t.Fatalf("stop reason: got %q", reason)
	}
	if reqs := r.srv.ScenarioRequests(); len(reqs) <= before || reqs[before].Model != "gemini-2.5-pro" {
		t.Errorf("model the agent asked for after the change: got %+v want gemini-2.5-pro", reqs[before:])
	}
	r.saveTranscript("set_mode")
}

// agentReportedMode reports whether the tap holds the agent's own report of
// the mode: current_mode_update, or Gemini CLI's "[MODE_UPDATE] <mode>" chunk.
func agentReportedMode(tap, mode string) bool {
	for _, line := range strings.Split(tap, "\n") {
		rest, ok := strings.CutPrefix(line, "< ")
		if !ok {
			continue
		}
		var n struct {
			Method string `json:"method"`
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					CurrentModeID string `json:"currentModeId"`
					Content       struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(rest), &n) != nil || n.Method != "session/update" {
			continue
		}
		u := n.Params.Update
		if (u.SessionUpdate == "current_mode_update" && u.CurrentModeID == mode) ||
			(u.SessionUpdate == "agent_message_chunk" && strings.TrimSpace(u.Content.Text) == "[MODE_UPDATE] "+mode) {
			return true
		}
	}
	return false
}

func TestGeminiResume(t *testing.T) {
	t.Parallel()
	r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{
		{Match: geminiapi.Match{Contains: "first message"}, Reply: geminiapi.Text("First answer.", 2, 0)},
		{Match: geminiapi.Match{Contains: "second message"}, Reply: geminiapi.Text("Second answer.", 2, 0)},
	}})
	s, sink := r.start("")
	prompt(t, s, "first message")
	if got := waitTurn(t, sink, 0); got != chat.StopEndTurn {
		t.Fatalf("first turn: got %q", got)
	}
	// Read after the session exists: its file is named by this minute or an
	// earlier one, never a later one.
	created := time.Now().UTC().Truncate(time.Minute)
	id := sink.sessionID()
	// Idle unload: the process goes away, the thread keeps the session id.
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := sink.count(0, "exited", ""); n != 0 {
		t.Errorf("Exited after Close: got %d want 0 (parley ended it)", n)
	}
	// Gemini CLI 0.61.0 names a session file by the minute it was created
	// (session-2026-12-02T17-32-<id8>.jsonl); a process that loads the session
	// within that same minute appends a fresh header to the same file at
	// start-up and so wipes the history it is about to load ("No previous
	// sessions found for this project."). An idle unload is minutes long, so
	// wait for the next minute, as a real unload would.
	testkit.Eventually(t, 70*time.Second, func() bool { return time.Now().UTC().Truncate(time.Minute).After(created) }, "the minute never turned")

	s2, sink2 := r.start(id)
	if got := sink2.sessionID(); got != id {
		t.Errorf("resumed session id: got %q want %q", got, id)
	}
	prompt(t, s2, "second message")
	if got := waitTurn(t, sink2, 0); got != chat.StopEndTurn {
		t.Fatalf("second turn: got %q\n%s", got, sink2.dump())
	}
	// History is not shown twice: the only text is the new answer.
	if got := sink2.text(0); got != "Second answer." {
		t.Errorf("text after resume: got %q want only %q", got, "Second answer.")
	}
	if n := len(payloads[chat.Error](sink2, 0)); n != 0 {
		t.Errorf("errors after resume: got %+v want none", payloads[chat.Error](sink2, 0))
	}
	// The agent really has the history: the model saw the first turn.
	reqs := r.srv.ScenarioRequests()
	last := reqs[len(reqs)-1]
	if got := strings.Join(last.UserTexts(), "|"); !strings.Contains(got, "first message") || !strings.Contains(got, "second message") {
		t.Errorf("user texts the model saw after resume: got %q want both messages", got)
	}
	r.saveTranscript("resume_load")

	t.Run("unknown session", func(t *testing.T) {
		s3, sink3 := r.start("00000000-0000-4000-8000-000000000000")
		errs := payloads[chat.Error](sink3, 0)
		if len(errs) != 1 || errs[0].Code != chat.CodeNoHistory {
			t.Fatalf("errors: got %+v want one %s", errs, chat.CodeNoHistory)
		}
		if got := sink3.sessionID(); got == "00000000-0000-4000-8000-000000000000" || got == "" {
			t.Errorf("new session id: got %q want a fresh one", got)
		}
		prompt(t, s3, "second message")
		if got := waitTurn(t, sink3, 0); got != chat.StopEndTurn {
			t.Fatalf("turn in the new session: got %q", got)
		}
	})
}

// rpcCall is one request the agent made and parley's answer, read from the tap.
type rpcCall struct {
	Method string
	Params json.RawMessage
	Result json.RawMessage // nil until answered
	Error  json.RawMessage
}

// agentCalls returns the agent's requests whose method has the prefix, in
// order, each with parley's answer.
func (r *rig) agentCalls(prefix string) []rpcCall {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	var calls []rpcCall
	open := map[string]int{} // request id (the agent's numbering) → index in calls
	for _, line := range strings.Split(r.tap.String(), "\n") {
		from, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		var m msg
		if json.Unmarshal([]byte(rest), &m) != nil || len(m.ID) == 0 {
			continue
		}
		switch {
		case from == "<" && m.Method != "":
			if strings.HasPrefix(m.Method, prefix) {
				open[string(m.ID)] = len(calls)
				calls = append(calls, rpcCall{Method: m.Method, Params: m.Params})
			}
		case from == ">" && m.Method == "":
			if i, ok := open[string(m.ID)]; ok {
				calls[i].Result, calls[i].Error = m.Result, m.Error
				delete(open, string(m.ID))
			}
		}
	}
	return calls
}

// fsCall is one client-side file request the agent made and parley's answer.
type fsCall struct {
	rpcCall
	Path    string
	Content string // what the agent asked to write
}

// fsCalls returns the agent's fs/* requests in order, each with parley's answer.
func (r *rig) fsCalls() []fsCall {
	var out []fsCall
	for _, c := range r.agentCalls("fs/") {
		var p struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		_ = json.Unmarshal(c.Params, &p)
		out = append(out, fsCall{rpcCall: c, Path: p.Path, Content: p.Content})
	}
	return out
}

// toAgent is everything parley wrote to the agent.
func (r *rig) toAgent() string {
	var sb strings.Builder
	for _, line := range strings.Split(r.tap.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "> "); ok {
			sb.WriteString(rest + "\n")
		}
	}
	return sb.String()
}

// TestGeminiReadOutsideCwd: the agent is asked to read and write outside the
// working directory, directly and through a symlink inside it; nothing of the
// outside file reaches the model or the screen, and nothing is written there.
//
// Which layer refuses what: Gemini CLI 0.61.0 refuses all of these itself.
// Its tools check the real path (symlinks resolved) against the workspace
// ("Path not in workspace"), and its ACP file service sends only paths inside
// the session's cwd to parley (others go to its own fs, which the tool check
// has already refused). So with Gemini parley is not asked; the test still
// fails if parley was asked and answered, or if anything of the secret
// reached the agent, the model or the screen. Parley's own refusal of paths
// outside the cwd (absolute, "..", symlinked file and directory, dangling
// symlink) is shown with the fake agent, which does ask: TestFakeAgentFiles
// and TestJailRead / TestJailWrite.
func TestGeminiReadOutsideCwd(t *testing.T) {
	t.Parallel()
	const secret = "TOP-SECRET-parley-7f3a"
	outsideDir := t.TempDir()
	outside := filepath.Join(outsideDir, "secret.txt")
	if err := os.WriteFile(outside, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		tool   string // read_file or write_file
		path   func(cwd string) string
		target string // the outside file a write would land in
	}{
		{name: "absolute path", tool: "read_file", path: func(string) string { return outside }},
		{name: "symlink inside cwd", tool: "read_file", path: func(cwd string) string {
			link := filepath.Join(cwd, "innocent.txt")
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
		{name: "absolute path", tool: "write_file", target: outside, path: func(string) string { return outside }},
		{name: "through symlinked dir", tool: "write_file", target: filepath.Join(outsideDir, "planted.txt"), path: func(cwd string) string {
			link := filepath.Join(cwd, "innocent-dir")
			if err := os.Symlink(outsideDir, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "planted.txt")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.name, func(t *testing.T) {
			r := newRig(t, geminiapi.Scenario{})
			p := tt.path(r.cwd)
			call := geminiapi.ReadFile(p)
			if tt.tool == "write_file" {
				call = geminiapi.Call("write_file", map[string]string{"file_path": p, "content": "planted by the agent\n"})
			}
			r.srv.SetScenario(geminiapi.Scenario{Rules: []geminiapi.Rule{
				{Match: geminiapi.Match{Contains: "do it"}, Reply: call},
				{Match: geminiapi.Match{FunctionResponse: tt.tool}, Reply: geminiapi.Text("Done.", 1, 0)},
			}})
			s, sink := r.start("")
			prompt(t, s, "do it")
			if got := waitTurn(t, sink, 0); got != chat.StopEndTurn {
				t.Fatalf("turn: got %q", got)
			}
			// No card: the agent refuses before it would ask. Were there one,
			// it is not answered, so nothing could be approved.
			for _, req := range payloads[chat.PermissionRequest](sink, 0) {
				t.Errorf("unexpected permission card: %+v", req)
			}
			fr, ok := r.srv.FunctionResponse(tt.tool)
			if !ok {
				t.Fatalf("the stand-in never got the %s result", tt.tool)
			}
			if !strings.Contains(string(fr.Response), "error") {
				t.Errorf("%s result: got %s want an error", tt.tool, fr.Response)
			}
			// Nothing of the secret reached the model, in any request.
			for i, req := range r.srv.Requests() {
				if strings.Contains(string(req.Body), secret) {
					t.Errorf("the secret reached the model (request %d): %s", i, req.Body)
				}
			}
			// Nor the agent through parley, nor the screen.
			if strings.Contains(r.toAgent(), secret) {
				t.Errorf("parley sent the secret to the agent")
			}
			for _, rec := range sink.all() {
				b, _ := json.Marshal(rec.Payload)
				if strings.Contains(string(b), secret) {
					t.Errorf("the secret reached the screen: %s", b)
				}
			}
			// If the agent asked parley, parley refused.
			for _, c := range r.fsCalls() {
				if len(c.Error) == 0 {
					t.Errorf("%s %s: parley answered %s, want an error (outside the working directory)", c.Method, c.Path, c.Result)
				}
			}
			if b, _ := os.ReadFile(outside); string(b) != secret+"\n" {
				t.Errorf("the outside file changed: %q", b)
			}
			if tt.target != "" && tt.target != outside {
				if _, err := os.Stat(tt.target); err == nil {
					t.Errorf("a file was planted outside the working directory: %s", tt.target)
				}
			}
			r.saveTranscript(strings.TrimSuffix(tt.tool, "_file") + "_outside_" + strings.ReplaceAll(tt.name, " ", "_"))
		})
	}
}

// TestGeminiFilesInsideCwd: Gemini CLI edits and writes files inside the
// working directory through parley's fs/read_text_file and fs/write_text_file
// (its replace and write_file tools use the client's file methods; its
// read_file tool reads the disk itself, so it is not used here).
func TestGeminiFilesInsideCwd(t *testing.T) {
	t.Parallel()
	r := newRig(t, geminiapi.Scenario{})
	notes := filepath.Join(r.cwd, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha line\nbeta line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(r.cwd, "made.txt")
	r.srv.SetScenario(geminiapi.Scenario{Rules: []geminiapi.Rule{
		{Match: geminiapi.Match{Contains: "edit the notes"}, Reply: geminiapi.Call("replace", map[string]string{
			"file_path": notes, "instruction": "Rename the second line from beta to gamma.",
			"old_string": "beta line", "new_string": "gamma line"})},
		{Match: geminiapi.Match{FunctionResponse: "replace"}, Reply: geminiapi.Text("Edited.", 1, 0)},
		{Match: geminiapi.Match{Contains: "write a file"}, Reply: geminiapi.Call("write_file", map[string]string{
			"file_path": made, "content": "made through parley\n"})},
		{Match: geminiapi.Match{FunctionResponse: "write_file"}, Reply: geminiapi.Text("Written.", 1, 0)},
	}})
	s, sink := r.start("")
	for _, ask := range []string{"edit the notes", "write a file"} {
		from := sink.len()
		prompt(t, s, ask)
		req := waitPayload[chat.PermissionRequest](t, sink, from, "permission_request for "+ask)
		if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: optionOfKind(t, req, chat.OptionAllowOnce)}); err != nil {
			t.Fatalf("AnswerPermission: %v", err)
		}
		if got := waitTurn(t, sink, from); got != chat.StopEndTurn {
			t.Fatalf("%s: stop reason %q\n%s", ask, got, sink.dump())
		}
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "alpha line\ngamma line\n" {
		t.Errorf("notes.txt after the edit: got %q, %v", b, err)
	}
	if b, err := os.ReadFile(made); err != nil || string(b) != "made through parley\n" {
		t.Errorf("made.txt: got %q, %v", b, err)
	}
	// The edit read the file through parley and wrote it back through parley.
	calls := r.fsCalls()
	find := func(method, path string, ok func(fsCall) bool) bool {
		for _, c := range calls {
			if c.Method == method && c.Path == path && ok(c) {
				return true
			}
		}
		return false
	}
	readNotes := find("fs/read_text_file", notes, func(c fsCall) bool {
		var res struct{ Content string }
		return len(c.Error) == 0 && json.Unmarshal(c.Result, &res) == nil && res.Content == "alpha line\nbeta line\n"
	})
	if !readNotes {
		t.Errorf("no fs/read_text_file of %s answered with its content; fs calls: %+v", notes, calls)
	}
	wrote := func(path, content string) bool {
		return find("fs/write_text_file", path, func(c fsCall) bool { return len(c.Error) == 0 && len(c.Result) > 0 && c.Content == content })
	}
	if !wrote(notes, "alpha line\ngamma line\n") {
		t.Errorf("no successful fs/write_text_file of the edited %s; fs calls: %+v", notes, calls)
	}
	if !wrote(made, "made through parley\n") {
		t.Errorf("no successful fs/write_text_file of %s; fs calls: %+v", made, calls)
	}
	r.saveTranscript("files_inside")
}

func TestGeminiKilledMidTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{
		{Match: geminiapi.Match{Contains: "talk slowly"}, Reply: geminiapi.Text(strings.Repeat("slow words ", 60), 60, 150*time.Millisecond)},
		{Match: geminiapi.Match{Contains: "are you back"}, Reply: geminiapi.Text("Back again.", 1, 0)},
	}})
	s, sink := r.start("")
	id := sink.sessionID()
	prompt(t, s, "talk slowly")
	testkit.Eventually(t, turnWait, func() bool { return len(payloads[chat.AgentChunk](sink, 0)) > 0 }, "no chunk:\n%s", sink.dump())
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if got := waitTurn(t, sink, 0); got != chat.StopError {
		t.Fatalf("stop reason: got %q want %q", got, chat.StopError)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return sink.count(0, "exited", "") == 1 }, "no Exited:\n%s", sink.dump())
	errs := payloads[chat.Error](sink, 0)
	if len(errs) != 1 || errs[0].Code != chat.CodeAgent || !strings.Contains(errs[0].Message, "killed") {
		t.Errorf("error events: got %+v want one %s saying the agent was killed", errs, chat.CodeAgent)
	}
	if err := s.Prompt(context.Background(), driver.Prompt{Text: "hello?"}); err == nil {
		t.Errorf("Prompt to a dead session: got nil want an error")
	}
	// Recovery: the next message starts the agent again. Within the minute
	// the session was created Gemini CLI cannot load it (see TestGeminiResume),
	// so either it is loaded or a new session says the history is lost.
	s2, sink2 := r.start(id)
	got := sink2.sessionID()
	errs2 := payloads[chat.Error](sink2, 0)
	switch {
	case got == id && len(errs2) == 0:
	case got != id && len(errs2) == 1 && errs2[0].Code == chat.CodeNoHistory:
	default:
		t.Errorf("after recovery: session %q (was %q), errors %+v; want the same session, or a new one with one %s error", got, id, errs2, chat.CodeNoHistory)
	}
	prompt(t, s2, "are you back")
	if got := waitTurn(t, sink2, 0); got != chat.StopEndTurn {
		t.Fatalf("turn after recovery: got %q\n%s", got, sink2.dump())
	}
	if got := sink2.text(0); got != "Back again." {
		t.Errorf("text after recovery: got %q", got)
	}
}
