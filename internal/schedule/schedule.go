// Package schedule runs schedules: a text sent to an agent at times of its
// own (a cron expression, every so long, or once at a time), stored in the
// machine's SQLite. One goroutine (the Runner's) owns every schedule; a run
// is a message through the router's one send path whose id names the
// schedule and the due time, so it reaches the agent once even when parley
// dies at the due moment (the router knows the id again after a restart).
package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Limits.
const (
	MaxText      = 16 << 10      // a run's text, in bytes
	MaxName      = 80            // a schedule's name, in characters
	MaxSchedules = 500           // schedules on one machine
	MaxID        = chat.MaxAddID // an id a caller chooses, in bytes
)

// An add's errors and their codes, shared with the other adds a caller
// names (internal/chat), by the names this package has given them.
var (
	ErrIDTaken    = chat.ErrIDTaken    // the add's id names a schedule another add made
	ErrUnanswered = chat.ErrUnanswered // asked of a machine whose answer did not come
)

const (
	CodeIDTaken    = chat.CodeIDTaken
	CodeUnanswered = chat.CodeUnanswered
)

// Store keeps schedules (store/sqlite).
type Store interface {
	Schedules(ctx context.Context) ([]store.Schedule, error)
	PutSchedule(ctx context.Context, s store.Schedule) error
	DeleteSchedule(ctx context.Context, id string) error
}

// Spec is a schedule as asked for (POST /api/schedules).
type Spec struct {
	// ID, when given, is the schedule's id, chosen by the caller so that
	// the same add sent again (its answer lost) is kept once: an add whose
	// id is kept already with the same spec answers that schedule. Empty:
	// a fresh id.
	ID      string        `json:"id,omitempty"`
	Name    string        `json:"name,omitempty"`
	Agent   string        `json:"agent"`
	Cwd     string        `json:"cwd"`
	Thread  chat.ThreadID `json:"thread,omitempty"`
	NewEach bool          `json:"new,omitempty"`
	Cron    string        `json:"cron,omitempty"`
	Every   string        `json:"every,omitempty"`
	At      string        `json:"at,omitempty"`
	TZ      string        `json:"tz,omitempty"`
	Missed  string        `json:"missed,omitempty"`
	Text    string        `json:"text"`
	// Machine is, at a cluster's hub, the machine that keeps and runs it
	// ("" or the hub's own name: the hub).
	Machine string `json:"machine,omitempty"`
}

// Schedule is a schedule as listed (GET /api/schedules).
type Schedule struct {
	ID      string        `json:"id"`
	Name    string        `json:"name,omitempty"`
	Agent   string        `json:"agent"`
	Cwd     string        `json:"cwd"`
	Thread  chat.ThreadID `json:"thread,omitempty"`
	NewEach bool          `json:"new,omitempty"`
	Kind    string        `json:"kind"`
	Expr    string        `json:"expr"`
	TZ      string        `json:"tz"`
	Missed  string        `json:"missed"`
	Text    string        `json:"text"`
	Paused  bool          `json:"paused"`
	NextRun *time.Time    `json:"next_run,omitempty"` // none: paused, or an --at that ran
	LastRun *time.Time    `json:"last_run,omitempty"`
	// LastThread is the thread the last run went to.
	LastThread chat.ThreadID `json:"last_thread,omitempty"`
	LastError  string        `json:"last_error,omitempty"`
	Created    time.Time     `json:"created_at"`
	// Node is the machine that keeps and runs it, in a cluster.
	Node string `json:"node,omitempty"`
}

func view(s store.Schedule) Schedule {
	v := Schedule{ID: s.ID, Name: s.Name, Agent: s.Agent, Cwd: s.Cwd, Thread: s.Thread, NewEach: s.NewEach,
		Kind: s.Kind, Expr: s.Expr, TZ: s.TZ, Missed: s.Missed, Text: s.Text, Paused: s.Paused,
		LastThread: s.LastThread, LastError: s.LastError, Created: s.Created}
	if !s.NextRun.IsZero() && !s.Paused {
		t := s.NextRun
		v.NextRun = &t
	}
	if !s.LastRun.IsZero() {
		t := s.LastRun
		v.LastRun = &t
	}
	return v
}

