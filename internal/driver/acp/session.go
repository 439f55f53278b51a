package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// Session is one running ACP agent serving a thread.
//
// Lock order (docs/locks.md): modeEv, then mu. mu is a leaf: the sink
// is never called with it held. modeEv is held from a change of the mode
// state (mode, config options) until its event is sent, by the agent's
// session/update handler and by SetMode and SetConfigOption after their
// reply: the mode events go out in the order the state changed, so the last
// one reported is the one in force. (The lane sends settings one at a time,
// in the order chosen: the driver adds no ordering of its own.)
type Session struct {
	logger *slog.Logger
	sink   driver.Sink
	spec   driver.Spec
	jail   jail

	cmd       *exec.Cmd
	stdin     *os.File
	stdout    *os.File
	kill      context.CancelFunc // ends the process group while the leader runs
	pgid      int                // the process group (the leader's pid)
	conn      *sdk.ClientSideConnection
	stderr    tail
	exited    chan struct{} // closed once the process is reaped
	drained   chan struct{} // closed once all the agent wrote is handled (the drain marker)
	drainOnce sync.Once
	waitErr   error // set before exited closes
	caps      sdk.AgentCapabilities
	wg        sync.WaitGroup // turn goroutines and the exit watcher

	modeEv     sync.Mutex
	mu         sync.Mutex
	id         sdk.SessionId
	m          *mapper
	setModel   bool          // the model is chosen with unstable session/set_model
	replaying  bool          // after session/load: history kinds are hidden until the first prompt is written
	replayTick chan struct{} // a replayed update arrived (buffered, 1)
	replayEnd  bool          // the agent sent what follows its replay
	turn       *turn
	perms      map[string]*pendingCard
	questions  map[string]*pendingCard
	promptSent chan error // fired once the next session/prompt is written
	closing    bool
	closed     bool // Close has returned: the sink hears nothing more
}

// turn is the prompt in flight. Its fields are guarded by Session.mu.
type turn struct {
	cancelled bool
	ended     bool
	received  bool        // the agent showed it has the prompt (Sink.Received)
	timer     *time.Timer // ends a cancelled turn the agent does not end
}

// pendingCard is an open permission request or question.
type pendingCard struct {
	answer   chan any          // buffered: the handler's reply
	cancel   any               // the reply when the card is cancelled
	options  map[string]string // permission option id → kind
	toolCall string            // the permission's tool call id
	fields   []field           // question fields (a form elicitation)
	qwen     *qwenCard         // a question Qwen Code asked as a permission
}

var _ driver.Session = (*Session)(nil)

// open runs initialize, authenticate and session/new (or resume/load).
func (s *Session) open(ctx context.Context) error {
	if err := s.initialize(ctx); err != nil {
		return err
	}
	mcp, err := mcpServers(s.spec.Options[OptMCPServers])
	if err != nil {
		return err
	}
	mcp = s.withTools(mcp)
	if s.spec.ResumeID != "" {
		if err := s.resume(ctx, mcp); err != nil {
			return err
		}
	} else if err := s.newSession(ctx, mcp); err != nil {
		return err
	}
	s.mu.Lock()
	mode := s.m.mode()
	s.mu.Unlock()
	if mode.Current != "" || len(mode.ConfigOptions) > 0 {
		s.sink.Event(mode)
	}
	if s.spec.Mode != "" && s.spec.Mode != mode.Current {
		if err := s.SetMode(ctx, s.spec.Mode); err != nil {
			return err
		}
	}
	// A resumed session may be on the model asked for already (parley asks
	// again for the one the agent last reported): nothing to set then.
	if s.spec.Model != "" && s.spec.Model != mode.Model() {
		if err := s.SetConfigOption(ctx, modelOption, s.spec.Model); err != nil {
			return err
		}
	}
	return nil
}

