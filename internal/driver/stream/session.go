package stream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/marks"
)

// permissionOptions are a card's answers. The ids are the option kinds. "Allow
// always" sends Claude Code's suggestions back and is labelled with what they
// do (a rule, a mode); without suggestions it would be "once" again, and is
// not offered.
func permissionOptions(suggestions json.RawMessage) []chat.PermissionOption {
	opts := []chat.PermissionOption{{ID: chat.OptionAllowOnce, Label: "Allow once", Kind: chat.OptionAllowOnce}}
	if l := claudecode.SuggestionLabel(suggestions); l != "" {
		opts = append(opts, chat.PermissionOption{ID: chat.OptionAllowAlways, Label: l, Kind: chat.OptionAllowAlways})
	}
	return append(opts, chat.PermissionOption{ID: chat.OptionRejectOnce, Label: "Reject", Kind: chat.OptionRejectOnce})
}

const modeBypass = "bypassPermissions"

// Modes Claude Code's set_permission_mode accepts; the last one only when the
// process was started to allow it.
var modes = []chat.ModeOption{
	{ID: "default", Name: "Default", Description: "Ask before edits and commands"},
	{ID: "acceptEdits", Name: "Accept edits", Description: "Edit files without asking"},
	{ID: "plan", Name: "Plan", Description: "Plan only, change nothing"},
	{ID: "bypassPermissions", Name: "Bypass permissions", Description: "Never ask"},
}

// cancelGrace is how long a cancelled turn may wait for Claude Code's result
// before the driver ends it by itself.
const cancelGrace = 5 * time.Second

type card struct {
	kind        string // chat.CardPermission or chat.CardQuestion
	toolName    string
	input       json.RawMessage
	suggestions json.RawMessage
	questions   []chat.QuestionItem
}

// proof follows the prompts written until Claude Code shows it has each. A
// line in its stdin proves nothing (the process may die with it unread).
// Claude Code takes the prompts in order and starts each one's turn with
// system/init; after it, the first line it writes only once the model was
// asked (a stream event, an api_retry, the replayed user message, a tool
// request, the result) is the evidence. Should the process die between the
// two, its transcript says whether it kept the prompt (see exited).
type proof struct {
	written []*sent // prompts written whose turn has not started, oldest first
	started *sent   // a turn started whose evidence has not come
}

// sent is one prompt written to stdin.
type sent struct {
	text string
	at   time.Time
}

// pending counts the prompts that await their evidence.
func (p proof) pending() int {
	if p.started != nil {
		return len(p.written) + 1
	}
	return len(p.written)
}

type pendingControl struct {
	done chan controlResponse
}

// writeReq is one line for the single stdin writer. claimed decides, exactly
// once, whether the writer writes it or the caller abandons it.
type writeReq struct {
	line    []byte
	claimed atomic.Bool
	done    chan error
}

// session is one live claude process. The reader goroutine is the only
// caller of handleLine; mu guards the state shared with the callers of the
// driver.Session methods.
type session struct {
	sink   driver.Sink
	log    *slog.Logger
	modes  []chat.ModeOption
	writes chan *writeReq
	gone   chan struct{} // closed when the process is gone
	now    func() time.Time
	// projects are the folders that may hold this session's transcript.
	projects []string

	// Lock order (docs/locks.md): modeMu, then modeEv, then mu. SetMode
	// holds modeMu and takes modeEv (setMode); modeEv's holders take mu
	// (showMode); mu is a leaf, released before anything that waits (a
	// control's answer, a mode being applied) or calls the sink. The
	// tailBuffer's mu is a leaf of its own.
	mu        sync.Mutex
	cards     map[string]*card
	controls  map[string]*pendingControl
	turns     int // prompts written whose result has not come yet
	proof     proof
	cancelled bool // an interrupt was sent for the turn in flight
	cancelGen int  // counts interrupts, to pair a grace timer with its turn
	graceT    *time.Timer
	closing   bool
	ready     bool // Start returned the session: exits are reported from then on
	sessionID string
	mode      string
	model     string
	models    []chat.ModeOption
	// applied is the permission mode Claude Code's own status lines say is in
	// force; appliedCh is closed (and replaced) when it changes.
	applied   string
	appliedCh chan struct{}
	// modeMu holds one set_permission_mode at a time, until it is applied.
	modeMu sync.Mutex
	// modeEv is held from a change of mode or model until its event is sent:
	// mode events go out in the order of the changes, and a reported mode
	// wakes SetMode only once it is shown.
	modeEv    sync.Mutex
	lastCost  float64           // total_cost_usd is cumulative per process
	context   int64             // tokens the conversation fills, after the last model call
	curMsg    string            // the model message being streamed
	textSeen  map[string]bool   // message ids whose text came as deltas
	thinkSeen map[string]bool   // message ids whose thinking came as deltas
	tools     map[string]string // tool_use id → tool name
	nextReq   int
}

