// Package bridge is the ACP client side every built-in IM plugin shares: it
// speaks ACP with parley on the plugin's stdin/stdout, keeps one session per
// chat (the session id is the chat id), and shows what parley sends as chat
// messages through a Transport: streamed text within the platform's size limit,
// tool calls as one line, cards as numbered options. What a person writes goes
// to parley as a prompt with their user id; parley decides who may talk, runs
// chat commands and takes card answers by number.
package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"golang.org/x/time/rate"

	"github.com/parleyhq/parley/internal/channel/acpagent"
	"github.com/parleyhq/parley/internal/channel/render"
	"github.com/parleyhq/parley/internal/chat"
)

// Transport sends one message (already within the limit) to a chat.
type Transport interface {
	Say(ctx context.Context, chat, text string) error
}

// Editor is a Transport whose platform edits messages: answers stream into one
// message, rewritten at most every Format.EditInterval; text the interval held
// back is shown when it is up, though no more comes before the turn ends.
type Editor interface {
	Transport
	Post(ctx context.Context, chat, text string) (id string, err error)
	Edit(ctx context.Context, chat, id, text string) error
}

// Buttons is a Transport whose platform shows buttons: a card's options are
// buttons whose press the plugin hands to Handle as the option's number.
type Buttons interface {
	Transport
	SayCard(ctx context.Context, chat, text string, options []string) error
}

// Format says how a platform shows messages.
type Format struct {
	Limit     int     // bytes of text per message
	Lines     bool    // one message per line (IRC); else whole answers, chunked
	PerSecond float64 // messages a second, so the server does not drop us for flooding
	// EditInterval throttles edits when the transport is an Editor (default 1s).
	EditInterval time.Duration
}

// Bridge is one plugin's ACP connection and its chats.
type Bridge struct {
	log   *slog.Logger
	ctx   context.Context // the plugin's: what flushes on a timer run under
	acp   *acp.ClientSideConnection
	t     Transport
	f     Format
	limit *rate.Limiter

	mu        sync.Mutex
	chats     map[string]*chatState
	bySession map[acp.SessionId]*chatState
	taken     map[string]chan struct{} // message id → closed at its first receipt
	tail      map[string]chan struct{} // chat → closed when its newest message has been handed over
	// opened is closed (and replaced) each time a session is registered.
	opened chan struct{}
}

// Connect speaks ACP on in/out and initializes; it returns the plugin's config
// section (initialize's _meta "parley/config") as JSON. ctx is the plugin's
// for as long as it runs.
func Connect(ctx context.Context, in io.Reader, out io.Writer, name string, log *slog.Logger) (*Bridge, json.RawMessage, error) {
	b := &Bridge{log: log, ctx: ctx, chats: map[string]*chatState{}, bySession: map[acp.SessionId]*chatState{},
		taken: map[string]chan struct{}{}, tail: map[string]chan struct{}{}, opened: make(chan struct{})}
	// The SDK logs to slog's default logger (stderr, which the host logs):
	// its SetLogger races with the reader it has already started.
	b.acp = acp.NewClientSideConnection(b, out, in)
	init, err := b.acp.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: name, Version: "1"}})
	if err != nil {
		return nil, nil, fmt.Errorf("bridge: initialize: %w", err)
	}
	raw, err := json.Marshal(init.Meta[acpagent.MetaConfig])
	if err != nil {
		return nil, nil, fmt.Errorf("bridge: config: %w", err)
	}
	return b, raw, nil
}

// Use sets the transport and format; call it before Open and Handle.
func (b *Bridge) Use(t Transport, f Format) {
	if f.PerSecond <= 0 {
		f.PerSecond = 2
	}
	if f.EditInterval <= 0 {
		f.EditInterval = time.Second
	}
	b.t, b.f = t, f
	b.limit = rate.NewLimiter(rate.Limit(f.PerSecond), 5)
}

// Reopen opens the session of every chat parley knows for this plugin
// (session/list): after a restart, chats that were open get their open cards
// and what they missed without waiting for someone to write first.
func (b *Bridge) Reopen(ctx context.Context) error {
	list, err := b.acp.ListSessions(ctx, acp.ListSessionsRequest{})
	if err != nil {
		return fmt.Errorf("bridge: session/list: %w", err)
	}
	for _, s := range list.Sessions {
		if err := b.Open(ctx, string(s.SessionId)); err != nil {
			b.log.Warn("bridge: reopen", "chat", s.SessionId, "err", err)
		}
	}
	return nil
}