// initialize runs initialize and, when the config names a method, authenticate.
func (s *Session) initialize(ctx context.Context) error {
	init, err := s.conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{
			Fs:          sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.ElicitationFormCapabilities{}},
		},
		ClientInfo: &sdk.Implementation{Name: "parley", Version: Version},
	})
	if err != nil {
		return fmt.Errorf("acp: initialize: %w", err)
	}
	s.caps = init.AgentCapabilities
	if method := s.spec.Options[OptAuthMethod]; method != "" {
		if !offersAuth(init.AuthMethods, method) {
			return fmt.Errorf("acp: the agent does not offer auth method %q", method)
		}
		if _, err := s.conn.Authenticate(ctx, sdk.AuthenticateRequest{MethodId: method}); err != nil {
			return fmt.Errorf("acp: authenticate %s: %w", method, err)
		}
	}
	return nil
}

func offersAuth(methods []sdk.AuthMethod, id string) bool {
	for _, m := range methods {
		switch {
		case m.Agent != nil && m.Agent.Id == id,
			m.EnvVar != nil && m.EnvVar.Id == id,
			m.Terminal != nil && m.Terminal.Id == id:
			return true
		}
	}
	return false
}

// mcpServers reads the config's MCP servers: a JSON array in ACP's own shape.
func mcpServers(raw string) ([]sdk.McpServer, error) {
	out := []sdk.McpServer{}
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("acp: mcp_servers option: %w", err)
	}
	return out, nil
}

// withTools adds parley's own MCP server (spec.Tools) to the configured
// ones, over HTTP, when the agent takes HTTP servers (every agent checked
// does; Copilot takes no other kind from a client). A configured server of
// the same name gives way: parley's tools are parley's.
func (s *Session) withTools(mcp []sdk.McpServer) []sdk.McpServer {
	t := s.spec.Tools
	if t == nil {
		return mcp
	}
	if !s.caps.McpCapabilities.Http {
		s.logger.Info("the agent takes no MCP server over HTTP: it gets no parley tools")
		return mcp
	}
	out := make([]sdk.McpServer, 0, len(mcp)+1)
	for _, m := range mcp {
		if mcpName(m) != t.Name {
			out = append(out, m)
		}
	}
	headers := make([]sdk.HttpHeader, 0, len(t.Headers))
	for k, v := range t.Headers {
		headers = append(headers, sdk.HttpHeader{Name: k, Value: v})
	}
	return append(out, sdk.McpServer{Http: &sdk.McpServerHttpInline{Type: "http", Name: t.Name, Url: t.URL, Headers: headers}})
}

// mcpName is a configured MCP server's name, whatever its transport.
func mcpName(m sdk.McpServer) string {
	switch {
	case m.Http != nil:
		return m.Http.Name
	case m.Sse != nil:
		return m.Sse.Name
	case m.Stdio != nil:
		return m.Stdio.Name
	}
	return ""
}

func (s *Session) newSession(ctx context.Context, mcp []sdk.McpServer) error {
	resp, err := s.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: s.jail.root, McpServers: mcp})
	if err != nil {
		return fmt.Errorf("acp: session/new: %w", err)
	}
	s.adopt(resp.SessionId, resp.Modes, resp.Models, resp.ConfigOptions)
	return nil
}