func newSession(sink driver.Sink, log *slog.Logger, allowBypass bool) *session {
	ms := modes
	if !allowBypass {
		ms = modes[:len(modes)-1]
	}
	return &session{
		modes:     ms,
		sink:      sink,
		log:       log,
		writes:    make(chan *writeReq),
		gone:      make(chan struct{}),
		now:       time.Now,
		cards:     map[string]*card{},
		controls:  map[string]*pendingControl{},
		textSeen:  map[string]bool{},
		thinkSeen: map[string]bool{},
		tools:     map[string]string{},
	}
}

// write hands one JSON line to the stdin writer and waits until it is written.
// When ctx ends before the writer took the line, the line is never written.
func (s *session) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("stream: encode: %w", err)
	}
	req := &writeReq{line: append(b, '\n'), done: make(chan error, 1)}
	select {
	case s.writes <- req:
	case <-s.gone:
		return fmt.Errorf("stream: write: %w", driver.ErrNotRunning)
	case <-ctx.Done():
		return fmt.Errorf("stream: write: %w", ctx.Err())
	}
	select {
	case err := <-req.done:
		return err
	case <-s.gone:
		if req.claimed.CompareAndSwap(false, true) {
			return fmt.Errorf("stream: write: %w", driver.ErrNotRunning)
		}
		return <-req.done
	case <-ctx.Done():
		if req.claimed.CompareAndSwap(false, true) {
			return fmt.Errorf("stream: write: %w", ctx.Err())
		}
		return <-req.done // the writer has it: its outcome is the truth
	}
}

// control sends a control request and waits for its response.
func (s *session) control(ctx context.Context, subtype string, fields map[string]any) (controlResponse, error) {
	s.mu.Lock()
	s.nextReq++
	id := "parley-" + strconv.Itoa(s.nextReq)
	p := &pendingControl{done: make(chan controlResponse, 1)}
	s.controls[id] = p
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.controls, id)
		s.mu.Unlock()
	}()
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	if err := s.write(ctx, controlRequestLine{Type: "control_request", RequestID: id, Request: req}); err != nil {
		return controlResponse{}, fmt.Errorf("stream: %s: %w", subtype, err)
	}
	select {
	case r := <-p.done:
		if r.Subtype == "error" {
			return r, fmt.Errorf("stream: %s: claude says: %s", subtype, r.Error)
		}
		return r, nil
	case <-s.gone:
		return controlResponse{}, fmt.Errorf("stream: %s: %w", subtype, driver.ErrNotRunning)
	case <-ctx.Done():
		return controlResponse{}, fmt.Errorf("stream: %s: %w", subtype, ctx.Err())
	}
}

