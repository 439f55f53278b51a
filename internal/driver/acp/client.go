package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// client is the parley side of the connection: the methods the agent calls.
type client struct{ s *Session }

var _ sdk.Client = (*client)(nil)

// HandleExtensionMethod takes the drain marker the gate adds after the
// agent's last line (acp.go); parley implements no other extension.
func (c *client) HandleExtensionMethod(_ context.Context, method string, _ json.RawMessage) (any, error) {
	if method != drainedMethod {
		return nil, sdk.NewMethodNotFound(method)
	}
	c.s.drainOnce.Do(func() { close(c.s.drained) })
	return nil, nil
}

// historyUpdate reports whether u is conversation content a session/load
// replays (and parley already has in its log).
func historyUpdate(u sdk.SessionUpdate) bool {
	return u.UserMessageChunk != nil || u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil ||
		u.ToolCall != nil || u.ToolCallUpdate != nil || u.Plan != nil
}

// SessionUpdate maps one update onto chat payloads. The SDK calls it in
// order, one at a time; modeEv orders its mode events with SetMode's.
func (c *client) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	s := c.s
	s.modeEv.Lock()
	defer s.modeEv.Unlock()
	s.mu.Lock()
	if s.closed || (s.id != "" && n.SessionId != s.id) {
		s.mu.Unlock()
		return nil
	}
	if s.replaying {
		if n.Update.AvailableCommandsUpdate != nil {
			s.replayEnd = true
		}
		select {
		case s.replayTick <- struct{}{}:
		default:
		}
		if historyUpdate(n.Update) {
			s.mu.Unlock()
			return nil
		}
	}
	got := historyUpdate(n.Update) && s.evidenceLocked()
	ps := s.m.update(n.Update)
	s.mu.Unlock()
	if got {
		s.sink.Received()
	}
	for _, p := range ps {
		s.sink.Event(p)
	}
	return nil
}

// RequestPermission shows a permission card with the agent's own options (or,
// for a question Qwen Code asks this way, a question card) and waits for the
// person, a stop, or the connection's end.
func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	s := c.s
	if a, ok := s.allowParleyTool(p); ok {
		return a, nil
	}
	if q, ok := qwenQuestion(p); ok {
		id := newCardID("q")
		card := &pendingCard{answer: make(chan any, 1), cancel: q.cancelled(), qwen: q}
		a := s.openCard(ctx, s.questions, id, card, func() []chat.Payload {
			return []chat.Payload{chat.Question{RequestID: id, Questions: q.items}}
		})
		return a.(sdk.RequestPermissionResponse), nil
	}
	id := newCardID("perm")
	card := &pendingCard{answer: make(chan any, 1), cancel: cancelledPermission(), options: map[string]string{}, toolCall: string(p.ToolCall.ToolCallId)}
	for _, o := range p.Options {
		card.options[string(o.OptionId)] = string(o.Kind)
	}
	a := s.openCard(ctx, s.perms, id, card, func() []chat.Payload { return s.m.permission(id, p) })
	return a.(sdk.RequestPermissionResponse), nil
}

// openCard shows a card (the payloads show builds, under s.mu) and waits for
// its answer, a stop, or the connection's end; it returns the agent's reply.
func (s *Session) openCard(ctx context.Context, cards map[string]*pendingCard, id string, card *pendingCard, show func() []chat.Payload) any {
	s.mu.Lock()
	if s.closing || (s.turn != nil && s.turn.cancelled) {
		// The person already stopped this turn: no new card for it.
		s.mu.Unlock()
		return card.cancel
	}
	got := s.evidenceLocked()
	ps := show()
	cards[id] = card
	s.mu.Unlock()
	if got {
		s.sink.Received()
	}
	for _, pl := range ps {
		s.sink.Event(pl)
	}
	select {
	case a := <-card.answer:
		return a
	case <-ctx.Done():
		if s.dropCard(cards, id) {
			s.sink.CardWithdrawn(id)
		}
		return card.cancel
	}
}

func cancelledPermission() sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}
}