// resume brings back spec.ResumeID: session/resume when offered, else (or
// when it fails) session/load (its replay suppressed), else a new session
// and an error event saying the history is lost.
func (s *Session) resume(ctx context.Context, mcp []sdk.McpServer) error {
	id := sdk.SessionId(s.spec.ResumeID)
	var whys []string
	if s.caps.SessionCapabilities.Resume != nil {
		resp, err := s.conn.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: id, Cwd: s.jail.root, McpServers: mcp})
		if err == nil {
			s.adopt(id, resp.Modes, resp.Models, resp.ConfigOptions)
			return nil
		}
		whys = append(whys, "session/resume: "+errText(err))
		if s.caps.LoadSession {
			s.logger.Info("session/resume failed; trying session/load", "session", s.spec.ResumeID, "err", err)
		}
	}
	if s.caps.LoadSession {
		s.mu.Lock()
		s.id, s.replaying = id, true
		s.mu.Unlock()
		resp, err := s.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: s.jail.root, McpServers: mcp})
		if err == nil {
			s.adopt(id, resp.Modes, resp.Models, resp.ConfigOptions)
			s.awaitReplay(ctx)
			return nil
		}
		s.mu.Lock()
		s.id, s.replaying = "", false
		s.mu.Unlock()
		whys = append(whys, "session/load: "+errText(err))
	}
	if len(whys) == 0 {
		whys = append(whys, "the agent can neither resume nor load sessions")
	}
	why := strings.Join(whys, "; ")
	s.logger.Warn("resume failed; starting a new session", "session", s.spec.ResumeID, "err", why)
	if err := s.newSession(ctx, mcp); err != nil {
		return err
	}
	s.sink.Event(chat.Error{Code: chat.CodeNoHistory, Message: fmt.Sprintf(
		"%v: the agent's session %s could not be restored (%s), so this is a new session without the earlier history",
		driver.ErrHistoryLost, s.spec.ResumeID, why)})
	return nil
}

// How long the replay of session/load may run on after the response.
const (
	replayQuiet = 300 * time.Millisecond // no replayed update for this long: over
	replayAfter = 100 * time.Millisecond // quiet needed after the end marker
	replayMax   = 5 * time.Second
)

// awaitReplay waits until session/load's replay has gone quiet, so that the
// first prompt is not written while the agent still replays. The protocol
// puts the replay before the response, and then there is nothing to wait
// for; Gemini CLI 0.61.0 streams it after the response, concurrently with
// whatever it handles next (its streamHistory is not awaited), with nothing
// that marks its end (available_commands_update comes from a timer that can
// fire mid-replay).
//
// What is hidden does not depend on these timers: replayed history stays
// hidden until the first prompt is written (see promptWatch), so a replay
// that pauses longer than replayQuiet or outlasts replayMax is still not
// shown. The timers only bound how long Start waits. Hiding cannot end at the
// prompt alone: a replay still in flight when the prompt is written would be
// taken for the new turn, and parley cannot tell the two apart.
func (s *Session) awaitReplay(ctx context.Context) {
	quiet := time.NewTimer(replayQuiet)
	defer quiet.Stop()
	limit := time.NewTimer(replayMax)
	defer limit.Stop()
	for {
		select {
		case <-s.replayTick:
			s.mu.Lock()
			wait := replayQuiet
			if s.replayEnd {
				wait = replayAfter
			}
			s.mu.Unlock()
			quiet.Reset(wait)
		case <-quiet.C:
			return
		case <-limit.C:
			s.logger.Warn("session/load replay did not go quiet; going on (it stays hidden until the first prompt)")
			return
		case <-ctx.Done():
			return
		case <-s.exited:
			return
		}
	}
}

// adopt records a session's id and state and reports the id.
func (s *Session) adopt(id sdk.SessionId, modes *sdk.SessionModeState, models *sdk.SessionModelState, opts []sdk.SessionConfigOption) {
	s.mu.Lock()
	s.id = id
	s.m.setModes(modes)
	s.m.setOptions(opts)
	if _, ok := s.m.option(modelOption); !ok && models != nil {
		s.m.setModels(models)
		s.setModel = true
	}
	s.mu.Unlock()
	s.sink.SessionID(string(id))
}

// watch waits for the process to end and, unless parley ended it, reports
// the turn it broke, the cards it left and the exit.
func (s *Session) watch() {
	defer s.wg.Done()
	<-s.exited
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	t, closed := s.beginClosingLocked()
	if t != nil && !t.received {
		// The agent never showed it had the prompt: no turn of it to end;
		// the exit says why the prompt did not get there.
		t = nil
	}
	s.mu.Unlock()
	s.endGroup() // before the exit is reported: a new agent may resume the session then

	why := "exited"
	if s.waitErr != nil {
		why = s.waitErr.Error()
	}
	msg := "the agent " + why
	if tail := s.stderr.String(); tail != "" {
		msg += "; its last words on stderr: " + tail
	}
	if t != nil {
		for _, p := range closed {
			s.sink.Event(p)
		}
		s.sink.Event(chat.Error{Code: chat.CodeAgent, Message: "the turn broke off: " + msg})
		s.sink.TurnEnded(chat.StopError)
	}
	s.logger.Warn("agent exited", "err", s.waitErr)
	s.sink.Exited(fmt.Errorf("acp: %s", msg))
}