// Prompt writes the person's message to Claude Code's stdin. Claude Code's
// evidence that it took it is reported later as Sink.Received (see proof).
func (s *session) Prompt(ctx context.Context, p driver.Prompt) error {
	marks.End("prompt", p.MessageID, marks.Start())
	var content any = p.Text
	if imgs := slices.Concat(p.Images, p.FileImages); len(imgs) > 0 {
		blocks := make([]map[string]any, 0, len(imgs)+1)
		for _, img := range imgs {
			blocks = append(blocks, map[string]any{"type": "image", "source": map[string]string{
				"type": "base64", "media_type": img.MIMEType, "data": base64.StdEncoding.EncodeToString(img.Data),
			}})
		}
		blocks = append(blocks, map[string]any{"type": "text", "text": p.Text})
		content = blocks
	}
	// Count the turn before the write: its result can come right after.
	s.mu.Lock()
	s.turns++
	if s.turns == 1 {
		s.cancelled = false
	}
	mine := &sent{text: p.Text, at: s.now()}
	s.proof.written = append(s.proof.written, mine)
	s.mu.Unlock()
	err := s.write(ctx, userLine{Type: "user", Message: userMessage{Role: "user", Content: content}, SessionID: ""})
	if err != nil {
		s.mu.Lock()
		if s.turns > 0 { // exited may have ended the turn already
			s.turns--
		}
		s.proof.written = slices.DeleteFunc(s.proof.written, func(x *sent) bool { return x == mine })
		s.mu.Unlock()
		return fmt.Errorf("stream: prompt: %w", err)
	}
	return nil
}

// Cancel interrupts the turn in flight. Claude Code stays alive and ends the
// turn with a result, which becomes TurnEnded(cancelled).
func (s *session) Cancel(ctx context.Context) error {
	s.mu.Lock()
	if s.turns == 0 {
		s.mu.Unlock()
		return nil
	}
	s.cancelled = true
	s.cancelGen++
	gen := s.cancelGen
	// The turn's cards are the lane's: it closed them with the stop. The
	// requests Claude Code still holds end with the interrupt.
	s.dropCardsLocked()
	// Should the result never come, the turn still ends.
	s.stopGraceLocked()
	s.graceT = time.AfterFunc(cancelGrace, func() { s.endCancelled(gen) })
	s.mu.Unlock()
	if _, err := s.control(ctx, "interrupt", nil); err != nil {
		return fmt.Errorf("stream: cancel: %w", err)
	}
	return nil
}

func (s *session) endCancelled(gen int) {
	s.mu.Lock()
	if s.turns == 0 || !s.cancelled || s.cancelGen != gen {
		s.mu.Unlock()
		return
	}
	s.turns--
	s.cancelled = false
	s.mu.Unlock()
	s.log.Warn("claude gave no result after an interrupt; ending the turn")
	s.sink.TurnEnded(chat.StopCancelled)
}

func (s *session) stopGraceLocked() {
	if s.graceT != nil {
		s.graceT.Stop()
		s.graceT = nil
	}
}

// dropCardsLocked forgets every open card's request. What the person sees
// of a card is the lane's (it closes a turn's cards when the turn ends or
// stops, and every card when the agent exits); the driver keeps a request only
// to translate its answer, and reports a withdrawal only when Claude Code
// itself stops waiting (control_cancel_request).
func (s *session) dropCardsLocked() { clear(s.cards) }

func (s *session) takeCard(requestID, kind string) (*card, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cards[requestID]
	if !ok {
		return nil, fmt.Errorf("stream: card %s: %w", requestID, driver.ErrUnknownCard)
	}
	if c.kind != kind {
		return nil, fmt.Errorf("stream: card %s is a %s card, not a %s card: %w", requestID, c.kind, kind, chat.ErrBadInput)
	}
	delete(s.cards, requestID)
	return c, nil
}

func (s *session) putCard(requestID string, c *card) {
	s.mu.Lock()
	s.cards[requestID] = c
	s.mu.Unlock()
}

func (s *session) respond(ctx context.Context, requestID string, r permissionResult) error {
	return s.write(ctx, controlResponseLine{Type: "control_response", Response: controlResponseOut{
		Subtype: "success", RequestID: requestID, Response: r,
	}})
}