// Done is closed when parley closes the connection.
func (b *Bridge) Done() <-chan struct{} { return b.acp.Done() }

// handOver bounds how long a chat's next message waits for parley to take the
// one before it.
const handOver = 10 * time.Second

// expect returns a channel closed when parley's first receipt for messageID
// arrives.
func (b *Bridge) expect(messageID string) <-chan struct{} {
	ch := make(chan struct{})
	b.mu.Lock()
	b.taken[messageID] = ch
	b.mu.Unlock()
	return ch
}

func (b *Bridge) forget(messageID string) {
	b.mu.Lock()
	delete(b.taken, messageID)
	b.mu.Unlock()
}

// receipt marks a message as taken by parley.
func (b *Bridge) receipt(messageID string) {
	b.mu.Lock()
	if ch := b.taken[messageID]; ch != nil {
		close(ch)
		delete(b.taken, messageID)
	}
	b.mu.Unlock()
}

// chatState is one chat: its ACP session and what is being streamed to it.
type chatState struct {
	target  string
	session acp.SessionId
	ready   chan struct{} // closed once session/new has answered
	err     error         // its failure, set before ready is closed
	mu      sync.Mutex
	stream  render.Streamer
	open    string // the message being edited (Editor), "" when none
	// held shows the text the edit throttle held back once the interval is
	// up, should no chunk come to show it first (Editor); nil when not armed.
	held *time.Timer
}

func (b *Bridge) streamer() render.Streamer {
	if _, ok := b.t.(Editor); ok {
		return render.Streamer{Limit: b.f.Limit, Edit: true, Interval: b.f.EditInterval}
	}
	return render.Streamer{Limit: b.f.Limit, Whole: !b.f.Lines}
}

// show does what the streamer said: new messages, and the open one rewritten.
// end closes the open message.
func (b *Bridge) show(ctx context.Context, c *chatState, out render.Output, end bool) {
	ed, editing := b.t.(Editor)
	for _, l := range out.Send {
		if editing && c.open != "" {
			// The open message is full: its text is final; what follows is new.
			if err := ed.Edit(ctx, c.target, c.open, l); err != nil {
				b.log.Warn("bridge: edit", "err", err)
			}
			c.open = ""
			continue
		}
		b.line(ctx, c.target, l)
	}
	if editing && out.Replace != "" {
		if c.open == "" {
			if err := b.limit.Wait(ctx); err != nil {
				return
			}
			id, err := ed.Post(ctx, c.target, out.Replace)
			if err != nil {
				b.log.Warn("bridge: post", "err", err)
			}
			c.open = id
		} else if err := ed.Edit(ctx, c.target, c.open, out.Replace); err != nil {
			b.log.Warn("bridge: edit", "err", err)
		}
	}
	if end {
		c.open = ""
	}
}

// chat returns the chat's session, opening it on first use. With
// _meta["parley/chat"] the session id is the chat id, and parley sends what the
// chat missed (and its open cards) while session/new is still being answered:
// so the chat is registered under that id first.
func (b *Bridge) chat(ctx context.Context, target string) (*chatState, error) {
	b.mu.Lock()
	c := b.chats[target]
	if c != nil {
		b.mu.Unlock()
		select { // opened by another goroutine: wait for session/new
		case <-c.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil {
			return nil, c.err
		}
		return c, nil
	}
	c = &chatState{target: target, session: acp.SessionId(target), stream: b.streamer(), ready: make(chan struct{})}
	defer close(c.ready)
	b.chats[target] = c
	b.bySession[c.session] = c
	close(b.opened)
	b.opened = make(chan struct{})
	b.mu.Unlock()
	resp, err := b.acp.NewSession(ctx, acp.NewSessionRequest{Cwd: "/", McpServers: []acp.McpServer{},
		Meta: map[string]any{acpagent.MetaChat: target}})
	if err != nil {
		b.mu.Lock()
		delete(b.chats, target)
		delete(b.bySession, c.session)
		b.mu.Unlock()
		c.err = fmt.Errorf("bridge: session for %s: %w", target, err)
		return nil, c.err
	}
	if resp.SessionId != c.session {
		c.err = fmt.Errorf("bridge: parley named the session of %s %q, not the chat id", target, resp.SessionId)
		return nil, c.err
	}
	return c, nil
}

func (b *Bridge) bySessionID(id acp.SessionId) *chatState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bySession[id]
}