// takeCards removes every open card, answering its request cancelled; the
// cards themselves are the lane's to close. Call with mu held.
func (s *Session) takeCards() {
	for _, cards := range []map[string]*pendingCard{s.perms, s.questions} {
		for _, c := range cards {
			c.answer <- c.cancel
		}
	}
	clear(s.perms)
	clear(s.questions)
}

// Prompt sends session/prompt and returns once it is written to the agent's
// stdin. The turn runs on; the agent's first session/update of the turn's
// content, card or prompt response is reported as Sink.Received (a line in a
// pipe proves nothing: the agent may die before reading it), and its end
// comes through Sink.TurnEnded.
func (s *Session) Prompt(ctx context.Context, p driver.Prompt) error {
	blocks := []sdk.ContentBlock{sdk.TextBlock(p.Text)}
	for _, img := range p.Images {
		if !s.caps.PromptCapabilities.Image {
			return fmt.Errorf("acp: %w: this agent takes no images", driver.ErrUnsupported)
		}
		blocks = append(blocks, sdk.ImageBlock(base64.StdEncoding.EncodeToString(img.Data), img.MIMEType))
	}
	if s.caps.PromptCapabilities.Image {
		for _, img := range p.FileImages {
			blocks = append(blocks, sdk.ImageBlock(base64.StdEncoding.EncodeToString(img.Data), img.MIMEType))
		}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return fmt.Errorf("acp: %w", driver.ErrNotRunning)
	}
	if s.turn != nil {
		s.mu.Unlock()
		return errors.New("acp: a turn is already running")
	}
	sent := make(chan error, 1)
	s.promptSent = sent
	t := &turn{}
	s.turn = t
	req := sdk.PromptRequest{SessionId: s.id, Prompt: blocks}
	s.mu.Unlock()

	s.wg.Add(1)
	go s.run(t, req)
	select {
	case err := <-sent:
		if err != nil {
			return fmt.Errorf("acp: the agent did not take the message: %w", err)
		}
		return nil
	case <-s.exited:
		// The agent may have read the line and ended at once: what counts
		// is whether the line was written, which the writer says next (or
		// run, when it never was written).
		select {
		case err := <-sent:
			if err == nil {
				return nil
			}
		case <-ctx.Done():
		}
		return fmt.Errorf("acp: %w", driver.ErrNotRunning)
	case <-ctx.Done():
		return fmt.Errorf("acp: prompt: %w", ctx.Err())
	}
}

// run waits for the prompt's response and ends the turn with its stop reason.
func (s *Session) run(t *turn, req sdk.PromptRequest) {
	defer s.wg.Done()
	// The turn outlives Prompt's ctx: it ends by its response, Cancel or exit.
	resp, err := s.conn.Prompt(context.Background(), req)
	s.mu.Lock()
	if s.promptSent != nil && err != nil {
		// Never written (a dead pipe): Prompt is still waiting to hear.
		s.promptSent <- err
		s.promptSent = nil
	}
	if t.ended {
		s.mu.Unlock()
		return
	}
	select {
	case <-s.conn.Done():
		if err != nil && !s.closing {
			// The agent is gone: watch reports the turn with its stderr.
			s.mu.Unlock()
			return
		}
	default:
	}
	t.ended = true
	if t.timer != nil {
		t.timer.Stop()
	}
	if s.turn == t {
		s.turn = nil
	}
	// Answered without a word before: the answer is the evidence.
	first := err == nil && !t.received
	t.received = t.received || first
	summed, haveSum := s.m.takeUsage()
	closed := s.m.closeTools()
	s.mu.Unlock()

	if first {
		s.sink.Received()
	}
	if err == nil {
		// One event with all the turn's usage: a client shows the latest.
		u, ok := usageOf(resp)
		if !ok {
			u, ok = summed, haveSum
		} else {
			if u.CostUSD == 0 {
				u.CostUSD = summed.CostUSD
			}
			u.ContextTokens, u.ContextWindow = summed.ContextTokens, summed.ContextWindow
		}
		if ok {
			s.sink.Event(u)
		}
	}
	for _, p := range closed {
		s.sink.Event(p)
	}
	switch {
	case err == nil:
		s.sink.TurnEnded(stopReason(resp.StopReason))
	case t.cancelled:
		s.sink.TurnEnded(chat.StopCancelled)
	default:
		s.sink.Event(chat.Error{Code: chat.CodeAgent, Message: "the agent failed the turn: " + errText(err)})
		s.sink.TurnEnded(chat.StopError)
	}
}

