// Package irc is parley's IRC plugin (`parley plugin irc`): an ACP client on
// its stdin/stdout (package bridge), parley being the agent, bridged to IRC
// channels and private messages. Each IRC channel (or nick, for private
// messages) is one chat, so one route. Answers come back as PRIVMSG lines
// within IRC's line limit (Lines): an agent's CR or NUL breaks the line, and
// its \x01 is shown as ␁, so no text it writes is sent as a CTCP request.
//
// Who wrote is reported to parley as the full nick!user@host (a nick alone
// proves nothing: anyone can take a free nick), and, where the server sends
// IRCv3 account tags, as the services account too; allowed_users names masks
// such as "alice!*@trusted.example" or "account:alice".
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

	"github.com/parleyhq/parley/internal/channel/plugin/bridge"
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
	b, raw, err := bridge.Connect(ctx, in, out, "parley-irc", log)
	if err != nil {
		return err
	}
	cfg, err := configOf(raw)
	if err != nil {
		return err
	}
	irc, err := Dial(ctx, cfg.Server, cfg.Nick, "parley")
	if err != nil {
		return err
	}
	defer irc.Close()
	b.Use(transport{irc, cfg.LineLimit}, bridge.Format{Limit: cfg.LineLimit, Lines: true, PerSecond: cfg.LinesPerSecond})
	log.Info("irc connected", "server", cfg.Server, "nick", irc.Nick(), "caps", irc.Caps())
	for _, ch := range cfg.Channels {
		if err := irc.Send("JOIN", ch); err != nil {
			return err
		}
		// Opening the session asks again every card still open for this chat
		// and sends what it missed: nothing sent while the plugin was down is lost.
		if err := b.Open(ctx, ch); err != nil {
			return err
		}
	}
	if err := b.Reopen(ctx); err != nil { // private chats open before a restart
		return err
	}
	for {
		select {
		case m, ok := <-irc.Messages():
			if !ok {
				return irc.Err()
			}
			if m.Command != "PRIVMSG" || len(m.Params) < 2 || strings.HasPrefix(m.Params[1], "\x01") { // CTCP
				continue
			}
			if !strings.Contains(m.Prefix, "!") || !strings.Contains(m.Prefix, "@") {
				continue // not from a person (a server notice)
			}
			target, text, nick := m.Params[0], m.Params[1], m.Nick()
			chatID := target
			if !strings.HasPrefix(target, "#") && !strings.HasPrefix(target, "&") {
				chatID = nick // a private message: the chat is the person
			}
			b.HandleFrom(ctx, chatID, bridge.Sender{ID: m.Prefix, Account: m.Account()}, "", text)
		case <-b.Done():
			return errors.New("irc: parley closed the connection")
		case <-ctx.Done():
			return nil
		}
	}
}

type transport struct {
	c     *Conn
	limit int
}

// Say sends text as one PRIVMSG per line of Lines: the bridge's pieces come
// within the limit, but may still hold a CR or a \x01.
func (t transport) Say(_ context.Context, chat, text string) error {
	return t.c.Privmsg(chat, Lines(text, t.limit)...)
}

func configOf(raw json.RawMessage) (Config, error) {
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
	return c, nil
}
