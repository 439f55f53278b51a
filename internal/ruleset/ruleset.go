// Package ruleset owns the approval rules that answer permission cards: the
// config's [[rule]]s, read-only, then the rules a person made in the
// dashboard or from a card, kept in SQLite. One Set holds them; every change
// goes through it (validated, kept, then published as a new snapshot), and
// the router's lanes read the snapshot when a card opens, with no database
// read per card.
package ruleset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/store"
)

// MaxStored bounds the rules a person can make on one machine.
const MaxStored = 500

// Where a rule comes from.
const (
	FromConfig    = "config"
	FromDashboard = "dashboard"
)

// Store keeps the stored rules (store/sqlite).
type Store interface {
	StoredRules(ctx context.Context) ([]store.StoredRule, error)
	PutRule(ctx context.Context, r store.StoredRule) error
	DeleteRule(ctx context.Context, id string) error
}

// Options configure a Set.
type Options struct {
	Config []rules.Rule // the config's [[rule]]s, first in the order
	Store  Store
	Node   string // this machine, the default of a test's machine
	// Roots gives an agent's roots, for a test (the router's lanes give
	// their own with each call).
	Roots  func(agent string) []string
	Now    func() time.Time
	Logger *slog.Logger
	// Audit records rules made, changed and removed (audit.go); nil records nothing.
	Audit audit.Log
	// Remote, set at a cluster's hub, reaches the nodes' rules (machines.go).
	Remote Remote
}

