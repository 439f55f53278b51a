package acp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
)

// The test binary doubles as a small scripted ACP agent (run with
// PARLEY_ACP_FAKE_AGENT=1) for what Gemini CLI does not do: elicitation,
// session/resume, file requests that reach parley, ignoring a cancel, crashing.
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_ACP_FAKE_AGENT") == "1" {
		runFakeAgent()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

type fakeAgent struct {
	conn      *sdk.AgentSideConnection
	caps      sdk.ClientCapabilities
	cancelled chan struct{} // a session/cancel arrived (buffered, 1)

	mu      sync.Mutex
	effort  string // config option "effort" (select: low, high)
	verbose bool   // config option "verbose" (boolean)
}

func runFakeAgent() {
	// PARLEY_FAKE_CHILD=<file>: a child left running, as an agent's shell or
	// MCP server is, its pid written to the file.
	if f := os.Getenv("PARLEY_FAKE_CHILD"); f != "" {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			panic(err)
		}
		if err := os.WriteFile(f, []byte(strconv.Itoa(child.Process.Pid)), 0o600); err != nil {
			panic(err)
		}
	}
	a := &fakeAgent{cancelled: make(chan struct{}, 1), effort: "low"}
	a.conn = sdk.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	<-a.conn.Done()
}

// Initialize offers session/resume, or what PARLEY_FAKE_SESSION_CAPS lists
// ("resume", "load", both joined by "+", or "none").
func (a *fakeAgent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.caps = p.ClientCapabilities
	var caps sdk.AgentCapabilities
	offered := cmp.Or(os.Getenv("PARLEY_FAKE_SESSION_CAPS"), "resume")
	for _, c := range strings.Split(offered, "+") {
		switch c {
		case "resume":
			caps.SessionCapabilities.Resume = &sdk.SessionResumeCapabilities{}
		case "load":
			caps.LoadSession = true
		}
	}
	return sdk.InitializeResponse{
		ProtocolVersion:   sdk.ProtocolVersionNumber,
		AuthMethods:       []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{Id: "fake-key", Name: "Fake"}}},
		AgentCapabilities: caps,
	}, nil
}

// LoadSession knows "known" and "loadable", and replays their history
// before it answers, as the protocol has it.
func (a *fakeAgent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if p.SessionId != "known" && p.SessionId != "loadable" {
		return sdk.LoadSessionResponse{}, &sdk.RequestError{Code: -32002, Message: "nothing to load"}
	}
	_ = a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: sdk.UpdateUserMessageText("old question")})
	a.say(ctx, p.SessionId, "old answer")
	return sdk.LoadSessionResponse{}, nil
}

func (a *fakeAgent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *fakeAgent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	return sdk.NewSessionResponse{SessionId: "fresh", Modes: &sdk.SessionModeState{CurrentModeId: "ask", AvailableModes: []sdk.SessionMode{{Id: "ask", Name: "Ask"}, {Id: "code", Name: "Code"}}},
		ConfigOptions: a.options()}, nil
}

// options is the agent's config options as it reports them.
func (a *fakeAgent) options() []sdk.SessionConfigOption {
	a.mu.Lock()
	defer a.mu.Unlock()
	values := sdk.SessionConfigSelectOptionsUngrouped{{Value: "low", Name: "Low"}, {Value: "high", Name: "High"}}
	return []sdk.SessionConfigOption{
		{Select: &sdk.SessionConfigOptionSelect{Type: "select", Id: "effort", Name: "Effort", CurrentValue: sdk.SessionConfigValueId(a.effort),
			Options: sdk.SessionConfigSelectOptions{Ungrouped: &values}}},
		{Boolean: &sdk.SessionConfigOptionBoolean{Type: "boolean", Id: "verbose", Name: "Verbose", CurrentValue: a.verbose}},
	}
}

func (a *fakeAgent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	if p.SessionId != "known" {
		return sdk.ResumeSessionResponse{}, &sdk.RequestError{Code: -32002, Message: "no such session"}
	}
	return sdk.ResumeSessionResponse{}, nil
}

func (a *fakeAgent) say(ctx context.Context, id sdk.SessionId, text string) {
	_ = a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: sdk.UpdateAgentMessageText(text)})
}

