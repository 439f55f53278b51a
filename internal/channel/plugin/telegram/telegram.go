// Package telegram is parley's Telegram plugin (`parley plugin telegram`): an
// ACP client on its stdin/stdout (package bridge), parley being the agent,
// bridged to a Telegram bot over the Bot API with long polling. Each Telegram
// chat is one route; the sender's numeric user id is what allowed_users names.
// Answers stream into one message edited in place (throttled); cards come with
// a button per option.
//
// It speaks the Bot API through the library github.com/go-telegram/bot: its
// long-polling loop (getUpdates) and its sendMessage, editMessageText and
// answerCallbackQuery. It has been tested only against a stand-in of those
// methods, never against the live service. A call the API answers with 429
// (too many requests) is made again after the retry_after it names; an edit
// refused because the message holds that text already is no error.
//
// Its config section (from initialize's _meta "parley/config"):
//
//	token = "123456:ABC…"                 # the bot's token: never logged
//	api_url = "https://api.telegram.org"  # where the Bot API is
//	poll_timeout = 30                     # seconds a getUpdates may wait
package telegram

import (
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

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

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
	api := &API{token: cfg.Token}
	handle := func(ctx context.Context, _ *bot.Bot, u *models.Update) {
		switch {
		case u.Message != nil && u.Message.Text != "" && u.Message.From != nil:
			chat := strconv.FormatInt(u.Message.Chat.ID, 10)
			id := fmt.Sprintf("tg-%s-%d", chat, u.Message.ID)
			b.HandleOnce(ctx, chat, strconv.FormatInt(u.Message.From.ID, 10), id, u.Message.Text)
		case u.CallbackQuery != nil:
			q := u.CallbackQuery
			id, ok := chatOf(q.Message)
			if !ok {
				return
			}
			if err := api.retry(ctx, func() error {
				_, err := api.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID})
				return err
			}); err != nil {
				log.Warn("telegram: answerCallbackQuery", "err", api.clean("answerCallbackQuery", err))
			}
			// A button's data is the option's number: parley takes it as an
			// answer from that user, who must be allowed.
			b.Handle(ctx, strconv.FormatInt(id, 10), strconv.FormatInt(q.From.ID, 10), q.Data)
		}
	}
	// The library asks getUpdates for (its poll timeout - 1s); the HTTP
	// client waits a little longer than that.
	poll := time.Duration(cfg.PollTimeout) * time.Second
	api.bot, err = bot.New(cfg.Token,
		bot.WithServerURL(strings.TrimRight(cfg.APIURL, "/")),
		bot.WithHTTPClient(poll+time.Second, &http.Client{Timeout: poll + 15*time.Second}),
		bot.WithSkipGetMe(),
		bot.WithAllowedUpdates(bot.AllowedUpdates{"message", "callback_query"}),
		// One worker, handlers in turn: updates are handled in order.
		bot.WithWorkers(1),
		bot.WithNotAsyncHandlers(),
		bot.WithDefaultHandler(handle),
		bot.WithErrorsHandler(func(err error) {
			log.Warn("telegram: bot API", "err", api.clean("", err))
		}),
	)
	if err != nil {
		return api.clean("", err)
	}
	b.Use(api, bridge.Format{Limit: MessageLimit, PerSecond: 20, EditInterval: time.Second})
	if err := b.Reopen(ctx); err != nil {
		return err
	}
	log.Info("telegram polling", "api", cfg.APIURL) // the URL without the token
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-b.Done():
			stop()
		case <-pollCtx.Done():
		}
	}()
	api.bot.Start(pollCtx) // until pollCtx is done
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("telegram: parley closed the connection")
}

// chatOf is the chat of a callback query's message, accessible or not.
func chatOf(m models.MaybeInaccessibleMessage) (int64, bool) {
	switch {
	case m.Message != nil:
		return m.Message.Chat.ID, true
	case m.InaccessibleMessage != nil:
		return m.InaccessibleMessage.Chat.ID, true
	}
	return 0, false
}

// API calls the Bot API through the library. The library puts the token in
// its request URLs: the errors API returns or logs never carry it.
type API struct {
	bot   *bot.Bot
	token string
}

var _ bridge.Editor = (*API)(nil)
var _ bridge.Buttons = (*API)(nil)

// clean is err as the plugin may show it: the token, should the library's
// message hold it (as a request URL does), replaced by ***.
func (a *API) clean(method string, err error) error {
	msg := err.Error()
	for _, t := range []string{a.token, url.PathEscape(a.token), url.QueryEscape(a.token)} {
		if t != "" {
			msg = strings.ReplaceAll(msg, t, "***")
		}
	}
	if method == "" {
		return errors.New("telegram: " + msg)
	}
	return errors.New("telegram: " + method + ": " + msg)
}

// maxRetries bounds how often one call is tried again after a 429.
const maxRetries = 5

// retry makes a Bot API call, and when the API answers 429 (too many
// requests) waits the retry_after it names and makes it again, so that no
// text is dropped for going too fast. The library returns the 429 and its
// retry_after without waiting or retrying itself.
func (a *API) retry(ctx context.Context, call func() error) error {
	for i := 0; ; i++ {
		err := call()
		var tooMany *bot.TooManyRequestsError
		if err == nil || !errors.As(err, &tooMany) || i == maxRetries {
			return err
		}
		wait := time.Duration(max(tooMany.RetryAfter, 1)) * time.Second
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// notModified is the Bot API refusing an edit whose text is the message's
// already: nothing to do.
func notModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
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
	var m *models.Message
	err = a.retry(ctx, func() (err error) {
		m, err = a.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: id, Text: text})
		return err
	})
	if err != nil {
		return "", a.clean("sendMessage", err)
	}
	return strconv.Itoa(m.ID), nil
}

// Edit rewrites a message.
func (a *API) Edit(ctx context.Context, chat, msg, text string) error {
	id, err := chatID(chat)
	if err != nil {
		return err
	}
	mid, err := strconv.Atoi(msg)
	if err != nil {
		return fmt.Errorf("telegram: message id %q: %w", msg, err)
	}
	err = a.retry(ctx, func() error {
		_, err := a.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: id, MessageID: mid, Text: text})
		return err
	})
	if err != nil && !notModified(err) {
		return a.clean("editMessageText", err)
	}
	return nil
}

// SayCard sends a card with one button per option; a button's data is the
// option's number.
// cardKeyboard is the inline keyboard of a card. The library's own button type
// always sends "copy_text" (a struct field that omitempty cannot leave out), which
// the live Bot API is reported to refuse; a card's buttons need only these two.
type cardKeyboard struct {
	InlineKeyboard [][]cardButton `json:"inline_keyboard"`
}

type cardButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

func (a *API) SayCard(ctx context.Context, chat, text string, options []string) error {
	id, err := chatID(chat)
	if err != nil {
		return err
	}
	rows := make([][]cardButton, 0, len(options))
	for i, o := range options {
		rows = append(rows, []cardButton{{Text: o, CallbackData: strconv.Itoa(i + 1)}})
	}
	err = a.retry(ctx, func() error {
		_, err := a.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: id, Text: text,
			ReplyMarkup: cardKeyboard{InlineKeyboard: rows}})
		return err
	})
	if err != nil {
		return a.clean("sendMessage", err)
	}
	return nil
}