// normal is a spec as it is kept: its timing's kind and expression, its
// time zone and missed-runs policy with their defaults. It checks the
// fields that need no clock (the timing is parsed by schedule).
func (sp Spec) normal() (store.Schedule, error) {
	t := Target{Agent: sp.Agent, Cwd: sp.Cwd, Thread: sp.Thread, NewEach: sp.NewEach}
	if err := t.Check(); err != nil {
		return store.Schedule{}, err
	}
	if err := checkText(sp.Text); err != nil {
		return store.Schedule{}, err
	}
	if err := checkName(sp.Name); err != nil {
		return store.Schedule{}, err
	}
	kind, expr, n := "", "", 0
	for _, k := range []struct{ kind, expr string }{{KindCron, sp.Cron}, {KindEvery, sp.Every}, {KindAt, sp.At}} {
		if k.expr != "" {
			kind, expr, n = k.kind, strings.TrimSpace(k.expr), n+1
		}
	}
	if n != 1 {
		return store.Schedule{}, chat.BadInput("say when with exactly one of \"cron\", \"every\" and \"at\"")
	}
	missed := sp.Missed
	switch missed {
	case "":
		missed = MissedRunOnce
	case MissedRunOnce, MissedSkip:
	default:
		return store.Schedule{}, chat.BadInput("\"missed\" is %q: run-once or skip", missed)
	}
	tz := sp.TZ
	if tz == "" {
		tz = "Local"
	}
	return store.Schedule{
		ID: sp.ID, Name: strings.TrimSpace(sp.Name), Agent: sp.Agent, Cwd: sp.Cwd, Thread: sp.Thread,
		NewEach: sp.NewEach, Kind: kind, Expr: expr, TZ: tz, Missed: missed, Text: sp.Text,
	}, nil
}

// schedule validates a spec and makes it a schedule made now: its first
// run is the first due time after now; its id the spec's, or a fresh one.
func (sp Spec) schedule(now time.Time) (store.Schedule, timing, error) {
	s, err := sp.normal()
	if err != nil {
		return store.Schedule{}, nil, err
	}
	tm, err := parseTiming(s.Kind, s.Expr, s.TZ, now)
	if err != nil {
		return store.Schedule{}, nil, chat.BadInput("%v", err)
	}
	next := tm.next(now)
	if next.IsZero() {
		return store.Schedule{}, nil, chat.BadInput("%s %q is never due after now (%s)", s.Kind, s.Expr, now.Format(time.RFC3339))
	}
	if s.ID == "" {
		s.ID = chat.NewID("sch")
	}
	s.NextRun, s.Created = next, now
	return s, tm, nil
}

// sameAdd tells whether the schedule kept as k is what sp asks for: the
// add that made it, sent again. What happened to it since (runs, a pause)
// does not count.
func (sp Spec) sameAdd(k store.Schedule) bool {
	s, err := sp.normal()
	return err == nil && s.Name == k.Name && s.Agent == k.Agent && s.Cwd == k.Cwd && s.Thread == k.Thread &&
		s.NewEach == k.NewEach && s.Kind == k.Kind && s.Expr == k.Expr && s.TZ == k.TZ && s.Missed == k.Missed && s.Text == k.Text
}

func checkText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return chat.BadInput("the text is empty: say what the agent is to do")
	case len(text) > MaxText:
		return chat.BadInput("the text is %d bytes: at most %d", len(text), MaxText)
	case !utf8.ValidString(text):
		return chat.BadInput("the text is not UTF-8")
	}
	return nil
}

// CheckName refuses a name longer than MaxName or holding control characters.
func checkName(name string) error {
	if utf8.RuneCountInString(name) > MaxName {
		return chat.BadInput("the name is longer than %d characters", MaxName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return chat.BadInput("the name must be one line, without control characters")
		}
	}
	return nil
}

// CheckName is checkName for internal/trigger.
func CheckName(name string) error { return checkName(name) }

// runID names the run of a schedule due at due: the same after a restart.
func runID(id string, due time.Time) string {
	return fmt.Sprintf("%s@%d", id, due.Unix())
}

// Route is the route a schedule's runs come from.
func Route(id string) chat.RouteKey { return chat.RouteKey{Channel: chat.OriginSchedule, Chat: id} }