func (a *fakeAgent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	text := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		text = p.Prompt[0].Text.Text
	}
	cmd, arg, _ := strings.Cut(text, " ")
	switch cmd {
	case "config":
		a.mu.Lock()
		state := fmt.Sprintf("effort=%s verbose=%v", a.effort, a.verbose)
		a.mu.Unlock()
		a.say(ctx, p.SessionId, state)
	case "caps":
		b, _ := json.Marshal(a.caps)
		a.say(ctx, p.SessionId, string(b))
	case "read":
		r, err := a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: p.SessionId, Path: arg})
		if err != nil {
			a.say(ctx, p.SessionId, "error: "+err.Error())
		} else {
			a.say(ctx, p.SessionId, "read: "+r.Content)
		}
	case "write":
		if _, err := a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: p.SessionId, Path: arg, Content: "from the agent"}); err != nil {
			a.say(ctx, p.SessionId, "error: "+err.Error())
		} else {
			a.say(ctx, p.SessionId, "wrote")
		}
	case "ask":
		a.say(ctx, p.SessionId, a.askColor(ctx))
	case "ask-after-stop":
		// Asks only once the person has stopped the turn: a late question
		// must not become a card.
		a.say(ctx, p.SessionId, "waiting")
		<-a.cancelled
		bg := context.Background()
		a.say(bg, p.SessionId, a.askColor(bg))
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case "perm":
		r, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: p.SessionId,
			ToolCall: sdk.ToolCallUpdate{ToolCallId: "t-9", Title: sdk.Ptr("rm -rf build"), Kind: sdk.Ptr(sdk.ToolKindExecute)},
			Options:  []sdk.PermissionOption{{OptionId: "yes", Name: "Yes", Kind: sdk.PermissionOptionKindAllowOnce}, {OptionId: "no", Name: "No", Kind: sdk.PermissionOptionKindRejectOnce}}})
		if err != nil || r.Outcome.Selected == nil {
			// Cancelled (the SDK also cancels the request itself on
			// session/cancel): as the protocol asks, the turn ends cancelled.
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		a.say(ctx, p.SessionId, "selected "+string(r.Outcome.Selected.OptionId))
	case "hang":
		// Ignores session/cancel: parley must end the turn itself.
		a.say(ctx, p.SessionId, "hanging")
		select {}
	case "crash":
		fmt.Fprintln(os.Stderr, "fake agent: boom")
		os.Exit(3)
	case "crash-after-words":
		a.say(ctx, p.SessionId, "about to fall over")
		fmt.Fprintln(os.Stderr, "fake agent: boom")
		os.Exit(3)
	default:
		a.say(ctx, p.SessionId, "echo "+text)
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// askColor asks the person for a color and says what it heard.
func (a *fakeAgent) askColor(ctx context.Context) string {
	var schema sdk.UnstableElicitationSchema
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"color":{"type":"string","enum":["red","blue"]}},"required":["color"]}`), &schema)
	r, err := a.conn.UnstableCreateElicitation(ctx, sdk.UnstableCreateElicitationRequest{Form: &sdk.UnstableCreateElicitationForm{Mode: "form", Message: "Which color?", RequestedSchema: schema}})
	switch {
	case err != nil:
		return "error: " + err.Error()
	case r.Accept != nil:
		b, _ := json.Marshal(r.Accept.Content)
		return "accepted " + string(b)
	case r.Cancel != nil:
		return "cancelled"
	}
	return "declined"
}

func (a *fakeAgent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	select {
	case a.cancelled <- struct{}{}:
	default:
	}
	return nil
}
func (a *fakeAgent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, nil
}
func (a *fakeAgent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, nil
}

// SetSessionConfigOption takes effort as a value id and verbose as a boolean,
// and answers with the full set of options, or with none when
// PARLEY_FAKE_EMPTY_CONFIG_REPLY=1.
func (a *fakeAgent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	a.mu.Lock()
	switch {
	case p.ValueId != nil && p.ValueId.ConfigId == "effort" && (p.ValueId.Value == "low" || p.ValueId.Value == "high"):
		a.effort = string(p.ValueId.Value)
	case p.Boolean != nil && p.Boolean.ConfigId == "verbose":
		a.verbose = p.Boolean.Value
	default:
		a.mu.Unlock()
		b, _ := json.Marshal(p)
		return sdk.SetSessionConfigOptionResponse{}, &sdk.RequestError{Code: -32602, Message: "bad config option request: " + string(b)}
	}
	a.mu.Unlock()
	if os.Getenv("PARLEY_FAKE_EMPTY_CONFIG_REPLY") == "1" {
		return sdk.SetSessionConfigOptionResponse{ConfigOptions: []sdk.SessionConfigOption{}}, nil
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: a.options()}, nil
}

// SetSessionMode answers at once, except with PARLEY_FAKE_LATE_REPLAY=1:
// then a replayed message comes first, as from a session/load replay still
// streaming after Start returned (Gemini CLI replays after its response).
func (a *fakeAgent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	if os.Getenv("PARLEY_FAKE_LATE_REPLAY") == "1" {
		a.say(ctx, p.SessionId, "late old answer")
	}
	return sdk.SetSessionModeResponse{}, nil
}

// startFake starts the fake agent in a fresh working directory, with env
// (KEY=VALUE) added to its environment.
func startFake(t *testing.T, resume string, env ...string) (*Session, *recSink, string) {
	t.Helper()
	cwd := t.TempDir()
	sink := &recSink{}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(nil).Start(context.Background(), driver.Spec{
		Command: exe, Env: append([]string{"PARLEY_ACP_FAKE_AGENT=1"}, env...), Cwd: cwd, ResumeID: resume,
		Options: map[string]string{OptAuthMethod: "fake-key"},
	}, sink)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*Session), sink, cwd
}

// turn prompts and waits for the turn's end; it returns the stop reason and text.
func runTurn(t *testing.T, s *Session, sink *recSink, text string) (string, string) {
	t.Helper()
	from := sink.len()
	prompt(t, s, text)
	reason := waitTurn(t, sink, from)
	return reason, sink.text(from)
}

func TestFakeAgentCapabilities(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, _ := startFake(t, "")
	_, got := runTurn(t, s, sink, "caps")
	var caps sdk.ClientCapabilities
	if err := json.Unmarshal([]byte(got), &caps); err != nil {
		t.Fatalf("caps: %v (%q)", err, got)
	}
	if !caps.Fs.ReadTextFile || !caps.Fs.WriteTextFile {
		t.Errorf("fs capabilities: got %+v want read and write", caps.Fs)
	}
	if caps.Terminal {
		t.Errorf("terminal advertised: got true want false (parley does not implement terminal/*)")
	}
	if caps.Elicitation == nil || caps.Elicitation.Form == nil || caps.Elicitation.Url != nil {
		t.Errorf("elicitation: got %+v want form only", caps.Elicitation)
	}
}

func TestFakeAgentFiles(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, cwd := startFake(t, "")
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(cwd+"/in.txt", []byte("inside words"), 0o644))
	must(os.WriteFile(outside+"/secret.txt", []byte("secret words"), 0o644))
	must(os.Symlink(outside+"/secret.txt", cwd+"/link.txt"))
	must(os.Symlink(outside, cwd+"/dir-link"))
	tests := []struct {
		ask   string
		want  string // prefix of the agent's reply
		exact bool   // the whole reply
	}{
		{"read " + cwd + "/in.txt", "read: inside words", false},
		{"read " + outside + "/secret.txt", "error: ", false},
		{"read " + cwd + "/link.txt", "error: ", false},
		{"read " + cwd + "/dir-link/secret.txt", "error: ", false},
		{"read " + cwd + "/../" + filepath.Base(outside) + "/secret.txt", "error: ", false},
		// Missing outside is refused, not read as empty.
		{"read " + outside + "/nothing.txt", "error: ", false},
		// A missing file inside reads as empty (as in Zed; see ReadTextFile).
		{"read " + cwd + "/missing.txt", "read: ", true},
		{"write " + cwd + "/new/out.txt", "wrote", false},
		{"write " + cwd + "/link.txt", "error: ", false},
		{"write " + outside + "/planted.txt", "error: ", false},
		{"write " + cwd + "/dir-link/planted.txt", "error: ", false},
	}
	for _, tt := range tests {
		t.Run(tt.ask, func(t *testing.T) {
			_, got := runTurn(t, s, sink, tt.ask)
			if !strings.HasPrefix(got, tt.want) || (tt.exact && got != tt.want) || strings.Contains(got, "secret words") {
				t.Errorf("%s: got %q want prefix %q and no secret", tt.ask, got, tt.want)
			}
			if tt.want == "error: " && !strings.Contains(got, "outside the session's working directory") {
				t.Errorf("%s: got %q want parley's refusal (outside the working directory)", tt.ask, got)
			}
		})
	}
	if b, err := os.ReadFile(cwd + "/new/out.txt"); err != nil || string(b) != "from the agent" {
		t.Errorf("written file: got %q, %v", b, err)
	}
	if b, _ := os.ReadFile(outside + "/secret.txt"); string(b) != "secret words" {
		t.Errorf("secret after the writes: got %q want it untouched", b)
	}
	if _, err := os.Stat(outside + "/planted.txt"); err == nil {
		t.Errorf("a file was planted outside the working directory")
	}
}

func TestFakeAgentQuestion(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	tests := []struct {
		name   string
		answer func(s *Session, q chat.Question) error
		want   string
	}{
		{name: "answered", want: `accepted {"color":"blue"}`, answer: func(s *Session, q chat.Question) error {
			return s.AnswerQuestion(context.Background(), q.RequestID, driver.QuestionAnswer{Answers: chat.Answers{q.Questions[0].Question: {Text: "blue"}}})
		}},
		{name: "declined", want: "declined", answer: func(s *Session, q chat.Question) error {
			return s.AnswerQuestion(context.Background(), q.RequestID, driver.QuestionAnswer{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, sink, _ := startFake(t, "")
			from := sink.len()
			prompt(t, s, "ask")
			q := waitPayload[chat.Question](t, sink, from, "question")
			if len(q.Questions) != 1 || q.Questions[0].Question != "Which color?" || len(q.Questions[0].Options) != 2 {
				t.Fatalf("question: got %+v", q)
			}
			if err := s.AnswerQuestion(context.Background(), "q-none", driver.QuestionAnswer{}); !errors.Is(err, driver.ErrUnknownCard) {
				t.Errorf("answer to an unknown card: got %v want ErrUnknownCard", err)
			}
			if err := tt.answer(s, q); err != nil {
				t.Fatalf("answer: %v", err)
			}
			waitTurn(t, sink, from)
			if got := sink.text(from); got != tt.want {
				t.Errorf("agent heard: got %q want %q", got, tt.want)
			}
		})
	}
}

func TestFakeAgentQuestionAnswerNotOffered(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, _ := startFake(t, "")
	from := sink.len()
	prompt(t, s, "ask")
	q := waitPayload[chat.Question](t, sink, from, "question")
	err := s.AnswerQuestion(context.Background(), q.RequestID, driver.QuestionAnswer{Answers: chat.Answers{q.Questions[0].Question: {Text: "green"}}})
	if !errors.Is(err, chat.ErrBadInput) {
		t.Fatalf("answer with a color not offered: got %v want ErrBadInput", err)
	}
	// The card is still open: a proper answer reaches the agent.
	if err := s.AnswerQuestion(context.Background(), q.RequestID, driver.QuestionAnswer{Answers: chat.Answers{q.Questions[0].Question: {Text: "red"}}}); err != nil {
		t.Fatalf("answer after the refused one: %v", err)
	}
	waitTurn(t, sink, from)
	if got := sink.text(from); got != `accepted {"color":"red"}` {
		t.Errorf("agent heard: got %q want the offered color only", got)
	}
}

func TestFakeAgentQuestionAfterStop(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, _ := startFake(t, "")
	from := sink.len()
	prompt(t, s, "ask-after-stop")
	testkit.Eventually(t, 10*time.Second, func() bool { return sink.text(from) == "waiting" }, "no chunk")
	if err := s.Cancel(context.Background()); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if got := waitTurn(t, sink, from); got != chat.StopCancelled {
		t.Fatalf("stop reason: got %q want cancelled", got)
	}
	if got := sink.text(from); got != "waitingcancelled" {
		t.Errorf("agent heard: got %q want its late question cancelled at once", got)
	}
	if qs := payloads[chat.Question](sink, from); len(qs) != 0 {
		t.Errorf("question cards after the stop: got %+v want none", qs)
	}
	if n := sink.count(from, "withdrawn", ""); n != 0 {
		t.Errorf("withdrawn cards: got %d want 0 (none was opened)", n)
	}
}

func TestFakeAgentConfigOptions(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	tests := []struct {
		name       string
		id, value  string
		emptyReply bool   // the agent answers with no options
		want       string // the agent's state afterwards
	}{
		{name: "select", id: "effort", value: "high", want: "effort=high verbose=false"},
		{name: "boolean", id: "verbose", value: "true", want: "effort=low verbose=true"},
		{name: "select, empty reply", id: "effort", value: "high", emptyReply: true, want: "effort=high verbose=false"},
		{name: "boolean, empty reply", id: "verbose", value: "true", emptyReply: true, want: "effort=low verbose=true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if tt.emptyReply {
				env = append(env, "PARLEY_FAKE_EMPTY_CONFIG_REPLY=1")
			}
			s, sink, _ := startFake(t, "", env...)
			modes := payloads[chat.Mode](sink, 0)
			if len(modes) == 0 || len(modes[0].ConfigOptions) != 2 {
				t.Fatalf("mode at start: got %+v want two config options", modes)
			}
			from := sink.len()
			if err := s.SetConfigOption(context.Background(), tt.id, "not-a-value"); !errors.Is(err, chat.ErrBadInput) {
				t.Errorf("a value not offered: got %v want ErrBadInput", err)
			}
			if err := s.SetConfigOption(context.Background(), tt.id, tt.value); err != nil {
				t.Fatalf("SetConfigOption(%s, %s): %v", tt.id, tt.value, err)
			}
			after := payloads[chat.Mode](sink, from)
			if len(after) != 1 {
				t.Fatalf("mode events after the change: got %+v want one", after)
			}
			got := map[string]string{}
			for _, o := range after[0].ConfigOptions {
				got[o.ID] = o.Current
			}
			want := map[string]string{"effort": "low", "verbose": "false", tt.id: tt.value}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("options after the change: got %v want %v (every option kept)", got, want)
			}
			if after[0].Current != "ask" {
				t.Errorf("mode after the change: got %q want ask", after[0].Current)
			}
			// The change reached the agent in the option's own shape.
			if _, text := runTurn(t, s, sink, "config"); text != tt.want {
				t.Errorf("agent's state: got %q want %q", text, tt.want)
			}
			// The first mode event was not changed behind the screen's back.
			if first := payloads[chat.Mode](sink, 0)[0]; first.ConfigOptions[0].Current != "low" || first.ConfigOptions[1].Current != "false" {
				t.Errorf("the mode reported at start changed afterwards: %+v", first.ConfigOptions)
			}
		})
	}
}

func TestFakeAgentPermission(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	tests := []struct {
		name       string
		act        func(s *Session, req chat.PermissionRequest) error
		wantReason string
		wantText   string
		withdrawn  int
		wantStatus string
	}{
		{name: "allow", wantReason: chat.StopEndTurn, wantText: "selected yes", wantStatus: "failed",
			act: func(s *Session, req chat.PermissionRequest) error {
				return s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: "yes"})
			}},
		{name: "stop", wantReason: chat.StopCancelled, withdrawn: 0, wantStatus: "failed", // the lane closes the card
			act: func(s *Session, req chat.PermissionRequest) error { return s.Cancel(context.Background()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, sink, _ := startFake(t, "")
			from := sink.len()
			prompt(t, s, "perm")
			req := waitPayload[chat.PermissionRequest](t, sink, from, "permission_request")
			if req.Tool.ToolCallID != "t-9" || req.Tool.Title != "rm -rf build" || len(req.Options) != 2 {
				t.Fatalf("card: got %+v", req)
			}
			if calls := payloads[chat.ToolCall](sink, from); len(calls) != 1 || calls[0].ToolCallID != "t-9" {
				t.Errorf("tool call reported before the card: got %+v", calls)
			}
			if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: "maybe"}); !errors.Is(err, chat.ErrBadInput) {
				t.Errorf("answer with an option not offered: got %v want ErrBadInput", err)
			}
			if err := tt.act(s, req); err != nil {
				t.Fatal(err)
			}
			if got := waitTurn(t, sink, from); got != tt.wantReason {
				t.Errorf("stop reason: got %q want %q", got, tt.wantReason)
			}
			if got := sink.text(from); got != tt.wantText {
				t.Errorf("agent heard: got %q want %q", got, tt.wantText)
			}
			if got := sink.count(from, "withdrawn", req.RequestID); got != tt.withdrawn {
				t.Errorf("withdrawn: got %d want %d", got, tt.withdrawn)
			}
			// The fake agent never reports the tool's end: the turn's end closes it.
			ups := payloads[chat.ToolCallUpdate](sink, from)
			if len(ups) == 0 || ups[len(ups)-1].Status != tt.wantStatus {
				t.Errorf("tool call's end: got %+v want status %s", ups, tt.wantStatus)
			}
		})
	}
}

func TestFakeAgentCancelIgnored(t *testing.T) {
	// Not parallel: it shortens the package's cancelGrace, which every
	// other test's Cancel reads (a data race the race detector caught when
	// TestGeminiStop ran beside it); parallel tests start only after it.
	old := cancelGrace
	cancelGrace = 200 * time.Millisecond
	t.Cleanup(func() { cancelGrace = old })
	s, sink, _ := startFake(t, "")
	from := sink.len()
	prompt(t, s, "hang")
	testkit.Eventually(t, 10*time.Second, func() bool { return sink.text(from) == "hanging" }, "no chunk")
	if err := s.Cancel(context.Background()); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if got := waitTurn(t, sink, from); got != chat.StopCancelled {
		t.Fatalf("stop reason: got %q want cancelled", got)
	}
	if err := s.Cancel(context.Background()); !errors.Is(err, chat.ErrNoTurn) {
		t.Errorf("second Cancel: got %v want ErrNoTurn", err)
	}
	// The agent is still busy with the old prompt, but a new one is delivered.
	next := sink.len()
	prompt(t, s, "hello")
	if got := waitTurn(t, sink, next); got != chat.StopEndTurn {
		t.Errorf("next turn: got %q", got)
	}
}

// An agent that dies on reading the prompt never showed it had it: no turn
// of it ends (no Received, no TurnEnded); the exit says why, with stderr.
func TestFakeAgentCrash(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, _ := startFake(t, "")
	from := sink.len()
	prompt(t, s, "crash")
	testkit.Eventually(t, 10*time.Second, func() bool { return sink.count(from, "exited", "") == 1 }, "no Exited:\n%s", sink.dump())
	for _, rec := range sink.since(from) {
		if rec.Kind == "exited" && (!strings.Contains(rec.Value, "fake agent: boom") || !strings.Contains(rec.Value, "exit status 3")) {
			t.Errorf("exit: got %q want the exit status and stderr tail", rec.Value)
		}
	}
	if n, m := sink.count(from, "received", ""), sink.count(from, "turn_ended", ""); n != 0 || m != 0 {
		t.Errorf("received %d, TurnEnded %d for a prompt the agent never showed it had; want none:\n%s", n, m, sink.dump())
	}
	if err := s.Prompt(context.Background(), driver.Prompt{Text: "x"}); !errors.Is(err, driver.ErrNotRunning) {
		t.Errorf("Prompt after the crash: got %v want ErrNotRunning", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close after the crash: %v", err)
	}
}

// An agent that dies in the middle of a turn it showed it had ends the turn
// with an error saying why.
func TestFakeAgentCrashMidTurn(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, _ := startFake(t, "")
	from := sink.len()
	prompt(t, s, "crash-after-words")
	if got := waitTurn(t, sink, from); got != chat.StopError {
		t.Fatalf("stop reason: got %q want error", got)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return sink.count(from, "exited", "") == 1 }, "no Exited")
	if n := sink.count(from, "received", ""); n != 1 {
		t.Errorf("received %d times, want once", n)
	}
	errs := payloads[chat.Error](sink, from)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "fake agent: boom") || !strings.Contains(errs[0].Message, "exit status 3") {
		t.Errorf("error: got %+v want one with the exit status and stderr tail", errs)
	}
	if got := sink.count(from, "turn_ended", ""); got != 1 {
		t.Errorf("TurnEnded calls: got %d want exactly 1", got)
	}
}

func TestFakeAgentResume(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	tests := []struct {
		caps      string // what the agent offers
		id        string
		wantID    string
		wantError string
		wantWhy   string // in the error's message
	}{
		{caps: "resume", id: "known", wantID: "known"},
		{caps: "resume", id: "gone", wantID: "fresh", wantError: chat.CodeNoHistory, wantWhy: "session/resume: no such session"},
		{caps: "load", id: "known", wantID: "known"},
		// session/resume fails, session/load brings it back.
		{caps: "resume+load", id: "loadable", wantID: "loadable"},
		{caps: "resume+load", id: "gone", wantID: "fresh", wantError: chat.CodeNoHistory, wantWhy: "session/resume: no such session; session/load: nothing to load"},
		{caps: "none", id: "known", wantID: "fresh", wantError: chat.CodeNoHistory, wantWhy: "neither resume nor load"},
	}
	for _, tt := range tests {
		t.Run(tt.caps+" "+tt.id, func(t *testing.T) {
			t.Parallel()
			s, sink, _ := startFake(t, tt.id, "PARLEY_FAKE_SESSION_CAPS="+tt.caps)
			if got := sink.sessionID(); got != tt.wantID {
				t.Errorf("session id: got %q want %q", got, tt.wantID)
			}
			errs := payloads[chat.Error](sink, 0)
			switch {
			case tt.wantError == "" && len(errs) != 0:
				t.Errorf("errors: got %+v want none", errs)
			case tt.wantError != "" && (len(errs) != 1 || errs[0].Code != tt.wantError || !strings.Contains(errs[0].Message, tt.wantWhy)):
				t.Errorf("errors: got %+v want one %s saying %q", errs, tt.wantError, tt.wantWhy)
			}
			// A load's replay is history parley already shows.
			if got := sink.text(0); got != "" {
				t.Errorf("text before the first prompt: got %q want none (the replay is hidden)", got)
			}
			if reason, text := runTurn(t, s, sink, "hi"); reason != chat.StopEndTurn || text != "echo hi" {
				t.Errorf("turn: got %q %q", reason, text)
			}
		})
	}
}

// TestFakeAgentLateReplayHidden: a load's replay that arrives after Start has
// returned (the replay went quiet, then went on) is still hidden, up to the
// first prompt; the turn after it shows only its own text.
func TestFakeAgentLateReplayHidden(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	s, sink, _ := startFake(t, "known", "PARLEY_FAKE_SESSION_CAPS=load", "PARLEY_FAKE_LATE_REPLAY=1")
	from := sink.len()
	// The SDK hands parley every update the agent sent before its answer
	// before SetMode returns: the late replayed message has been handled.
	if err := s.SetMode(context.Background(), "code"); err != nil {
		t.Fatalf("SetMode: %v", err)
	}
	if got := sink.text(0); got != "" {
		t.Errorf("text before the first prompt: got %q want none (replayed history)", got)
	}
	if m := payloads[chat.Mode](sink, from); len(m) != 1 || m[0].Current != "code" {
		t.Errorf("mode after SetMode: got %+v want code", m)
	}
	if reason, text := runTurn(t, s, sink, "hi"); reason != chat.StopEndTurn || text != "echo hi" {
		t.Errorf("first turn: got %q %q want end_turn %q", reason, text, "echo hi")
	}
	// Hiding ended with the first prompt: the agent's messages show again.
	next := sink.len()
	if err := s.SetMode(context.Background(), "ask"); err != nil {
		t.Fatalf("SetMode: %v", err)
	}
	if got := sink.text(next); got != "late old answer" {
		t.Errorf("agent message after the first prompt: got %q want it shown", got)
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel() // each test runs its own fake agent process
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec driver.Spec
		want string
	}{
		{name: "no command", spec: driver.Spec{Cwd: t.TempDir()}, want: "no command"},
		{name: "missing program", spec: driver.Spec{Command: "/nonexistent/agent", Cwd: t.TempDir()}, want: "start /nonexistent/agent"},
		{name: "not an ACP agent", spec: driver.Spec{Command: "/bin/sh", Args: []string{"-c", "echo not json; echo oops >&2"}, Cwd: t.TempDir()}, want: "oops"},
		{name: "auth method not offered", spec: driver.Spec{Command: exe, Env: []string{"PARLEY_ACP_FAKE_AGENT=1"}, Cwd: t.TempDir(), Options: map[string]string{OptAuthMethod: "oauth"}}, want: `auth method "oauth"`},
		{name: "missing cwd", spec: driver.Spec{Command: exe, Cwd: "/nonexistent/dir"}, want: "working directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := New(nil).Start(ctx, tt.spec, &recSink{})
			if err == nil {
				s.Close(ctx)
				t.Fatalf("Start: got a session want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start: got %v want it to say %q", err, tt.want)
			}
		})
	}
}

// An agent that ends by itself when its stdin closes leaves no child behind:
// its shells and MCP servers, in its process group, are ended with it.
func TestClosedAgentLeavesNoChildRunning(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child")
	s, _, _ := startFake(t, "", "PARLEY_FAKE_CHILD="+pidFile)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true // gone
		}
		fields := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		return len(fields) > 0 && fields[0] == "Z" // ended, not yet reaped by its new parent
	}, "the agent's child still runs after the session closed")
}