// AnswerPermission answers a can_use_tool request.
func (s *session) AnswerPermission(ctx context.Context, requestID string, a driver.PermissionAnswer) error {
	c, err := s.takeCard(requestID, chat.CardPermission)
	if err != nil {
		return err
	}
	var r permissionResult
	switch {
	case a.Cancelled:
		r = permissionResult{Behavior: "deny", Message: "The person dismissed the request without allowing it."}
	case a.OptionID == chat.OptionAllowOnce:
		r = permissionResult{Behavior: "allow", UpdatedInput: c.input}
	case a.OptionID == chat.OptionAllowAlways && len(c.suggestions) > 0:
		r = permissionResult{Behavior: "allow", UpdatedInput: c.input, UpdatedPermissions: c.suggestions}
	case a.OptionID == chat.OptionRejectOnce || a.OptionID == chat.OptionRejectAlways:
		msg := strings.TrimSpace(a.Message)
		if msg == "" {
			msg = "The person declined this tool use."
		}
		r = permissionResult{Behavior: "deny", Message: msg}
	default:
		s.putCard(requestID, c)
		return fmt.Errorf("stream: card %s: unknown option %q: %w", requestID, a.OptionID, chat.ErrBadInput)
	}
	if err := s.respond(ctx, requestID, r); err != nil {
		s.putCard(requestID, c)
		return fmt.Errorf("stream: answer permission: %w", err)
	}
	return nil
}

// AnswerQuestion answers an AskUserQuestion request: the questions echoed back
// with the answers keyed by question text. An answer that says nothing is
// refused, since an allow with unchanged input gives Claude no answer.
func (s *session) AnswerQuestion(ctx context.Context, requestID string, a driver.QuestionAnswer) error {
	c, err := s.takeCard(requestID, chat.CardQuestion)
	if err != nil {
		return err
	}
	if a.Cancelled {
		r := permissionResult{Behavior: "deny", Message: "The person dismissed the question without answering it."}
		if err := s.respond(ctx, requestID, r); err != nil {
			s.putCard(requestID, c)
			return fmt.Errorf("stream: dismiss question: %w", err)
		}
		return nil
	}
	input, err := questionInput(c, a)
	if err != nil {
		s.putCard(requestID, c)
		return err
	}
	if err := s.respond(ctx, requestID, permissionResult{Behavior: "allow", UpdatedInput: input}); err != nil {
		s.putCard(requestID, c)
		return fmt.Errorf("stream: answer question: %w", err)
	}
	return nil
}

// questionInput builds AskUserQuestion's updatedInput. Several labels of a
// multi-select question are joined with ", ", as Claude Code's own picker does.
func questionInput(c *card, a driver.QuestionAnswer) (json.RawMessage, error) {
	known := map[string]bool{}
	for _, q := range c.questions {
		known[q.Question] = true
	}
	answers := map[string]string{}
	for q, v := range a.Answers {
		if !known[q] {
			return nil, fmt.Errorf("stream: no question %q on this card: %w", q, chat.ErrBadInput)
		}
		text := strings.Join(v.Words(), ", ")
		if strings.TrimSpace(text) != "" {
			answers[q] = text
		}
	}
	response := strings.TrimSpace(a.Response)
	if len(answers) == 0 && response == "" {
		return nil, fmt.Errorf("stream: the answer is empty: %w", chat.ErrBadInput)
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(c.input, &in); err != nil || in == nil {
		in = map[string]json.RawMessage{}
	}
	ab, _ := json.Marshal(answers)
	in["answers"] = ab
	if response != "" {
		// Claude Code 2.1.197 shows the model only the response when one is
		// given ("The user responded: …") and drops the answers: fold them in.
		if len(answers) > 0 {
			parts := make([]string, 0, len(answers))
			for _, q := range c.questions {
				if a, ok := answers[q.Question]; ok {
					parts = append(parts, strconv.Quote(q.Question)+"="+strconv.Quote(a))
				}
			}
			response = strings.Join(parts, ", ") + ". " + response
		}
		rb, _ := json.Marshal(response)
		in["response"] = rb
	}
	out, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("stream: question input: %w", err)
	}
	return out, nil
}