// waitSession returns the chat of a session, waiting up to d for it to open.
func (b *Bridge) waitSession(ctx context.Context, id acp.SessionId, d time.Duration) (*chatState, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		b.mu.Lock()
		c, opened := b.bySession[id], b.opened
		b.mu.Unlock()
		if c != nil {
			return c, nil
		}
		select {
		case <-opened:
		case <-t.C:
			return nil, fmt.Errorf("bridge: no session %s", id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Sender is who wrote a message, as the platform vouches for it.
type Sender struct {
	// ID is the platform user id that allowed_users names (an IRC
	// nick!user@host, a bare JID, a Telegram user id).
	ID string
	// Account is the account the platform says the person is logged in as,
	// when it has one apart from ID (an IRC services account); "" when none.
	Account string
}

// Handle takes one message a person wrote in a chat. The prompt runs on its
// own goroutine: a /stop or a card answer must not wait behind the turn in
// flight.
func (b *Bridge) Handle(ctx context.Context, chatID, user, text string) {
	b.HandleFrom(ctx, chatID, Sender{ID: user}, "", text)
}

// HandleOnce is Handle for a platform message with a stable id (unique within
// the plugin). The id is the prompt's messageId, so a platform that hands the
// same message over again (Telegram's getUpdates after a restart) never
// delivers it twice: parley answers a repeated id without a second turn.
func (b *Bridge) HandleOnce(ctx context.Context, chatID, user, messageID, text string) {
	b.HandleFrom(ctx, chatID, Sender{ID: user}, messageID, text)
}

// HandleFrom is HandleOnce with the sender's account as well ("" messageID:
// a fresh one).
func (b *Bridge) HandleFrom(ctx context.Context, chatID string, from Sender, messageID, text string) {
	if messageID == "" {
		messageID = chat.NewID("m")
	}
	// parley takes requests concurrently, so a chat's messages are handed over
	// one at a time, in the order they came: each waits for the one before to
	// be taken (its first receipt, or its answer for a chat command). The turn
	// itself does not hold the next message back.
	b.mu.Lock()
	prev, mine := b.tail[chatID], make(chan struct{})
	b.tail[chatID] = mine
	b.mu.Unlock()
	go func() {
		handed := sync.OnceFunc(func() {
			close(mine)
			b.mu.Lock()
			if b.tail[chatID] == mine {
				delete(b.tail, chatID)
			}
			b.mu.Unlock()
		})
		defer handed()
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
		}
		c, err := b.chat(ctx, chatID)
		if err != nil {
			b.log.Warn("bridge: no session", "chat", chatID, "err", err)
			return
		}
		meta := map[string]any{acpagent.MetaUser: from.ID}
		if from.Account != "" {
			meta[acpagent.MetaAccount] = from.Account
		}
		req := acp.PromptRequest{SessionId: c.session, Prompt: []acp.ContentBlock{acp.TextBlock(text)},
			Meta: meta, MessageId: acp.Ptr(messageID)}
		taken := b.expect(messageID)
		var resp acp.PromptResponse
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			resp, err = b.acp.Prompt(ctx, req)
		}()
		select {
		case <-taken:
		case <-answered:
		case <-time.After(handOver):
			b.log.Warn("bridge: no receipt yet; handing over the next message anyway", "chat", chatID, "message", messageID)
		}
		handed()
		b.forget(messageID)
		<-answered
		if err != nil {
			b.say(ctx, c.target, "error: "+err.Error())
			return
		}
		b.flush(ctx, c)
		if resp.StopReason == acp.StopReasonCancelled {
			b.say(ctx, c.target, "(stopped)")
		}
	}()
}

// Open opens a chat's session now (a channel the plugin joins at start): its
// open cards and what it missed are sent at once.
func (b *Bridge) Open(ctx context.Context, chatID string) error {
	_, err := b.chat(ctx, chatID)
	return err
}

// say sends text to target within the limit (a message per line with Lines),
// paced.
func (b *Bridge) say(ctx context.Context, target, text string) {
	pieces := render.Chunk(text, b.f.Limit)
	if b.f.Lines {
		pieces = render.Lines(text, b.f.Limit)
	}
	for _, l := range pieces {
		b.line(ctx, target, l)
	}
}

func (b *Bridge) line(ctx context.Context, target, l string) {
	if err := b.limit.Wait(ctx); err != nil {
		return
	}
	if err := b.t.Say(ctx, target, l); err != nil {
		b.log.Warn("bridge: send", "err", err)
	}
}

func (b *Bridge) flush(ctx context.Context, c *chatState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.disarm(c)
	b.show(ctx, c, c.stream.End(), true)
}

// arm makes sure text the edit throttle held back is shown when the interval
// is up, though no chunk comes to show it (the agent busy with a long tool):
// one timer per chat, at most, running only while text is held. Call it with
// c.mu held.
func (b *Bridge) arm(c *chatState) {
	held, at := c.stream.Held()
	if !held || c.held != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(time.Until(at), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.held != t { // disarmed: the turn ended, or a notice flushed it
			return
		}
		c.held = nil
		if b.ctx.Err() != nil {
			return
		}
		b.show(b.ctx, c, c.stream.Flush(time.Now()), false)
	})
	c.held = t
}