// usageOf reads a turn's token counts: ACP's usage field, or Gemini CLI's
// _meta.quota.token_count.
func usageOf(r sdk.PromptResponse) (chat.Usage, bool) {
	if r.Usage != nil {
		return chat.Usage{InputTokens: int64(r.Usage.InputTokens), OutputTokens: int64(r.Usage.OutputTokens)}, true
	}
	var meta struct {
		Quota struct {
			TokenCount struct {
				In  int64 `json:"input_tokens"`
				Out int64 `json:"output_tokens"`
			} `json:"token_count"`
		} `json:"quota"`
	}
	b, err := json.Marshal(r.Meta)
	if err != nil || json.Unmarshal(b, &meta) != nil {
		return chat.Usage{}, false
	}
	tc := meta.Quota.TokenCount
	if tc.In == 0 && tc.Out == 0 {
		return chat.Usage{}, false
	}
	return chat.Usage{InputTokens: tc.In, OutputTokens: tc.Out}, true
}

// errText is an error as a person reads it: a JSON-RPC error's message and data.
func errText(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		msg := re.Message
		if m, ok := re.Data.(map[string]any); ok {
			if d, ok := m["error"].(string); ok && d != "" {
				msg += ": " + d
			} else if d, ok := m["details"].(string); ok && d != "" {
				msg += ": " + d
			}
		}
		return msg
	}
	return err.Error()
}

// Cancel sends session/cancel at once, answers every open card cancelled and
// withdraws it. The turn ends when the agent answers the prompt (cancelled),
// or after a grace period if it does not.
func (s *Session) Cancel(ctx context.Context) error {
	s.mu.Lock()
	t := s.turn
	if t == nil || t.ended {
		s.mu.Unlock()
		return fmt.Errorf("acp: %w", chat.ErrNoTurn)
	}
	t.cancelled = true
	id := s.id
	if t.timer == nil {
		t.timer = time.AfterFunc(cancelGrace, func() { s.endCancelled(t) })
	}
	s.mu.Unlock()
	// The notification first: the agent stops generating while its requests
	// are answered cancelled (the lane closed their cards with the stop).
	err := s.conn.Cancel(ctx, sdk.CancelNotification{SessionId: id})
	s.mu.Lock()
	s.takeCards()
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("acp: session/cancel: %w", err)
	}
	return nil
}

// endCancelled ends a cancelled turn the agent never answered.
func (s *Session) endCancelled(t *turn) {
	s.mu.Lock()
	if t.ended || s.closing {
		s.mu.Unlock()
		return
	}
	t.ended = true
	if s.turn == t {
		s.turn = nil
	}
	s.m.takeUsage()
	closed := s.m.closeTools()
	s.mu.Unlock()
	s.logger.Warn("the agent did not end a cancelled turn; ending it")
	for _, p := range closed {
		s.sink.Event(p)
	}
	s.sink.TurnEnded(chat.StopCancelled)
}

