//go:build e2e

// Package telegram_test runs the Telegram plugin end to end against a stand-in
// of the Bot API methods it uses (getUpdates, sendMessage, editMessageText,
// answerCallbackQuery), with a real daemon supervising `parley plugin
// telegram` and the real Claude Code (stream) behind the scripted Messages API.
// No Telegram server is reachable from here: the plugin has not been tried
// against the live service.
package telegram_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/imrig"
)

// TestMain lets the test binary be `parley plugin telegram` when the host starts it.
func TestMain(m *testing.M) { imrig.Main(m) }

const (
	wait  = imrig.Wait
	token = "123456:standin-token-not-a-secret"
	alice = 111 // allowed
	eve   = 222 // not allowed
	chat  = 9001
)

var longAnswer = imrig.LongAnswer

// pausedAnswer streams in over half a second, then the model thinks for
// longer than any test waits: the turn goes on with all of it held back by the
// edit throttle unless the plugin shows it when the interval is up.
var pausedAnswer = "Here is all of it at once, the last words included, before a long think."

// hugeAnswer is longer than a Telegram message may be: numbered words, so
// that a lost or misplaced one shows.
var hugeAnswer = func() string {
	var b strings.Builder
	for i := range 2200 {
		fmt.Fprintf(&b, "w%04d ", i)
	}
	return strings.TrimSpace(b.String())
}()

// documented are the Bot API methods the plugin uses, which the stand-in
// implements as documented (https://core.telegram.org/bots/api).
var documented = []string{"getUpdates", "sendMessage", "editMessageText", "answerCallbackQuery"}

// textLimit is the Bot API's limit on a message's text, in characters (after
// entities parsing, of which the plugin sends none).
const textLimit = 4096

// botAPI is the stand-in: the four documented methods, every request recorded.
// As the Bot API does, it refuses a text over 4096 characters, and an edit
// that would leave a message as it is ("message is not modified"); it answers
// 429 with a retry_after when told to (busy).
type botAPI struct {
	mu       sync.Mutex
	calls    []call
	busy     int              // sendMessage calls still to answer 429 (retry_after 1)
	refused  map[string]int   // by description of the failure
	pending  []map[string]any // updates not yet fetched
	nextUp   int64
	nextMsg  int64
	nextIn   int64           // the last id of a message written to the bot
	messages map[int64]*sent // by message id
	wake     chan struct{}
}

type call struct {
	Method string
	Body   map[string]any
	At     time.Time
	Failed string // the description of the error it was answered, "" when ok
}

type sent struct {
	ID     int64
	Text   string
	Markup any
	Edits  int
}

func newBotAPI(t *testing.T) (*botAPI, string) {
	b := &botAPI{messages: map[int64]*sent{}, refused: map[string]int{}, wake: make(chan struct{}, 1)}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv.URL
}