// SetMode changes the permission mode; Claude Code's answer becomes a mode event.
func (s *session) SetMode(ctx context.Context, modeID string) error {
	found := false
	for _, m := range s.modes {
		found = found || m.ID == modeID
	}
	if !found {
		return fmt.Errorf("stream: mode %q: %w", modeID, driver.ErrUnsupported)
	}
	// Claude Code answers set_permission_mode at once and applies it a moment
	// later (its status line says when). A second change sent in between can
	// be overtaken by the first (plan, then default at once, left it in plan),
	// so changes go one at a time, each waiting until it is applied.
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	r, err := s.control(ctx, "set_permission_mode", map[string]any{"mode": modeID})
	if err != nil {
		return err
	}
	var resp struct {
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(r.Response, &resp)
	if resp.Mode == "" {
		resp.Mode = modeID
	}
	s.waitApplied(ctx, resp.Mode, modeApplyWait)
	s.setMode(resp.Mode, "")
	return nil
}

// modeApplyWait bounds how long SetMode waits for Claude Code to say a mode
// is in force (it says so within milliseconds when it applies one).
const modeApplyWait = 3 * time.Second

// noteApplied records the permission mode Claude Code reports in force.
func (s *session) noteApplied(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mode == s.applied {
		return
	}
	s.applied = mode
	if s.appliedCh != nil {
		close(s.appliedCh)
	}
	s.appliedCh = make(chan struct{})
}

// waitApplied waits until Claude Code reports mode in force, for at most d.
func (s *session) waitApplied(ctx context.Context, mode string, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		if s.applied == mode {
			s.mu.Unlock()
			return
		}
		if s.appliedCh == nil {
			s.appliedCh = make(chan struct{})
		}
		ch := s.appliedCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			s.log.Warn("claude did not report the new permission mode in force", "mode", mode)
			return
		case <-ctx.Done():
			return
		}
	}
}

// SetConfigOption supports "model" (set_model).
func (s *session) SetConfigOption(ctx context.Context, id, value string) error {
	if id != "model" {
		return fmt.Errorf("stream: config option %q: %w", id, driver.ErrUnsupported)
	}
	if _, err := s.control(ctx, "set_model", map[string]any{"model": value}); err != nil {
		return err
	}
	s.setMode("", value)
	return nil
}

// reportedMode records the permission mode (and model) Claude Code says is in
// force, shows it, and only then wakes a SetMode waiting for it. Woken before
// (as it was), SetMode found the mode recorded and returned while the event
// saying so was not yet sent: the last mode shown was the old one.
func (s *session) reportedMode(mode, model string) {
	s.modeEv.Lock()
	defer s.modeEv.Unlock()
	s.showMode(mode, model)
	if mode != "" {
		s.noteApplied(mode)
	}
}

// setMode records a mode or model (either may be "") and reports a change.
func (s *session) setMode(mode, model string) {
	s.modeEv.Lock()
	defer s.modeEv.Unlock()
	s.showMode(mode, model)
}

// showMode records a mode or model and sends the mode event if either
// changed; modeEv held, so no other change overtakes the event.
func (s *session) showMode(mode, model string) {
	s.mu.Lock()
	changed := false
	if mode != "" && mode != s.mode {
		s.mode, changed = mode, true
	}
	if model = modelValue(model, s.models); model != "" && model != s.model {
		s.model, changed = model, true
	}
	ev := s.modeEventLocked()
	s.mu.Unlock()
	if changed {
		s.sink.Event(ev)
	}
}

func (s *session) modeEventLocked() chat.Mode {
	return chat.Mode{
		Current:   s.mode,
		Available: s.modes,
		ConfigOptions: []chat.ConfigOption{{
			ID: "model", Name: "Model", Current: s.model, Values: s.models,
		}},
	}
}

// handleLine maps one stdout line onto the sink. Only the reader calls it.
func (s *session) handleLine(raw []byte) {
	t := marks.Start()
	l, err := decodeLine(raw)
	if err != nil {
		s.log.Debug("claude: unreadable stdout line", "err", err, "line", string(raw))
		return
	}
	if !t.IsZero() {
		defer func() { marks.End("stdout line", l.kind(), t) }()
	}
	s.noteEvidence(l)
	switch l.Type {
	case "stream_event":
		s.handleStreamEvent(l)
	case "assistant":
		s.handleAssistant(l)
	case "user":
		s.handleUser(l)
	case "system":
		s.handleSystem(l, raw)
	case "result":
		s.handleResult(l)
	case "control_request":
		s.handleControlRequest(l, raw)
	case "control_response":
		s.handleControlResponse(l)
	case "control_cancel_request":
		s.mu.Lock()
		_, ok := s.cards[l.RequestID]
		delete(s.cards, l.RequestID)
		s.mu.Unlock()
		s.log.Debug("claude withdrew a request", "request_id", l.RequestID, "open", ok)
		if ok {
			s.sink.CardWithdrawn(l.RequestID)
		}
	default:
		s.log.Debug("claude: unknown stdout line", "type", l.Type, "line", string(raw))
	}
}