// AnswerPermission answers an open permission request with the chosen option.
// A dismissal (or an empty OptionID) answers it cancelled.
func (s *Session) AnswerPermission(ctx context.Context, requestID string, a driver.PermissionAnswer) error {
	s.mu.Lock()
	c, ok := s.perms[requestID]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("acp: %w", driver.ErrUnknownCard)
	}
	var out sdk.RequestPermissionResponse
	if a.Cancelled || a.OptionID == "" {
		out.Outcome.Cancelled = &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}
	} else {
		kind, ok := c.options[a.OptionID]
		if !ok {
			s.mu.Unlock()
			return fmt.Errorf("acp: %w: option %q is not one the agent offered", chat.ErrBadInput, a.OptionID)
		}
		if strings.HasPrefix(kind, "reject") {
			if a.Message != "" {
				// ACP's answer is an option alone: the words would be lost.
				s.mu.Unlock()
				return fmt.Errorf("acp: %w", driver.ErrNoWords)
			}
			s.m.refuse(c.toolCall)
		}
		out.Outcome.Selected = &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: sdk.PermissionOptionId(a.OptionID)}
	}
	delete(s.perms, requestID)
	s.mu.Unlock()
	c.answer <- out
	return nil
}

// AnswerQuestion answers an open question: a form elicitation (a free
// Response with no answers fills a single text field, or else declines the
// form) or a question Qwen Code asked as a permission.
func (s *Session) AnswerQuestion(ctx context.Context, requestID string, a driver.QuestionAnswer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.questions[requestID]
	if !ok {
		return fmt.Errorf("acp: %w", driver.ErrUnknownCard)
	}
	if a.Cancelled {
		delete(s.questions, requestID)
		c.answer <- c.cancel
		return nil
	}
	if c.qwen != nil {
		out, err := c.qwen.answer(a.Answers, a.Response)
		if err != nil {
			return fmt.Errorf("acp: %w", err)
		}
		delete(s.questions, requestID)
		c.answer <- out
		return nil
	}
	answers := a.Answers
	if len(answers) == 0 && a.Response != "" && len(c.fields) == 1 && (len(c.fields[0].values) == 0 || c.fields[0].custom != "") {
		answers = chat.Answers{c.fields[0].item.Question: {Text: a.Response}}
	}
	var out sdk.UnstableCreateElicitationResponse
	if len(answers) == 0 {
		out.Decline = &sdk.UnstableCreateElicitationDecline{Action: "decline"}
	} else {
		content, err := formAnswer(c.fields, answers)
		if err != nil {
			return fmt.Errorf("acp: %w", err)
		}
		out.Accept = &sdk.UnstableCreateElicitationAccept{Action: "accept", Content: content}
	}
	delete(s.questions, requestID)
	c.answer <- out
	return nil
}

// SetMode sends session/set_mode and reports the new mode.
func (s *Session) SetMode(ctx context.Context, modeID string) error {
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	if _, err := s.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: id, ModeId: sdk.SessionModeId(modeID)}); err != nil {
		return fmt.Errorf("acp: set mode %q: %s: %w", modeID, errText(err), err)
	}
	s.modeChanged(func() []chat.Payload { return s.m.setMode(modeID) })
	return nil
}

// modeChanged changes the mode state (f, under mu) and reports what it
// returns, holding modeEv throughout (see the lock order).
func (s *Session) modeChanged(f func() []chat.Payload) {
	s.modeEv.Lock()
	defer s.modeEv.Unlock()
	s.mu.Lock()
	ps := f()
	s.mu.Unlock()
	for _, p := range ps {
		s.sink.Event(p)
	}
}

