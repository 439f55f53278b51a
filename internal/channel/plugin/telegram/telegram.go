// Package telegram is parley's Telegram plugin (`parley plugin telegram`): an
// ACP client on its stdin/stdout (package bridge), parley being the agent,
// bridged to a Telegram bot over the Bot API with long polling. Each Telegram
// chat is one route; the sender's numeric user id is what allowed_users names.
// Answers stream into one message edited in place (throttled); cards come with
// a button per option.
//
// It speaks the documented Bot API methods getUpdates, sendMessage,
// editMessageText and answerCallbackQuery as plain HTTPS JSON calls. It has
// been tested only against a stand-in of those methods, never against the live
// service.
//
// Its config section (from initialize's _meta "parley/config"):
//
//	token = "123456:ABC…"                 # the bot's token: never logged
//	api_url = "https://api.telegram.org"  # where the Bot API is
//	poll_timeout = 30                     # seconds a getUpdates may wait
package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/channel/plugin/bridge"
)

// Config is the plugin's section of parley's config.
type Config struct {
	Token       string `json:"token"`
	APIURL      string `json:"api_url"`
	PollTimeout int    `json:"poll_timeout"`
}

// MessageLimit is Telegram's limit on a message's text (4096 characters),
// taken as bytes to stay on the safe side.
const MessageLimit = 4096

// Run is the plugin: ACP on in/out, the Bot API as configured by parley.
func Run(ctx context.Context, in io.Reader, out io.Writer, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b, raw, err := bridge.Connect(ctx, in, out, "parley-telegram", log)
	if err != nil {
		return err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("telegram: config: %w", err)
	}
	if cfg.Token == "" {
		return errors.New("telegram: config needs \"token\"")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api.telegram.org"
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30
	}
	api := &API{base: strings.TrimRight(cfg.APIURL, "/") + "/bot" + cfg.Token + "/",
		http: &http.Client{Timeout: time.Duration(cfg.PollTimeout+15) * time.Second}}
	b.Use(api, bridge.Format{Limit: MessageLimit, PerSecond: 20, EditInterval: time.Second})
	if err := b.Reopen(ctx); err != nil {
		return err
	}
	log.Info("telegram polling", "api", cfg.APIURL) // the URL without the token
	offset := int64(0)
	for {
		select {
		case <-b.Done():
			return errors.New("telegram: parley closed the connection")
		default:
		}
		ups, err := api.updates(ctx, offset, cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("telegram: getUpdates", "err", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		for _, u := range ups {
			offset = max(offset, u.UpdateID+1)
			switch {
			case u.Message != nil && u.Message.Text != "" && u.Message.From != nil:
				chat := strconv.FormatInt(u.Message.Chat.ID, 10)
				b.Handle(ctx, chat, strconv.FormatInt(u.Message.From.ID, 10), u.Message.Text)
			case u.CallbackQuery != nil && u.CallbackQuery.Message != nil:
				q := u.CallbackQuery
				if err := api.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": q.ID}, nil); err != nil {
					log.Warn("telegram: answerCallbackQuery", "err", err)
				}
				// A button's data is the option's number: parley takes it as
				// an answer from that user, who must be allowed.
				chat := strconv.FormatInt(q.Message.Chat.ID, 10)
				b.Handle(ctx, chat, strconv.FormatInt(q.From.ID, 10), q.Data)
			}
		}
	}
}

// Update is the part of a Bot API update the plugin reads.
type Update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *Message       `json:"message,omitempty"`
	CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
}

type Message struct {
	MessageID int64  `json:"message_id"`
	From      *User  `json:"from,omitempty"`
	Chat      Chat   `json:"chat"`
	Text      string `json:"text,omitempty"`
}

type User struct {
	ID int64 `json:"id"`
}

type Chat struct {
	ID int64 `json:"id"`
}

type CallbackQuery struct {
	ID      string   `json:"id"`
	From    User     `json:"from"`
	Message *Message `json:"message,omitempty"`
	Data    string   `json:"data"`
}

// API calls the Bot API. Its base URL holds the token: errors never carry it.
type API struct {
	base string
	http *http.Client
}

var _ bridge.Editor = (*API)(nil)
var _ bridge.Buttons = (*API)(nil)

func (a *API) call(ctx context.Context, method string, params, result any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram: %s: bad api_url", method)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL holds the token
		}
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	defer resp.Body.Close()
	var env struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		Description string          `json:"description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&env); err != nil {
		return fmt.Errorf("telegram: %s: HTTP %d, not the JSON expected: %w", method, resp.StatusCode, err)
	}
	if !env.OK {
		return fmt.Errorf("telegram: %s: %s", method, env.Description)
	}
	if result != nil {
		if err := json.Unmarshal(env.Result, result); err != nil {
			return fmt.Errorf("telegram: %s: result: %w", method, err)
		}
	}
	return nil
}

func (a *API) updates(ctx context.Context, offset int64, timeout int) ([]Update, error) {
	var ups []Update
	err := a.call(ctx, "getUpdates", map[string]any{"offset": offset, "timeout": timeout,
		"allowed_updates": []string{"message", "callback_query"}}, &ups)
	return ups, err
}

func chatID(chat string) (int64, error) {
	id, err := strconv.ParseInt(chat, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("telegram: chat %q is not a chat id", chat)
	}
	return id, nil
}

// Say sends a message.
func (a *API) Say(ctx context.Context, chat, text string) error {
	_, err := a.Post(ctx, chat, text)
	return err
}

// Post sends a message and returns its id, for edits.
func (a *API) Post(ctx context.Context, chat, text string) (string, error) {
	id, err := chatID(chat)
	if err != nil {
		return "", err
	}
	var m Message
	if err := a.call(ctx, "sendMessage", map[string]any{"chat_id": id, "text": text}, &m); err != nil {
		return "", err
	}
	return strconv.FormatInt(m.MessageID, 10), nil
}

// Edit rewrites a message.
func (a *API) Edit(ctx context.Context, chat, msg, text string) error {
	id, err := chatID(chat)
	if err != nil {
		return err
	}
	mid, err := strconv.ParseInt(msg, 10, 64)
	if err != nil {
		return fmt.Errorf("telegram: message id %q: %w", msg, err)
	}
	return a.call(ctx, "editMessageText", map[string]any{"chat_id": id, "message_id": mid, "text": text}, nil)
}

// SayCard sends a card with one button per option; a button's data is the
// option's number.
func (a *API) SayCard(ctx context.Context, chat, text string, options []string) error {
	id, err := chatID(chat)
	if err != nil {
		return err
	}
	rows := make([][]map[string]string, 0, len(options))
	for i, o := range options {
		rows = append(rows, []map[string]string{{"text": o, "callback_data": strconv.Itoa(i + 1)}})
	}
	return a.call(ctx, "sendMessage", map[string]any{"chat_id": id, "text": text,
		"reply_markup": map[string]any{"inline_keyboard": rows}}, nil)
}
