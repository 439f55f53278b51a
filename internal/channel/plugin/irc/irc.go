// Package irc is parley's IRC plugin (`parley plugin irc`): an ACP client on
// its stdin/stdout, parley being the agent, bridged to IRC channels and private
// messages. Each IRC channel (or nick, for private messages) is one chat, so one
// route. Everything a person writes goes to parley with their nick as the user;
// parley decides who may talk, runs chat commands and takes card answers
// ("1", "2", …). Answers come back as PRIVMSG lines within IRC's line limit.
//
// Its config section (from initialize's _meta "parley/config"):
//
//	server = "irc.example.net:6667"
//	nick = "parley"
//	channels = ["#agents"]
//	line_limit = 400          # bytes of text per PRIVMSG
//	lines_per_second = 2      # pacing, so the server does not drop us for flooding
package irc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"golang.org/x/time/rate"

	"github.com/parleyhq/parley/internal/channel/acpagent"
	"github.com/parleyhq/parley/internal/channel/render"
)

// Config is the plugin's section of parley's config.
type Config struct {
	Server         string   `json:"server"`
	Nick           string   `json:"nick"`
	Channels       []string `json:"channels"`
	LineLimit      int      `json:"line_limit"`
	LinesPerSecond float64  `json:"lines_per_second"`
}

// DefaultLineLimit leaves room in IRC's 512-byte line for the prefix the
// server adds when it relays our PRIVMSG.
const DefaultLineLimit = 400

// Run is the plugin: ACP on in/out, IRC as configured by parley.
func Run(ctx context.Context, in io.Reader, out io.Writer, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &bridge{log: log, chats: map[string]*chatState{}, bySession: map[acp.SessionId]*chatState{}, opened: make(chan struct{})}
	// The SDK logs to slog's default logger (stderr, which the host logs):
	// its SetLogger races with the reader it has already started.
	b.acp = acp.NewClientSideConnection(b, out, in)
	init, err := b.acp.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: "parley-irc", Version: "1"}})
	if err != nil {
		return fmt.Errorf("irc: initialize: %w", err)
	}
	cfg, err := configOf(init.Meta)
	if err != nil {
		return err
	}
	b.cfg = cfg
	b.limit = rate.NewLimiter(rate.Limit(cfg.LinesPerSecond), 5)
	irc, err := Dial(ctx, cfg.Server, cfg.Nick, "parley")
	if err != nil {
		return err
	}
	defer irc.Close()
	b.irc = irc
	log.Info("irc connected", "server", cfg.Server, "nick", irc.Nick())
	for _, ch := range cfg.Channels {
		if err := irc.Send("JOIN", ch); err != nil {
			return err
		}
		// Opening the session asks again every card still open for this chat:
		// what was sent while the plugin was down is not lost.
		if _, err := b.chat(ctx, ch); err != nil {
			return err
		}
	}
	for {
		select {
		case m, ok := <-irc.Messages():
			if !ok {
				return irc.Err()
			}
			b.handle(ctx, m)
		case <-b.acp.Done():
			return errors.New("irc: parley closed the connection")
		case <-ctx.Done():
			return nil
		}
	}
}

func configOf(meta map[string]any) (Config, error) {
	raw, err := json.Marshal(meta[acpagent.MetaConfig])
	if err != nil {
		return Config{}, fmt.Errorf("irc: config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("irc: config: %w", err)
	}
	if c.Server == "" {
		return Config{}, errors.New("irc: config needs \"server\" (host:port)")
	}
	if c.Nick == "" {
		c.Nick = "parley"
	}
	if c.LineLimit <= 0 || c.LineLimit > DefaultLineLimit {
		c.LineLimit = DefaultLineLimit
	}
	if c.LinesPerSecond <= 0 {
		c.LinesPerSecond = 2
	}
	return c, nil
}

type bridge struct {
	log   *slog.Logger
	cfg   Config
	acp   *acp.ClientSideConnection
	irc   *Conn
	limit *rate.Limiter

	mu        sync.Mutex
	chats     map[string]*chatState
	bySession map[acp.SessionId]*chatState
	// opened is closed (and replaced) each time a session is registered.
	opened chan struct{}
}

// chatState is one IRC chat: its ACP session and what is being streamed to it.
type chatState struct {
	target  string
	session acp.SessionId
	ready   chan struct{} // closed once session/new has answered
	err     error         // its failure, set before ready is closed
	mu      sync.Mutex
	stream  render.Streamer
}

// chat returns the chat's session, opening it on first use. With
// _meta["parley/chat"] the session id is the chat id, and parley sends what the
// chat missed (and its open cards) while session/new is still being answered:
// so the chat is registered under that id first.
func (b *bridge) chat(ctx context.Context, target string) (*chatState, error) {
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
	c = &chatState{target: target, session: acp.SessionId(target), stream: render.Streamer{Limit: b.cfg.LineLimit}, ready: make(chan struct{})}
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
		c.err = fmt.Errorf("irc: session for %s: %w", target, err)
		return nil, c.err
	}
	if resp.SessionId != c.session {
		c.err = fmt.Errorf("irc: parley named the session of %s %q, not the chat id", target, resp.SessionId)
		return nil, c.err
	}
	return c, nil
}

