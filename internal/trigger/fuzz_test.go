package trigger

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
)

// oneTrigger is a store holding one trigger.
type oneTrigger struct{ t store.Trigger }

func (o *oneTrigger) Triggers(context.Context) ([]store.Trigger, error) {
	return []store.Trigger{o.t}, nil
}
func (o *oneTrigger) Trigger(_ context.Context, id string) (store.Trigger, error) {
	if id != o.t.ID {
		return store.Trigger{}, chat.ErrNotFound
	}
	return o.t, nil
}
func (o *oneTrigger) PutTrigger(context.Context, store.Trigger) error { return nil }
func (o *oneTrigger) DeleteTrigger(context.Context, string) error     { return nil }
func (o *oneTrigger) TriggerRan(context.Context, string, time.Time, chat.ThreadID, string) error {
	return nil
}

// sends counts what reached the send path, by message id, and refuses a
// message id seen before as the router does.
type sends struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *sends) Send(_ context.Context, req router.SendRequest) (chat.Delivery, chat.ThreadID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := req.Message.Validate(); err != nil {
		return chat.Delivery{}, "", err
	}
	s.ids[req.Message.MessageID]++
	if s.ids[req.Message.MessageID] > 1 {
		return chat.Delivery{}, "t1", chat.ErrDuplicate
	}
	return chat.Delivery{State: chat.DeliveryQueued}, "t1", nil
}

// FuzzWebhook posts any body with any signature and headers: what is not
// signed with the secret gets a 4xx with words and sends nothing; nothing
// gets a 5xx; a signed body sends at most one message per delivery id.
func FuzzWebhook(f *testing.F) {
	const secret = "s3cret"
	f.Add([]byte(`{"branch":"main","url":"u"}`), "", "d1", true)
	f.Add([]byte(`{"branch":"main"}`), "", "", true)
	f.Add([]byte(`{"branch":{"x":[1,null]},"url":1e400}`), "", "d2", true)
	f.Add([]byte(`[]`), "sha256=00", "d3", false)
	f.Add([]byte(`{"branch":"a","url":"b"}`), "sha256=", "x y", true)
	f.Add([]byte(``), "sha1=abc", "", false)
	f.Fuzz(func(t *testing.T, body []byte, sig, delivery string, sign bool) {
		tr := &oneTrigger{t: store.Trigger{ID: "trg1", Agent: "a", Cwd: "/", Secret: secret,
			Template: "CI failed on {{.branch}}: {{.url}}"}}
		sent := &sends{ids: map[string]int{}}
		s := New(Options{Store: tr, Send: sent, MaxMessage: 4096})
		if sign {
			sig = Sign(secret, body)
		}
		signed := sig == Sign(secret, body)
		req := httptest.NewRequest(http.MethodPost, Path("trg1"), bytes.NewReader(body))
		req.SetPathValue("id", "trg1")
		req.Header.Set(SignatureHeader, sig)
		req.Header.Set("X-GitHub-Delivery", delivery)
		for range 2 { // the second is a retry
			w := httptest.NewRecorder()
			s.ServeWebhook(w, req.Clone(context.Background()))
			req.Body = nopCloser{bytes.NewReader(body)}
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			json.Unmarshal(w.Body.Bytes(), &e)
			switch {
			case w.Code >= 500:
				t.Fatalf("%d: %s", w.Code, w.Body)
			case w.Code >= 400 && e.Error.Message == "":
				t.Fatalf("%d without words: %s", w.Code, w.Body)
			case w.Code < 300 && !signed:
				t.Fatalf("an unsigned body got %d", w.Code)
			}
		}
		sent.mu.Lock()
		defer sent.mu.Unlock()
		if !signed && len(sent.ids) != 0 {
			t.Fatalf("an unsigned body was sent: %v", sent.ids)
		}
		if delivery != "" && len(sent.ids) > 1 {
			t.Fatalf("one delivery sent as %d messages: %v", len(sent.ids), sent.ids)
		}
	})
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