// Spec is a rule as a person writes it (POST and PUT /api/rules).
type Spec struct {
	// ID, on an add, is the rule's id, chosen by the caller so that the
	// same add sent again (its answer lost) is kept once: an add whose id
	// is kept already with the same rule answers that rule. Empty: a fresh
	// id. A change (PUT) names its rule in the path, and may repeat it here.
	ID      string   `json:"id,omitempty"`
	Action  string   `json:"action"`
	Agent   string   `json:"agent,omitempty"`
	Machine string   `json:"machine,omitempty"`
	Tool    string   `json:"tool,omitempty"`
	Command string   `json:"command,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	For     string   `json:"for,omitempty"`
}

func (sp Spec) rule() rules.Rule {
	return rules.Rule{Action: sp.Action, Agent: sp.Agent, Machine: sp.Machine, Tool: sp.Tool, Command: sp.Command,
		Paths: sp.Paths, For: sp.For}
}

// Entry is a rule as listed (GET /api/rules): its number in the order, and
// where it comes from. Config rules have no id and cannot be changed here.
type Entry struct {
	N    int    `json:"n"`
	ID   string `json:"id,omitempty"`
	From string `json:"from"`
	Spec
	Text      string     `json:"text"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	CreatedBy string     `json:"created_by,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Expired   bool       `json:"expired,omitempty"`
}

// snapshot is the rules in their order, as Decide reads them.
type snapshot struct {
	rules  []rules.Rule
	stored []store.StoredRule // after the config's, in the same order
}

// Set is the machine's rules.
type Set struct {
	opt    Options
	log    *slog.Logger
	config []rules.Rule
	mu     sync.Mutex // one change at a time: store, then snapshot
	snap   atomic.Pointer[snapshot]
}

// Open reads the stored rules. A stored rule that no longer checks (kept by
// another version) is listed but never answers.
func Open(ctx context.Context, opt Options) (*Set, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Set{opt: opt, log: opt.Logger}
	now := opt.Now()
	s.config = append([]rules.Rule(nil), opt.Config...)
	for i := range s.config {
		if s.config[i].Since.IsZero() {
			s.config[i].Since = now // a config rule's `for` holds from the start
		}
	}
	stored, err := opt.Store.StoredRules(ctx)
	if err != nil {
		return nil, err
	}
	s.publish(stored)
	return s, nil
}

// publish makes stored (in order) the rules Decide reads.
func (s *Set) publish(stored []store.StoredRule) {
	sn := &snapshot{rules: append([]rules.Rule(nil), s.config...), stored: stored}
	for _, st := range stored {
		sn.rules = append(sn.rules, decode(st, s.log))
	}
	s.snap.Store(sn)
}

// decode reads a stored rule; one that cannot be read is an ask, which
// Decide passes over as answering nothing more than no rule.
func decode(st store.StoredRule, log *slog.Logger) rules.Rule {
	var r rules.Rule
	if err := json.Unmarshal(st.Rule, &r); err != nil {
		log.Warn("ruleset: a stored rule cannot be read; it answers nothing", "rule", st.ID, "err", err)
		return rules.Rule{Action: "unreadable"}
	}
	r.Since = st.Since
	return r
}

// Decide answers a call by the rules as they are now (the router's
// Options.Rules).
func (s *Set) Decide(c rules.Call) rules.Verdict {
	sn := s.snap.Load()
	if len(sn.rules) == 0 {
		return rules.Verdict{Action: rules.Ask, Reason: "no rules"}
	}
	return rules.Decide(sn.rules, c, s.opt.Now())
}

// List gives every rule in its order: the config's, then the stored ones.
func (s *Set) List() []Entry {
	sn := s.snap.Load()
	now := s.opt.Now()
	out := make([]Entry, 0, len(sn.rules))
	for i, r := range sn.rules {
		e := Entry{N: i + 1, From: FromConfig, Spec: Spec{Action: r.Action, Agent: r.Agent, Machine: r.Machine, Tool: r.Tool,
			Command: r.Command, Paths: r.Paths, For: r.For}, Text: r.String()}
		if j := i - len(s.config); j >= 0 {
			st := sn.stored[j]
			created := st.Created
			e.ID, e.From, e.CreatedAt, e.CreatedBy = st.ID, FromDashboard, &created, st.CreatedBy
		}
		if d, err := time.ParseDuration(r.For); err == nil && r.For != "" {
			end := r.Since.Add(d)
			e.ExpiresAt, e.Expired = &end, now.After(end)
		}
		out = append(out, e)
	}
	return out
}

// check refuses a rule that would not answer as written, in words the
// person can act on.
func check(sp Spec) error {
	if err := sp.rule().Check(); err != nil {
		return chat.BadInput("the rule is refused: %v", err)
	}
	const maxField = 1024
	for _, f := range append([]string{sp.Agent, sp.Machine, sp.Tool, sp.Command, sp.For}, sp.Paths...) {
		if len(f) > maxField {
			return chat.BadInput("the rule is refused: a field is longer than %d bytes", maxField)
		}
	}
	return nil
}

// Add keeps a new rule, last in the order, made by the named device. An
// add whose id (Spec.ID) is kept already answers that rule when it is the
// same add sent again, and is chat.ErrIDTaken when it is not.
func (s *Set) Add(ctx context.Context, sp Spec, by string) (Entry, error) {
	e, _, err := s.add(ctx, sp, by)
	return e, err
}

// add is Add also saying whether the rule was kept already (an earlier try
// of the same add made it; nothing changed, nothing recorded). The stored
// rule is the record: a retry after a restart finds it as well.
func (s *Set) add(ctx context.Context, sp Spec, by string) (e Entry, existed bool, err error) {
	if err := check(sp); err != nil {
		return Entry{}, false, err
	}
	if sp.ID != "" {
		if err := chat.CheckAddID("rule", sp.ID); err != nil {
			return Entry{}, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snap.Load()
	if i := find(sn.stored, sp.ID); sp.ID != "" && i >= 0 {
		if !bytes.Equal(sn.stored[i].Rule, encode(sp)) {
			return Entry{}, false, fmt.Errorf("rule %s is kept already, made by another add or changed since (its rule differs): choose a new id: %w",
				sp.ID, chat.ErrIDTaken)
		}
		e, err := s.entry(sp.ID)
		return e, err == nil, err
	}
	if len(sn.stored) >= MaxStored {
		return Entry{}, false, chat.BadInput("there are %d rules already: remove some first", MaxStored)
	}
	now := s.opt.Now().UTC()
	// created_at orders the rules: a new one is after every other even
	// when the clock stepped back.
	created := now
	if n := len(sn.stored); n > 0 && !created.After(sn.stored[n-1].Created) {
		created = sn.stored[n-1].Created.Add(time.Nanosecond)
	}
	id := sp.ID
	if id == "" {
		id = chat.NewID("r")
	}
	st := store.StoredRule{ID: id, Rule: encode(sp), Created: created, CreatedBy: by, Since: now}
	if err := s.opt.Store.PutRule(ctx, st); err != nil {
		return Entry{}, false, err
	}
	s.publish(append(append([]store.StoredRule(nil), sn.stored...), st))
	s.record(ctx, st.ID, "made", &sp)
	e, err = s.entry(st.ID)
	return e, false, err
}

// Update changes a stored rule in place; its `for` counts again from now.
func (s *Set) Update(ctx context.Context, id string, sp Spec) (Entry, error) {
	if err := check(sp); err != nil {
		return Entry{}, err
	}
	if sp.ID != "" && sp.ID != id {
		return Entry{}, chat.BadInput("the change names rule %q in its path and %q in its body: an id is not changed", id, sp.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snap.Load()
	stored := append([]store.StoredRule(nil), sn.stored...)
	i := find(stored, id)
	if i < 0 {
		return Entry{}, notFound(id)
	}
	stored[i].Rule, stored[i].Since = encode(sp), s.opt.Now().UTC()
	if err := s.opt.Store.PutRule(ctx, stored[i]); err != nil {
		return Entry{}, err
	}
	s.publish(stored)
	s.record(ctx, id, "changed", &sp)
	return s.entry(id)
}

// Remove deletes a stored rule; the ones after it move up a number.
func (s *Set) Remove(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snap.Load()
	i := find(sn.stored, id)
	if i < 0 {
		return notFound(id)
	}
	if err := s.opt.Store.DeleteRule(ctx, id); err != nil {
		return err
	}
	stored := append(append([]store.StoredRule(nil), sn.stored[:i]...), sn.stored[i+1:]...)
	s.publish(stored)
	s.record(ctx, id, "removed", nil)
	return nil
}

// Probe is a call to test (POST /api/rules/test): which rule would answer it.
type Probe struct {
	Agent   string   `json:"agent,omitempty"`
	Machine string   `json:"machine,omitempty"`
	Tool    string   `json:"tool"`
	Command string   `json:"command,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	Cwd     string   `json:"cwd,omitempty"` // the thread's directory; default the agent's first root
}