func (b *botAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + token + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		apiError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	body, err := params(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	b.mu.Lock()
	b.calls = append(b.calls, call{Method: method, Body: body, At: time.Now()})
	at := len(b.calls) - 1
	b.mu.Unlock()
	fail := func(code int, description string, retryAfter int) {
		b.mu.Lock()
		b.calls[at].Failed = description
		b.refused[description]++
		b.mu.Unlock()
		apiErrorAfter(w, code, description, retryAfter)
	}
	if text, ok := body["text"].(string); ok && utf8.RuneCountInString(text) > textLimit {
		fail(http.StatusBadRequest, "Bad Request: message is too long", 0)
		return
	}
	reply := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
	}
	switch method {
	case "getUpdates":
		timeout, offset := num(body["timeout"]), num(body["offset"])
		deadline := time.After(time.Duration(timeout * float64(time.Second)))
		// As the Bot API documents: an update is confirmed, and never sent
		// again, once getUpdates is called with an offset higher than its id.
		b.mu.Lock()
		b.pending = slices.DeleteFunc(b.pending, func(u map[string]any) bool { return u["update_id"].(int64) < int64(offset) })
		b.mu.Unlock()
		for {
			b.mu.Lock()
			var out []map[string]any
			for _, u := range b.pending {
				if u["update_id"].(int64) >= int64(offset) {
					out = append(out, u)
				}
			}
			b.mu.Unlock()
			if len(out) > 0 {
				reply(out)
				return
			}
			select {
			case <-b.wake:
			case <-deadline:
				reply([]any{})
				return
			case <-r.Context().Done():
				return
			}
		}
	case "sendMessage":
		b.mu.Lock()
		busy := b.busy > 0
		if busy {
			b.busy--
		}
		b.mu.Unlock()
		if busy {
			fail(http.StatusTooManyRequests, "Too Many Requests: retry after 1", 1)
			return
		}
		b.mu.Lock()
		b.nextMsg++
		m := &sent{ID: b.nextMsg, Text: body["text"].(string), Markup: body["reply_markup"]}
		b.messages[m.ID] = m
		b.mu.Unlock()
		reply(map[string]any{"message_id": m.ID, "chat": map[string]any{"id": num(body["chat_id"])}, "text": m.Text})
	case "editMessageText":
		id := int64(num(body["message_id"]))
		text, _ := body["text"].(string)
		b.mu.Lock()
		m := b.messages[id]
		same := m != nil && m.Text == text
		if m != nil && !same {
			m.Text, m.Edits = text, m.Edits+1
		}
		b.mu.Unlock()
		if m == nil {
			fail(http.StatusBadRequest, "Bad Request: message to edit not found", 0)
			return
		}
		if same {
			fail(http.StatusBadRequest, notModified, 0)
			return
		}
		reply(map[string]any{"message_id": id})
	case "answerCallbackQuery":
		reply(true)
	default:
		apiError(w, http.StatusNotFound, "Not Found")
	}
}

// notModified is the Bot API's answer to an edit that changes nothing.
const notModified = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"

// apiError answers as the Bot API does when a call fails.
func apiError(w http.ResponseWriter, code int, description string) {
	apiErrorAfter(w, code, description, 0)
}

