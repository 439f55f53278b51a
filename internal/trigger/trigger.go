// Package trigger starts turns from webhooks: POST /api/triggers/{id} with
// a JSON body signed as GitHub signs its webhooks (X-Hub-Signature-256:
// sha256=HMAC-SHA256(secret, body)) sends the trigger's template, filled
// from the body, to its agent. The delivery id (X-GitHub-Delivery or
// X-Request-Id) is the message's id, so a retried delivery is a no-op.
package trigger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/store"
)

// MaxTriggers bounds the triggers one machine keeps.
const MaxTriggers = 200

// Store keeps triggers (store/sqlite).
type Store interface {
	Triggers(ctx context.Context) ([]store.Trigger, error)
	Trigger(ctx context.Context, id string) (store.Trigger, error)
	PutTrigger(ctx context.Context, t store.Trigger) error
	DeleteTrigger(ctx context.Context, id string) error
	TriggerRan(ctx context.Context, id string, at time.Time, thread chat.ThreadID, lastErr string) error
}

// Options configure the triggers.
type Options struct {
	Store Store
	Send  schedule.Sender
	// Check, when set, refuses an agent or directory this machine would.
	Check func(agent, cwd string) error
	// MaxMessage bounds a filled template (limits.max_message_bytes).
	MaxMessage int
	Now        func() time.Time
	Logger     *slog.Logger
	// Audit records triggers added and removed (audit.go), naming Machine
	// (this machine in its cluster, or ""); nil records nothing.
	Audit   audit.Log
	Machine string
}

// Triggers adds, lists and removes triggers and serves their webhooks.
type Triggers struct{ opt Options }

// New builds the triggers' service.
func New(opt Options) *Triggers {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MaxMessage <= 0 {
		opt.MaxMessage = 1 << 20
	}
	return &Triggers{opt: opt}
}

// Spec is a trigger as asked for (POST /api/triggers).
type Spec struct {
	Name     string        `json:"name,omitempty"`
	Agent    string        `json:"agent"`
	Cwd      string        `json:"cwd"`
	Thread   chat.ThreadID `json:"thread,omitempty"`
	NewEach  bool          `json:"new,omitempty"`
	Template string        `json:"template"`
}

// Trigger is a trigger as listed: never its secret.
type Trigger struct {
	ID         string        `json:"id"`
	Name       string        `json:"name,omitempty"`
	Agent      string        `json:"agent"`
	Cwd        string        `json:"cwd"`
	Thread     chat.ThreadID `json:"thread,omitempty"`
	NewEach    bool          `json:"new,omitempty"`
	Template   string        `json:"template"`
	Path       string        `json:"path"` // where its webhooks go
	LastRun    *time.Time    `json:"last_run,omitempty"`
	LastThread chat.ThreadID `json:"last_thread,omitempty"`
	LastError  string        `json:"last_error,omitempty"`
	Created    time.Time     `json:"created_at"`
}

// Path is where a trigger's webhooks are posted.
func Path(id string) string { return "/api/triggers/" + id }

func view(t store.Trigger) Trigger {
	v := Trigger{ID: t.ID, Name: t.Name, Agent: t.Agent, Cwd: t.Cwd, Thread: t.Thread, NewEach: t.NewEach,
		Template: t.Template, Path: Path(t.ID), LastThread: t.LastThread, LastError: t.LastError, Created: t.Created}
	if !t.LastRun.IsZero() {
		at := t.LastRun
		v.LastRun = &at
	}
	return v
}

// Add keeps a new trigger and answers it with its secret, the one time the
// secret is told.
func (s *Triggers) Add(ctx context.Context, sp Spec) (Trigger, string, error) {
	target := schedule.Target{Agent: sp.Agent, Cwd: sp.Cwd, Thread: sp.Thread, NewEach: sp.NewEach}
	if err := target.Check(); err != nil {
		return Trigger{}, "", err
	}
	if err := schedule.CheckName(sp.Name); err != nil {
		return Trigger{}, "", err
	}
	if _, err := parseTemplate(sp.Template); err != nil {
		return Trigger{}, "", schedule.BadInput("%v", err)
	}
	if s.opt.Check != nil {
		if err := s.opt.Check(sp.Agent, sp.Cwd); err != nil {
			return Trigger{}, "", err
		}
	}
	all, err := s.opt.Store.Triggers(ctx)
	if err != nil {
		return Trigger{}, "", err
	}
	if len(all) >= MaxTriggers {
		return Trigger{}, "", schedule.BadInput("this machine has %d triggers, the most it keeps: remove one first", len(all))
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	t := store.Trigger{ID: chat.NewID("trg"), Name: strings.TrimSpace(sp.Name), Agent: sp.Agent, Cwd: sp.Cwd,
		Thread: sp.Thread, NewEach: sp.NewEach, Template: sp.Template, Secret: hex.EncodeToString(secret),
		Created: s.opt.Now()}
	if err := s.opt.Store.PutTrigger(ctx, t); err != nil {
		return Trigger{}, "", err
	}
	s.record(ctx, "added", view(t))
	return view(t), t.Secret, nil
}

// List answers every trigger, oldest first, without secrets.
func (s *Triggers) List(ctx context.Context) ([]Trigger, error) {
	all, err := s.opt.Store.Triggers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Trigger, 0, len(all))
	for _, t := range all {
		out = append(out, view(t))
	}
	return out, nil
}

// Remove deletes a trigger: its URL answers 404 from then on.
func (s *Triggers) Remove(ctx context.Context, id string) error {
	if err := s.opt.Store.DeleteTrigger(ctx, id); err != nil {
		return fmt.Errorf("%w", err)
	}
	s.record(ctx, "removed", Trigger{ID: id})
	return nil
}

// Route is the route a trigger's runs come from.
func Route(id string) chat.RouteKey { return chat.RouteKey{Channel: chat.OriginTrigger, Chat: id} }