// Answer is a probe's verdict: Rule 0 when no rule answers (Action ask).
type Answer struct {
	Action string `json:"action"`
	Rule   int    `json:"rule,omitempty"`
	Text   string `json:"text,omitempty"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Test says which rule would answer a call, as a card opening now would be.
func (s *Set) Test(p Probe) (Answer, error) {
	if p.Tool == "" {
		return Answer{}, chat.BadInput("name the tool: Bash, Edit, an ACP kind such as execute, an MCP tool")
	}
	c := rules.Call{Agent: p.Agent, Machine: p.Machine, Tool: p.Tool, Command: p.Command, Paths: p.Paths, Dir: p.Cwd}
	if c.Machine == "" {
		c.Machine = s.opt.Node
	}
	if s.opt.Roots != nil {
		c.Roots = s.opt.Roots(p.Agent)
	}
	if c.Dir == "" && len(c.Roots) > 0 {
		c.Dir = c.Roots[0]
	}
	if c.Dir == "" {
		return Answer{}, chat.BadInput("name the thread's directory (cwd)")
	}
	c.Home, _ = os.UserHomeDir()
	v := s.Decide(c)
	a := Answer{Action: v.Action, Rule: v.Rule, Reason: v.Reason}
	if v.Rule > 0 {
		a.Text, a.By = v.Text, v.By()
	}
	return a, nil
}

func (s *Set) entry(id string) (Entry, error) {
	for _, e := range s.List() {
		if e.ID == id {
			return e, nil
		}
	}
	return Entry{}, notFound(id)
}

func find(stored []store.StoredRule, id string) int {
	for i, st := range stored {
		if st.ID == id {
			return i
		}
	}
	return -1
}

func notFound(id string) error {
	return fmt.Errorf("rule %q (config rules are changed in the config file): %w", id, chat.ErrNotFound)
}

func encode(sp Spec) []byte {
	b, _ := json.Marshal(sp.rule()) // a Rule always marshals
	return b
}