// SetConfigOption sends session/set_config_option (or, for the model of an
// agent that lists models the unstable way, session/set_model) and reports
// the options that result.
func (s *Session) SetConfigOption(ctx context.Context, id, value string) error {
	s.mu.Lock()
	sid := s.id
	opt, ok := s.m.option(id)
	viaModel := id == modelOption && s.setModel
	kind := s.m.kinds[id]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("acp: %w: no config option %q", driver.ErrUnsupported, id)
	}
	if len(opt.Values) > 0 && !slices.ContainsFunc(opt.Values, func(v chat.ModeOption) bool { return v.ID == value }) {
		return fmt.Errorf("acp: %w: %q is not a value of %q", chat.ErrBadInput, value, id)
	}
	if viaModel {
		if _, err := s.conn.UnstableSetSessionModel(ctx, sdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: sdk.UnstableModelId(value)}); err != nil {
			return fmt.Errorf("acp: set model %q: %w", value, err)
		}
		s.modeChanged(func() []chat.Payload {
			s.m.setCurrent(modelOption, value)
			return []chat.Payload{s.m.mode()}
		})
		return nil
	}
	var req sdk.SetSessionConfigOptionRequest
	if kind == "boolean" {
		req.Boolean = &sdk.SetSessionConfigOptionBoolean{SessionId: sid, ConfigId: sdk.SessionConfigId(id), Type: "boolean", Value: value == "true"}
	} else {
		req.ValueId = &sdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: sdk.SessionConfigId(id), Value: sdk.SessionConfigValueId(value)}
	}
	resp, err := s.conn.SetSessionConfigOption(ctx, req)
	if err != nil {
		return fmt.Errorf("acp: set config option %q: %w", id, err)
	}
	s.modeChanged(func() []chat.Payload {
		if len(resp.ConfigOptions) > 0 {
			s.m.setOptions(resp.ConfigOptions)
		} else {
			// The reply should carry the full set; an agent that sends none has
			// not removed every option: keep them, with the value just set.
			s.m.setCurrent(id, value)
		}
		return []chat.Payload{s.m.mode()}
	})
	return nil
}

// Close ends the agent process. A turn in flight ends cancelled and open
// cards' requests are answered cancelled. It is safe to call twice.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		<-s.exited
		s.wg.Wait()
		return nil
	}
	t, closed := s.beginClosingLocked()
	s.mu.Unlock()
	s.shutdown()
	s.wg.Wait()
	if t != nil {
		for _, p := range closed {
			s.sink.Event(p)
		}
		s.sink.TurnEnded(chat.StopCancelled)
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// promptWatch ends the hiding of a load's replay as a session/prompt line is
// written (what the agent sends after it may be the new turn), and fires
// Session.promptSent once the line is written.
type promptWatch struct {
	w io.Writer
	s *Session
}

func (p *promptWatch) Write(b []byte) (int, error) {
	isPrompt := bytes.Contains(b, []byte(`"method":"session/prompt"`))
	if isPrompt {
		p.s.mu.Lock()
		p.s.replaying = false
		p.s.mu.Unlock()
	}
	n, err := p.w.Write(b)
	if isPrompt {
		p.s.mu.Lock()
		ch := p.s.promptSent
		p.s.promptSent = nil
		p.s.mu.Unlock()
		if ch != nil {
			ch <- err
		}
	}
	return n, err
}

// evidenceLocked reports whether what the agent just sent is the first
// evidence that it has the prompt in flight, and marks it seen. Content,
// cards and the prompt's answer count; a commands or mode update does not (an
// agent may send those at any time). s.mu must be held.
func (s *Session) evidenceLocked() bool {
	t := s.turn
	if t == nil || t.ended || t.received || s.replaying {
		return false
	}
	t.received = true
	return true
}

// newCardID makes a card id unique across sessions and restarts.
func newCardID(prefix string) string {
	return prefix + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
}

// beginClosingLocked marks the session closing and takes what a close must end:
// the turn in flight (nil when none or already ended) and its still-open tool
// calls; the open cards' requests are answered cancelled (their cards are the
// lane's, which closes them at the exit or with the session). s.mu must be held.
func (s *Session) beginClosingLocked() (*turn, []chat.Payload) {
	s.closing = true
	t := s.turn
	s.turn = nil
	var closed []chat.Payload
	if t != nil && !t.ended {
		t.ended = true
		if t.timer != nil {
			t.timer.Stop()
		}
		closed = s.m.closeTools()
	} else {
		t = nil
	}
	s.takeCards()
	return t, closed
}