// apiErrorAfter is apiError with, for a 429, the seconds to wait before
// trying again (ResponseParameters.retry_after).
func apiErrorAfter(w http.ResponseWriter, code int, description string, retryAfter int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	out := map[string]any{"ok": false, "error_code": code, "description": description}
	if retryAfter > 0 {
		out["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	_ = json.NewEncoder(w).Encode(out)
}

// jsonParams are the parameters whose form value is JSON-serialized, as the
// Bot API has them.
var jsonParams = map[string]bool{"reply_markup": true, "allowed_updates": true}

// params reads a request's parameters the ways the Bot API takes them: a JSON
// body, a URL query, or a form (urlencoded or multipart/form-data). A form's
// values are strings but for jsonParams, which are decoded.
func params(r *http.Request) (map[string]any, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := map[string]any{}
	if ct == "application/json" {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil && err != io.EOF {
			return nil, err
		}
		return body, nil
	}
	parse := r.ParseForm
	if ct == "multipart/form-data" {
		parse = func() error { return r.ParseMultipartForm(1 << 20) }
	}
	if err := parse(); err != nil {
		return nil, err
	}
	for k, vs := range r.Form {
		if len(vs) == 0 {
			continue
		}
		body[k] = vs[0]
		if jsonParams[k] {
			var v any
			if err := json.Unmarshal([]byte(vs[0]), &v); err != nil {
				return nil, fmt.Errorf("%s: %v", k, err)
			}
			body[k] = v
		}
	}
	return body, nil
}

// num is a numeric parameter, from JSON (a number) or a form (a string).
func num(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return 0
}

// push queues an update; it is removed once fetched past.
func (b *botAPI) push(u map[string]any) {
	b.mu.Lock()
	b.nextUp++
	u["update_id"] = b.nextUp
	b.pending = append(b.pending, u)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// write is a person writing text: a message with an id of its own.
func (b *botAPI) write(from int64, text string) {
	b.mu.Lock()
	b.nextIn++
	id := b.nextIn
	b.mu.Unlock()
	b.writeID(from, id, text)
}

// writeAll is a person writing several messages at once: the bot fetches
// them in one getUpdates.
func (b *botAPI) writeAll(from int64, texts ...string) {
	b.mu.Lock()
	for _, text := range texts {
		b.nextIn++
		b.nextUp++
		b.pending = append(b.pending, map[string]any{"update_id": b.nextUp, "message": map[string]any{"message_id": b.nextIn,
			"from": map[string]any{"id": from}, "chat": map[string]any{"id": chat}, "text": text}})
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// writeID hands over the message id again: an update the platform sends twice.
func (b *botAPI) writeID(from, id int64, text string) {
	b.push(map[string]any{"message": map[string]any{"message_id": id, "from": map[string]any{"id": from},
		"chat": map[string]any{"id": chat}, "text": text}})
}

func (b *botAPI) press(from, msgID int64, data string) {
	b.push(map[string]any{"callback_query": map[string]any{"id": "cb" + data, "from": map[string]any{"id": from},
		"message": map[string]any{"message_id": msgID, "chat": map[string]any{"id": chat}}, "data": data}})
}

// find returns the newest message (after id `after`) whose text holds want.
func (b *botAPI) find(after int64, want string) *sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	var found *sent
	for id, m := range b.messages {
		if id > after && strings.Contains(m.Text, want) && (found == nil || id > found.ID) {
			c := *m
			found = &c
		}
	}
	return found
}

func (b *botAPI) last() int64 { b.mu.Lock(); defer b.mu.Unlock(); return b.nextMsg }

func (b *botAPI) refusals(description string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused[description]
}

func (b *botAPI) allCalls() []call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

func (b *botAPI) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

func (b *botAPI) waitFor(t *testing.T, after int64, want string) *sent {
	t.Helper()
	var m *sent
	testkit.Eventually(t, wait, func() bool { m = b.find(after, want); return m != nil }, "the bot never said %q; after message %d it said %q", want, after, b.textsAfter(after))
	return m
}

// textsAfter lists the texts of the messages after id `after`, oldest first.
func (b *botAPI) textsAfter(after int64) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for id := after + 1; id <= b.nextMsg; id++ {
		if m := b.messages[id]; m != nil {
			out = append(out, m.Text)
		}
	}
	return out
}

func TestTelegramAgainstTheStandIn(t *testing.T) {
	r := imrig.New(t)
	work := r.Work
	bot, apiURL := newBotAPI(t)
	logs := &syncBuf{}
	t.Cleanup(func() { // after the daemon's shutdown (cleanups run last first)
		if strings.Contains(logs.String(), token) {
			t.Errorf("the bot token appears in parley's log")
		} else if t.Failed() {
			t.Logf("parley's log:\n%s", logs.String())
		}
	})
	r.Start(append(imrig.Rules(),
		claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 400), 400, 50*time.Millisecond)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "then pause"}, Reply: claudeapi.Reply{Blocks: []claudeapi.Block{
			{Type: claudeapi.BlockText, Text: pausedAnswer, Chunks: 6, Delay: claudeapi.Duration(100 * time.Millisecond)},
			{Type: claudeapi.BlockThinking, Text: "Thinking it over.", Chunks: 1, Delay: claudeapi.Duration(10 * time.Minute)},
		}}},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "at length"}, Reply: claudeapi.Text(hugeAnswer, 40, 5*time.Millisecond)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "in a rush"}, Reply: claudeapi.Text("Sent once the wait was over.", 1, 0)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "one"}, Reply: claudeapi.Text("One.", 1, 0)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "two"}, Reply: claudeapi.Text("Two.", 1, 0)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "three"}, Reply: claudeapi.Text("Three.", 1, 0)},
	), imrig.Plugin{
		ID:           "telegram",
		AllowedUsers: []string{"111"},
		Config:       map[string]any{"token": token, "api_url": apiURL, "poll_timeout": 1},
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	api := r.API
	testkit.Eventually(t, wait, func() bool { return bot.count("getUpdates") > 0 }, "the plugin never polled")

	t.Run("an answer streams into one message edited in place", func(t *testing.T) {
		mark := bot.last()
		bot.write(alice, "hello")
		testkit.Eventually(t, wait, func() bool {
			m := bot.find(mark, "word after word.")
			return m != nil && m.Text == longAnswer
		}, "no message holds the whole answer; got %+v", bot.find(mark, "scripted"))
		m := bot.find(mark, "word after word.")
		if m.Edits < 1 {
			t.Errorf("the answer was posted whole (%d edits), want it streamed by edits", m.Edits)
		}
	})

	t.Run("text held back by the edit throttle is shown while the turn goes on", func(t *testing.T) {
		mark := bot.last()
		quiet := bot.refusals(notModified)
		bot.write(alice, "then pause")
		stopped := false
		defer func() {
			if !stopped { // the model would think on for minutes: stop it for the next tests
				bot.write(alice, "/stop")
				testkit.Within(wait, func() bool { return bot.find(mark, "(stopped)") != nil })
			}
		}()
		testkit.Eventually(t, wait, func() bool {
			m := bot.find(mark, "Here is all")
			return m != nil && m.Text == pausedAnswer
		}, "the message never showed the whole answer during the pause; the messages hold %v", imrig.Later(func() any { return bot.textsAfter(mark) }))
		// The model is still thinking: the turn has not ended, so stopping it
		// now cuts it short.
		bot.write(alice, "/stop")
		stopped = true
		bot.waitFor(t, mark, "(stopped)")
		if m := bot.find(mark, "Here is all"); m.Text != pausedAnswer {
			t.Errorf("after the stop the message holds %q, want %q", m.Text, pausedAnswer)
		}
		// At the turn's end the plugin shows the answer again, already shown:
		// the Bot API answers "message is not modified", which is no error.
		if bot.refusals(notModified) == quiet {
			t.Errorf("no edit was answered %q: the test did not exercise it", "message is not modified")
		}
		if strings.Contains(logs.String(), "message is not modified") {
			t.Errorf("an edit refused as not modified was logged as a failure")
		}
	})

	t.Run("a 429 is waited out and the message sent again", func(t *testing.T) {
		mark := bot.last()
		from := len(bot.allCalls())
		bot.mu.Lock()
		bot.busy = 1
		bot.mu.Unlock()
		bot.write(alice, "in a rush")
		m := bot.waitFor(t, mark, "Sent once the wait was over.")
		if m.Text != "Sent once the wait was over." {
			t.Errorf("the answer reads %q", m.Text)
		}
		calls := bot.allCalls()[from:]
		i := slices.IndexFunc(calls, func(c call) bool { return c.Failed != "" && strings.HasPrefix(c.Failed, "Too Many Requests") })
		if i < 0 {
			t.Fatalf("no sendMessage was answered 429: the test did not exercise it")
		}
		refused := calls[i]
		j := slices.IndexFunc(calls[i+1:], func(c call) bool {
			return c.Method == refused.Method && c.Failed == "" && c.Body["text"] == refused.Body["text"]
		})
		if j < 0 {
			t.Fatalf("the message answered 429 (%q) was never sent again", refused.Body["text"])
		}
		if again := calls[i+1+j]; again.At.Sub(refused.At) < time.Second {
			t.Errorf("sent again %v after the 429, want after its retry_after (1s)", again.At.Sub(refused.At))
		}
		if strings.Contains(strings.ToLower(logs.String()), "too many requests") {
			t.Errorf("the 429 was logged as a failure to send, want it waited out")
		}
	})

	t.Run("an answer longer than a message is split, nothing lost", func(t *testing.T) {
		mark := bot.last()
		bot.write(alice, "at length")
		want := strings.Fields(hugeAnswer)
		testkit.Eventually(t, wait, func() bool {
			got := strings.Fields(strings.Join(bot.textsAfter(mark), " "))
			return slices.Equal(got, want)
		}, "the messages after the question do not hold the answer, word for word; they hold %v words", imrig.Later(func() any {
			return fmt.Sprintf("%d in %d messages", len(strings.Fields(strings.Join(bot.textsAfter(mark), " "))), len(bot.textsAfter(mark)))
		}))
		texts := bot.textsAfter(mark)
		if len(texts) < 4 {
			t.Errorf("the answer of %d characters came in %d messages, want it split in at least 4", len(hugeAnswer), len(texts))
		}
		for _, m := range texts {
			if n := utf8.RuneCountInString(m); n > textLimit {
				t.Errorf("a message of %d characters, over Telegram's %d", n, textLimit)
			}
		}
		if n := bot.refusals("Bad Request: message is too long"); n > 0 {
			t.Errorf("%d calls were refused as too long", n)
		}
	})

	t.Run("a message handed over twice reaches the agent once", func(t *testing.T) {
		before := len(api.ScenarioRequests())
		mark := bot.last()
		bot.writeID(alice, 1_000_001, "hello")
		first := bot.waitFor(t, mark, "word after word.")
		testkit.Eventually(t, wait, func() bool { m := bot.find(mark, "word after word."); return m.Text == longAnswer },
			"the answer never finished")
		bot.writeID(alice, 1_000_001, "hello") // as getUpdates does after a restart
		bot.write(alice, "make the file")      // a later message: once it is answered, the repeat was handled
		card := bot.waitFor(t, first.ID, "Allow")
		if got := bot.find(first.ID, "word after word."); got != nil {
			t.Errorf("the repeated message was answered again: %q", got.Text)
		}
		if got := len(api.ScenarioRequests()) - before; got != 2 {
			t.Errorf("model requests: got %d, want 2 (hello once, make the file)", got)
		}
		bot.press(alice, card.ID, "1")
		bot.waitFor(t, card.ID, "The command ran.")
	})

	t.Run("messages written together reach the agent in their order", func(t *testing.T) {
		before := len(api.ScenarioRequests())
		mark := bot.last()
		bot.writeAll(alice, "one", "two", "three") // one getUpdates batch
		bot.waitFor(t, mark, "Three.")
		// Claude Code may fold messages that arrive during a turn into one
		// request: the order is what the last request carries.
		reqs := api.ScenarioRequests()
		if len(reqs) == before {
			t.Fatal("the model was never asked")
		}
		got := reqs[len(reqs)-1].UserTexts()
		if want := []string{"one", "two", "three"}; len(got) < 3 || !slices.Equal(got[len(got)-3:], want) {
			t.Errorf("the model was asked %q, want it to end with %q", got, want)
		}
	})

	t.Run("a user not allowed is refused", func(t *testing.T) {
		before := len(api.ScenarioRequests())
		mark := bot.last()
		bot.write(eve, "hello")
		bot.waitFor(t, mark, "not allowed")
		if after := len(api.ScenarioRequests()); after != before {
			t.Errorf("model requests: got %d after the refusal, want %d", after, before)
		}
	})

	t.Run("a card comes with buttons; pressing one answers it", func(t *testing.T) {
		mark := bot.last()
		bot.write(alice, "make the file")
		card := bot.waitFor(t, mark, "Allow")
		if b, _ := json.Marshal(card.Markup); !strings.Contains(string(b), `"callback_data":"1"`) || strings.Contains(string(b), "copy_text") {
			t.Fatalf("card markup: got %s, want buttons with callback data and nothing else", b)
		}
		answered := bot.count("answerCallbackQuery")
		bot.press(alice, card.ID, "1")
		bot.waitFor(t, card.ID, "The command ran.")
		if got := bot.count("answerCallbackQuery"); got != answered+1 {
			t.Errorf("answerCallbackQuery calls: got %d, want %d", got, answered+1)
		}
		if _, err := os.Stat(filepath.Join(work, "made-by-bash")); err != nil {
			t.Errorf("the tool did not run: %v", err)
		}
	})

	t.Run("/stop during a slow answer", func(t *testing.T) {
		mark := bot.last()
		bot.write(alice, "slowly")
		bot.waitFor(t, mark, "tick")
		bot.write(alice, "/stop")
		bot.waitFor(t, mark, "(stopped)")
	})

	t.Run("the plugin killed with a card open gets the card again", func(t *testing.T) {
		mark := bot.last()
		bot.write(alice, "make another")
		first := bot.waitFor(t, mark, "Allow")
		r.KillPlugin()
		again := bot.waitFor(t, first.ID, "Allow")
		bot.press(alice, again.ID, "1")
		// The restarted plugin is sent again what it may not have shown (at
		// least once): the follow-up that counts comes after the answer.
		answered := bot.waitFor(t, again.ID, "Answered: ")
		bot.waitFor(t, answered.ID, "The command ran.")
		if _, err := os.Stat(filepath.Join(work, "made-again")); err != nil {
			t.Errorf("the tool did not run: %v", err)
		}
	})

	t.Run("every call is a documented method the plugin uses", func(t *testing.T) {
		calls := bot.allCalls()
		seen := map[string]int{}
		for _, c := range calls {
			seen[c.Method]++
			if !slices.Contains(documented, c.Method) {
				t.Errorf("a call to %q, not one of %q", c.Method, documented)
			}
		}
		for _, m := range documented {
			if seen[m] == 0 {
				t.Errorf("no call to %s: the test did not exercise it", m)
			}
		}
	})
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