// disarm stops the chat's flush timer; c.mu held.
func (b *Bridge) disarm(c *chatState) {
	if c.held != nil {
		c.held.Stop()
		c.held = nil
	}
}

// SessionUpdate shows the session's stream in its chat.
func (b *Bridge) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	c := b.bySessionID(n.SessionId)
	if c == nil {
		return nil
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		text := u.AgentMessageChunk.Content.Text.Text
		if u.AgentMessageChunk.Meta[acpagent.MetaNotice] == true {
			b.flush(ctx, c)
			b.say(ctx, c.target, text)
			return nil
		}
		c.mu.Lock()
		b.show(ctx, c, c.stream.Add(text, time.Now()), false)
		b.arm(c)
		c.mu.Unlock()
	case u.ToolCall != nil:
		b.flush(ctx, c)
		raw, _ := json.Marshal(u.ToolCall.RawInput)
		b.line(ctx, c.target, render.ToolLine(u.ToolCall.Title, string(u.ToolCall.Kind), "", raw, b.f.Limit))
	}
	return nil
}

// RequestPermission shows a card as numbered options. The person answers by
// replying the number, which parley reads (it checks who may answer); parley
// then cancels this request, as it does when the card is answered anywhere.
func (b *Bridge) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	// parley asks a chat's open cards again as soon as its session opens, which
	// may be before session/new has returned here.
	c, err := b.waitSession(ctx, p.SessionId, 10*time.Second)
	if err != nil {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	b.flush(ctx, c)
	title := "Permission?"
	if p.ToolCall.Title != nil {
		title = "Allow " + *p.ToolCall.Title + "?"
	}
	if p.Meta["parley/question"] == true && p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	opts := make([]string, 0, len(p.Options))
	for _, o := range p.Options {
		opts = append(opts, o.Name)
	}
	if bt, ok := b.t.(Buttons); ok {
		if err := bt.SayCard(ctx, c.target, title, opts); err != nil {
			b.log.Warn("bridge: card", "err", err)
		}
	} else {
		b.say(ctx, c.target, render.Card(title, opts))
	}
	<-ctx.Done()
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

// HandleExtensionMethod answers parley's heartbeat and flushes at a turn's end.
func (b *Bridge) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "_parley/ping":
		return map[string]any{}, nil
	case "_parley/delivery":
		var p struct {
			Event chat.Delivery `json:"event"`
		}
		if json.Unmarshal(params, &p) == nil && p.Event.MessageID != "" {
			b.receipt(p.Event.MessageID)
		}
	case "_parley/notice":
		// A notice (notify_person, parley notify): after the words so far.
		var p struct {
			SessionID acp.SessionId `json:"sessionId"`
			Event     chat.Notice   `json:"event"`
		}
		if json.Unmarshal(params, &p) == nil && p.Event.Text != "" {
			if c := b.bySessionID(p.SessionID); c != nil {
				b.flush(ctx, c)
				b.say(ctx, c.target, render.Notice(p.Event))
			}
		}
	case "_parley/prompt_done":
		var p struct {
			SessionID acp.SessionId `json:"sessionId"`
		}
		if json.Unmarshal(params, &p) == nil {
			if c := b.bySessionID(p.SessionID); c != nil {
				b.flush(ctx, c)
			}
		}
	}
	return nil, nil
}

func (b *Bridge) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}

func (b *Bridge) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}

func (b *Bridge) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}

func (b *Bridge) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}

func (b *Bridge) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}

func (b *Bridge) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}

func (b *Bridge) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}