// noteEvidence advances the written prompt's proof with one stdout line and
// reports Sink.Received at its evidence (see proof).
func (s *session) noteEvidence(l line) {
	s.mu.Lock()
	got := false
	switch {
	case len(s.proof.written) > 0 && l.Type == "system" && l.Subtype == "init":
		s.proof.started = s.proof.written[0]
		s.proof.written = s.proof.written[1:]
	case s.proof.started != nil && evidence(l):
		s.proof.started, got = nil, true
	}
	s.mu.Unlock()
	if got {
		s.sink.Received()
	}
}

// evidence reports whether Claude Code writes a line only once the turn's
// model request was made (or the turn ended): not system/init or status,
// which come before the request, nor answers to parley's own controls.
func evidence(l line) bool {
	switch l.Type {
	case "stream_event", "assistant", "user", "result":
		return true
	case "control_request":
		return l.Request != nil && l.Request.Subtype == "can_use_tool"
	case "system":
		return l.Subtype == "api_retry"
	}
	return false
}

func (s *session) handleStreamEvent(l line) {
	ev := l.Event
	if ev == nil || l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		return // a subagent's stream: its results arrive as tool results
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			s.mu.Lock()
			s.curMsg = ev.Message.ID
			s.mu.Unlock()
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return
		}
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text == "" {
				return
			}
			s.mu.Lock()
			id := s.curMsg
			s.textSeen[id] = true
			s.mu.Unlock()
			s.sink.Event(chat.AgentChunk{Text: ev.Delta.Text, MessageID: id})
		case "thinking_delta":
			if ev.Delta.Thinking == "" {
				return
			}
			s.mu.Lock()
			s.thinkSeen[s.curMsg] = true
			s.mu.Unlock()
			s.sink.Event(chat.ThoughtChunk{Text: ev.Delta.Thinking})
		}
	}
}

// handleAssistant reports tool uses. Text came as deltas already; text of a
// message that streamed none (a non-streamed fallback) is reported here.
func (s *session) handleAssistant(l line) {
	if l.Message == nil || l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		return
	}
	s.mu.Lock()
	textSeen, thinkSeen := s.textSeen[l.Message.ID], s.thinkSeen[l.Message.ID]
	if u := l.Message.Usage; u != nil && u.Context() > 0 {
		s.context = u.Context()
	}
	s.mu.Unlock()
	for _, b := range l.Message.Blocks() {
		switch b.Type {
		case "text":
			if !textSeen && b.Text != "" {
				s.sink.Event(chat.AgentChunk{Text: b.Text, MessageID: l.Message.ID})
			}
		case "thinking":
			if !thinkSeen && b.Thinking != "" {
				s.sink.Event(chat.ThoughtChunk{Text: b.Thinking})
			}
		case "tool_use":
			s.mu.Lock()
			s.tools[b.ID] = b.Name
			s.mu.Unlock()
			s.sink.Event(claudecode.ToolCall(b))
		}
	}
}

// handleUser reports tool results. Plain-text user lines (a person's words
// echoed, a local command's output, "[Request interrupted by user]") are not
// shown: the lane already shows the person's message once.
func (s *session) handleUser(l line) {
	if l.Message == nil || l.IsReplay || l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		return
	}
	for _, b := range l.Message.Blocks() {
		if b.Type != "tool_result" {
			continue
		}
		s.mu.Lock()
		name := s.tools[b.ToolUseID]
		delete(s.tools, b.ToolUseID)
		s.mu.Unlock()
		u := chat.ToolCallUpdate{ToolCallID: b.ToolUseID, Status: "completed", Output: b.ResultText()}
		if b.IsError {
			u.Status = "failed"
		}
		if name == "Edit" || name == "Write" || name == "MultiEdit" {
			u.Diffs = diffsOf(l.ToolUseResult)
		}
		s.sink.Event(u)
	}
}