func (b *bridge) bySessionID(id acp.SessionId) *chatState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bySession[id]
}

// waitSession returns the chat of a session, waiting up to d for it to open.
func (b *bridge) waitSession(ctx context.Context, id acp.SessionId, d time.Duration) (*chatState, error) {
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
			return nil, fmt.Errorf("irc: no session %s", id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// handle takes one IRC message. Prompts run on their own goroutine: a /stop or a
// card answer must not wait behind the turn in flight.
func (b *bridge) handle(ctx context.Context, m Message) {
	if m.Command != "PRIVMSG" || len(m.Params) < 2 {
		return
	}
	target, text, nick := m.Params[0], m.Params[1], m.Nick()
	if strings.HasPrefix(text, "\x01") { // CTCP
		return
	}
	chatID := target
	if !strings.HasPrefix(target, "#") && !strings.HasPrefix(target, "&") {
		chatID = nick // a private message: the chat is the person
	}
	go func() {
		c, err := b.chat(ctx, chatID)
		if err != nil {
			b.log.Warn("irc: no session", "chat", chatID, "err", err)
			return
		}
		resp, err := b.acp.Prompt(ctx, acp.PromptRequest{SessionId: c.session, Prompt: []acp.ContentBlock{acp.TextBlock(text)},
			Meta: map[string]any{acpagent.MetaUser: nick}})
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

// say sends text to target in lines within the limit, paced.
func (b *bridge) say(ctx context.Context, target, text string) {
	for _, l := range render.Lines(text, b.cfg.LineLimit) {
		b.line(ctx, target, l)
	}
}

func (b *bridge) line(ctx context.Context, target, l string) {
	if err := b.limit.Wait(ctx); err != nil {
		return
	}
	if err := b.irc.Privmsg(target, l); err != nil {
		b.log.Warn("irc: send", "err", err)
	}
}

func (b *bridge) flush(ctx context.Context, c *chatState) {
	c.mu.Lock()
	out := c.stream.End()
	c.mu.Unlock()
	for _, l := range out.Send {
		b.line(ctx, c.target, l)
	}
}

// SessionUpdate shows the session's stream on IRC.
func (b *bridge) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
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
		out := c.stream.Add(text, time.Now())
		c.mu.Unlock()
		for _, l := range out.Send {
			b.line(ctx, c.target, l)
		}
	case u.ToolCall != nil:
		b.flush(ctx, c)
		raw, _ := json.Marshal(u.ToolCall.RawInput)
		b.line(ctx, c.target, render.ToolLine(u.ToolCall.Title, string(u.ToolCall.Kind), "", raw, b.cfg.LineLimit))
	}
	return nil
}

// RequestPermission shows a card as numbered options. The person answers by
// replying the number, which parley reads (it checks who may answer); parley
// then cancels this request, as it does when the card is answered anywhere.
func (b *bridge) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
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
	b.say(ctx, c.target, render.Card(title, opts))
	<-ctx.Done()
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

// HandleExtensionMethod answers parley's heartbeat and flushes at a turn's end.
func (b *bridge) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "_parley/ping":
		return map[string]any{}, nil
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

func (b *bridge) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}

func (b *bridge) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}

func (b *bridge) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}

func (b *bridge) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}

func (b *bridge) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}

func (b *bridge) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}

func (b *bridge) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}