// dropCard removes a card the agent stopped waiting for; it reports whether
// it was still open and the agent withdrew it of its own accord. A card of a
// turn the person stopped is not: the agent may drop its request on the
// stop's notification before Cancel takes the cards, and the lane closes
// such a card with the stop itself (and a turn's end, with the end).
func (s *Session) dropCard(cards map[string]*pendingCard, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := cards[id]
	delete(cards, id)
	t := s.turn // a turn that ended closed its cards in the lane too
	return ok && t != nil && !t.cancelled && !t.ended
}

// UnstableCreateElicitation shows a form elicitation as a question card.
func (c *client) UnstableCreateElicitation(ctx context.Context, p sdk.UnstableCreateElicitationRequest) (sdk.UnstableCreateElicitationResponse, error) {
	s := c.s
	if p.Form == nil {
		// URL mode is not advertised.
		return sdk.UnstableCreateElicitationResponse{Decline: &sdk.UnstableCreateElicitationDecline{Action: "decline"}}, nil
	}
	id := newCardID("q")
	q, fields, err := formQuestion(id, p.Form)
	if err != nil {
		s.logger.Warn("declined an elicitation parley cannot show", "err", err)
		return sdk.UnstableCreateElicitationResponse{Decline: &sdk.UnstableCreateElicitationDecline{Action: "decline"}}, nil
	}
	card := &pendingCard{answer: make(chan any, 1), fields: fields,
		cancel: sdk.UnstableCreateElicitationResponse{Cancel: &sdk.UnstableCreateElicitationCancel{Action: "cancel"}}}
	a := s.openCard(ctx, s.questions, id, card, func() []chat.Payload { return []chat.Payload{q} })
	return a.(sdk.UnstableCreateElicitationResponse), nil
}

// UnstableCompleteElicitation is for URL elicitations, which are not advertised.
func (c *client) UnstableCompleteElicitation(ctx context.Context, p sdk.UnstableCompleteElicitationNotification) error {
	return nil
}

// ReadTextFile reads a file inside the working directory.
func (c *client) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	line, limit := 0, 0
	if p.Line != nil {
		line = *p.Line
	}
	if p.Limit != nil {
		limit = *p.Limit
	}
	text, err := c.s.jail.read(p.Path, line, limit)
	if errors.Is(err, fs.ErrNotExist) {
		// A file that does not exist (inside the working directory: the jail
		// has checked) reads as empty, as in Zed, the protocol's reference
		// client, whose editor opens a missing path as a new empty buffer.
		// Agents rely on it: Gemini CLI 0.61.0's write_file and replace read
		// the file first and treat any error as a failure (its ACP SDK rejects
		// with the bare JSON-RPC error object, which its not-found check does
		// not recognize), so with an error no new file could be created.
		return sdk.ReadTextFileResponse{Content: ""}, nil
	}
	if err != nil {
		return sdk.ReadTextFileResponse{}, c.fsError("read", p.Path, err)
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile writes a file inside the working directory.
func (c *client) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if err := c.s.jail.write(p.Path, p.Content); err != nil {
		return sdk.WriteTextFileResponse{}, c.fsError("write", p.Path, err)
	}
	return sdk.WriteTextFileResponse{}, nil
}

// fsError turns a file error into the JSON-RPC error the agent gets.
func (c *client) fsError(op, path string, err error) error {
	switch {
	case errors.Is(err, errOutside):
		c.s.logger.Warn("refused file access outside the working directory", "op", op, "path", path)
		return &sdk.RequestError{Code: -32602, Message: "Access denied: " + err.Error()}
	case errors.Is(err, fs.ErrNotExist):
		// ACP's resource-not-found code.
		return &sdk.RequestError{Code: -32002, Message: "Resource not found: " + path}
	}
	return &sdk.RequestError{Code: -32603, Message: op + " " + path + ": " + err.Error()}
}

// Terminals are not advertised: these answer an agent that calls them anyway.

func (c *client) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (c *client) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (c *client) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (c *client) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (c *client) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}