func (s *session) handleSystem(l line, raw []byte) {
	switch l.Subtype {
	case "init":
		s.mu.Lock()
		newID := l.SessionID != "" && l.SessionID != s.sessionID
		if newID {
			s.sessionID = l.SessionID
		}
		s.mu.Unlock()
		if newID {
			s.sink.SessionID(l.SessionID)
		}
		mode := ""
		if l.PermissionMode != nil {
			mode = *l.PermissionMode
		}
		s.reportedMode(mode, l.Model)
	case "status":
		if l.PermissionMode != nil {
			s.reportedMode(*l.PermissionMode, "")
		}
	case "api_retry":
		// The turn goes on; say why it is slow, in words.
		var r struct {
			Attempt     int     `json:"attempt"`
			MaxRetries  int     `json:"max_retries"`
			DelayMS     float64 `json:"retry_delay_ms"`
			ErrorStatus int     `json:"error_status"`
			Error       string  `json:"error"`
		}
		_ = json.Unmarshal(raw, &r)
		// Not a failure: the turn goes on (and a failure-push must not go).
		code := chat.CodeRetrying
		if r.ErrorStatus == 429 || r.ErrorStatus == 529 {
			code = chat.CodeRateLimit
		}
		s.sink.Event(chat.Error{Code: code, Message: fmt.Sprintf(
			"The model API answered %d (%s); Claude Code retries in %.1f s (attempt %d of %d)",
			r.ErrorStatus, r.Error, r.DelayMS/1000, r.Attempt, r.MaxRetries)})
	case "thinking_tokens", "hook_started", "hook_response", "compact_boundary":
	default:
		s.log.Debug("claude: unknown system line", "subtype", l.Subtype, "line", string(raw))
	}
}

func (s *session) handleResult(l line) {
	s.mu.Lock()
	if s.turns == 0 {
		s.mu.Unlock()
		s.log.Debug("claude: result with no turn in flight", "subtype", l.Subtype)
		return
	}
	s.turns--
	// An interrupt ends one turn; a prompt queued behind it runs on.
	cancelled := s.cancelled
	s.cancelled = false
	s.stopGraceLocked()
	cost := math.Round((l.TotalCostUSD-s.lastCost)*1e9) / 1e9
	if cost < 0 {
		cost = 0
	}
	s.lastCost = l.TotalCostUSD
	context, window := s.context, contextWindow(l, s.model, s.models)
	// The turn's cards are over with it (the lane closes them as it ends).
	s.dropCardsLocked()
	clear(s.textSeen)
	clear(s.thinkSeen)
	s.mu.Unlock()
	u := chat.Usage{CostUSD: cost, ContextTokens: context, ContextWindow: window}
	if l.Usage != nil {
		u.InputTokens, u.OutputTokens = l.Usage.InputTokens, l.Usage.OutputTokens
	}
	if u != (chat.Usage{}) {
		s.sink.Event(u)
	}
	stop := chat.StopEndTurn
	switch {
	case cancelled:
		stop = chat.StopCancelled
	case l.IsError || l.Subtype != "success":
		stop = chat.StopError
		msg := l.Result
		if len(l.Errors) > 0 {
			msg = strings.Join(l.Errors, "; ")
		}
		if msg == "" {
			msg = "Claude Code ended the turn with " + l.Subtype
		}
		s.sink.Event(chat.Error{Code: chat.CodeAgent, Message: msg})
	case l.StopReason != nil && *l.StopReason == "max_tokens":
		stop = chat.StopMaxTokens
	case l.StopReason != nil && *l.StopReason == "refusal":
		stop = chat.StopRefusal
	}
	s.sink.TurnEnded(stop)
}

