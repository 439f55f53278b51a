package trigger

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/schedule"
)

// Limits of a webhook.
const (
	MaxBody     = 1 << 20          // the body, in bytes (413 past it)
	ReadTimeout = 10 * time.Second // to read the body (a stranger holds nothing longer)
	maxDelivery = 100              // a delivery id, in bytes
)

// SignatureHeader is GitHub's webhook signature header.
const SignatureHeader = "X-Hub-Signature-256"

// Sign is the signature header's value for body: what a sender computes.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Handle adds the triggers' management API (signed-in only: handle is the
// web channel's authenticated Handle) and, through open, the webhook
// endpoint, which the signature alone authenticates.
func (s *Triggers) Handle(handle, open func(pattern string, h http.Handler)) {
	handle("GET /api/triggers", http.HandlerFunc(s.handleList))
	handle("POST /api/triggers", http.HandlerFunc(s.handleAdd))
	handle("DELETE /api/triggers/{id}", http.HandlerFunc(s.handleRemove))
	open("POST /api/triggers/{id}", http.HandlerFunc(s.ServeWebhook))
}

func (s *Triggers) handleList(w http.ResponseWriter, r *http.Request) {
	all, err := s.List(r.Context())
	if err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"triggers": all})
}

func (s *Triggers) handleAdd(w http.ResponseWriter, r *http.Request) {
	var sp Spec
	if err := web.DecodeJSON(w, r, 4*MaxTemplate+4096, &sp); err != nil {
		web.WriteError(w, err)
		return
	}
	t, secret, err := s.Add(r.Context(), sp)
	if err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"trigger": t, "secret": secret})
}

func (s *Triggers) handleRemove(w http.ResponseWriter, r *http.Request) {
	if err := s.Remove(r.Context(), r.PathValue("id")); err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
}

// refuse answers a webhook that starts nothing, and closes its connection:
// nothing of a stranger's is kept.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Connection", "close")
	web.HTTPError(w, status, msg)
}

// ServeWebhook starts a turn from a signed webhook. The order matters:
// the body is read with a bound and a deadline, the signature checked, and
// only then is anything parsed, filled or stored.
func (s *Triggers) ServeWebhook(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(s.opt.Now().Add(ReadTimeout)) // not every writer has one (tests)
	if r.ContentLength > MaxBody {
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxBody))
		return
	}
	t, err := s.opt.Store.Trigger(r.Context(), id)
	if errors.Is(err, chat.ErrNotFound) {
		refuse(w, http.StatusNotFound, "no such trigger")
		return
	}
	if err != nil {
		web.WriteError(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxBody))
			return
		}
		refuse(w, http.StatusBadRequest, "the body could not be read in time")
		return
	}
	if msg := checkSignature(t.Secret, r.Header.Get(SignatureHeader), body); msg != "" {
		refuse(w, http.StatusUnauthorized, msg)
		return
	}
	delivery, err := deliveryID(r.Header)
	if err != nil {
		refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	tmpl, err := parseTemplate(t.Template)
	if err != nil {
		web.WriteError(w, fmt.Errorf("trigger %s: %w", id, err))
		return
	}
	text, err := fill(tmpl, body, s.opt.MaxMessage)
	if err != nil {
		web.HTTPError(w, http.StatusBadRequest, err.Error())
		return
	}
	messageID := "delivery:" + delivery
	if delivery == "" {
		messageID = chat.NewID("hook") // no id to know a retry by: each post is a run
	}
	th, err := schedule.Run(r.Context(), s.opt.Send,
		schedule.Target{Agent: t.Agent, Cwd: t.Cwd, Thread: t.Thread, NewEach: t.NewEach},
		Route(t.ID), messageID, text, chat.Origin{Kind: chat.OriginTrigger, ID: t.ID, Name: t.Name}, t.LastThread)
	lastErr := ""
	if err != nil {
		lastErr = err.Error()
	}
	if rerr := s.opt.Store.TriggerRan(r.Context(), t.ID, s.opt.Now(), th, lastErr); rerr != nil {
		s.opt.Logger.Error("trigger: record a run", "trigger", t.ID, "err", rerr)
	}
	if err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusAccepted, map[string]any{"thread": th, "message_id": messageID})
}

// checkSignature says what is wrong with a signature header, "" when it
// signs body with secret (compared in constant time).
func checkSignature(secret, header string, body []byte) string {
	if header == "" {
		return "missing " + SignatureHeader + ": sign the body as sha256=HMAC-SHA256(secret, body) in hex"
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return SignatureHeader + " must be sha256=<hex HMAC-SHA256 of the body>"
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return SignatureHeader + " must be sha256=<hex HMAC-SHA256 of the body>"
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return "the signature does not match the body: wrong secret, or the body changed on the way"
	}
	return ""
}

// deliveryID is the webhook's delivery id (GitHub's, else X-Request-Id),
// "" when it has none.
func deliveryID(h http.Header) (string, error) {
	id := h.Get("X-GitHub-Delivery")
	name := "X-GitHub-Delivery"
	if id == "" {
		id, name = h.Get("X-Request-Id"), "X-Request-Id"
	}
	if len(id) > maxDelivery {
		return "", fmt.Errorf("%s is longer than %d bytes", name, maxDelivery)
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return "", fmt.Errorf("%s must be printable ASCII without spaces", name)
		}
	}
	return id, nil
}