func (s *session) handleControlRequest(l line, raw []byte) {
	r := l.Request
	if r == nil || r.Subtype != "can_use_tool" {
		s.log.Debug("claude: unknown control request", "line", string(raw))
		sub := ""
		if r != nil {
			sub = r.Subtype
		}
		// Answer so Claude Code never waits on parley for something it cannot
		// do; from another goroutine, so the reader never waits on stdin.
		resp := controlResponseLine{Type: "control_response", Response: controlResponseOut{
			Subtype: "error", RequestID: l.RequestID, Error: "parley does not support " + sub,
		}}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.write(ctx, resp)
		}()
		return
	}
	input := r.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if r.ToolName == claudecode.AskUserQuestion {
		q := chat.Question{RequestID: l.RequestID, Questions: claudecode.Questions(input)}
		s.putCard(l.RequestID, &card{kind: chat.CardQuestion, toolName: r.ToolName, input: input, questions: q.Questions})
		s.sink.Event(q)
		return
	}
	sugg := r.PermissionSuggestions
	if string(sugg) == "null" {
		sugg = nil
	}
	s.putCard(l.RequestID, &card{kind: chat.CardPermission, toolName: r.ToolName, input: input, suggestions: sugg})
	s.sink.Event(chat.PermissionRequest{
		RequestID: l.RequestID,
		Tool: chat.PermissionTool{
			Name: r.ToolName, Title: claudecode.ToolTitle(r.ToolName, input, r.Description),
			Input: input, ToolCallID: r.ToolUseID,
		},
		Options: permissionOptions(sugg),
	})
}

func (s *session) handleControlResponse(l line) {
	r := l.Response
	if r == nil {
		return
	}
	s.mu.Lock()
	p := s.controls[r.RequestID]
	s.mu.Unlock()
	if p == nil {
		s.log.Debug("claude: control response nobody waits for", "request_id", r.RequestID)
		return
	}
	p.done <- *r
}

// exited ends what the process leaves open: the turn, its cards, waiting calls.
func (s *session) exited(err error, stderrTail string) {
	s.mu.Lock()
	started, id := s.proof.started, s.sessionID
	s.mu.Unlock()
	// A turn that started but showed nothing yet: the model may have been
	// asked. Whether Claude Code has the prompt is whether its transcript
	// kept it, which is what a resume gives the next turn (it writes the
	// transcript in batches: a prompt it took moments ago may not be there,
	// and is lost to the conversation). stdout is closed: no line races this.
	kept := started != nil && s.transcriptHas(id, started)
	s.mu.Lock()
	// A prompt Claude Code never showed it had is no turn of its: the exit
	// alone says why it did not get there.
	pending := s.proof.pending()
	if kept {
		pending--
	}
	turn := s.turns > pending
	s.turns = 0
	s.proof = proof{}
	s.stopGraceLocked()
	quiet := s.closing || !s.ready
	s.dropCardsLocked() // the lane closes every card at the exit
	s.mu.Unlock()
	if quiet {
		return
	}
	if kept {
		s.sink.Received()
	}
	if err == nil && turn {
		err = errors.New("claude exited in the middle of the turn")
	}
	if err != nil && stderrTail != "" {
		err = fmt.Errorf("%w: %s", err, stderrTail)
	}
	if started != nil && !kept {
		// Claude Code began the prompt's turn, and may have asked the model,
		// but did not keep it: whether it got there is not known (a retry
		// could reach the model twice).
		if err == nil {
			err = errors.New("claude exited")
		}
		err = fmt.Errorf("%w, after it began the turn and before its transcript kept the message (%w)", err, driver.ErrUnverified)
	}
	if turn {
		msg := "Claude Code stopped in the middle of the turn"
		if err != nil {
			msg += ": " + err.Error()
		}
		s.sink.Event(chat.Error{Code: chat.CodeAgent, Message: msg})
		s.sink.TurnEnded(chat.StopError)
	}
	s.sink.Exited(err)
}

// diffsOf reads the diff an Edit or Write tool result carries in tool_use_result.
func diffsOf(raw json.RawMessage) []chat.Diff {
	var r struct {
		FilePath  string `json:"filePath"`
		OldString string `json:"oldString"`
		NewString string `json:"newString"`
		Content   string `json:"content"`
		Type      string `json:"type"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil || r.FilePath == "" {
		return nil
	}
	if r.Type == "create" || (r.OldString == "" && r.NewString == "" && r.Content != "") {
		return []chat.Diff{{Path: r.FilePath, NewText: r.Content}}
	}
	return []chat.Diff{{Path: r.FilePath, OldText: r.OldString, NewText: r.NewString}}
}
