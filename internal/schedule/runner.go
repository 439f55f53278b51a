package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Grace is how late a run may start and still be the run due, not a run
// missed while parley was down.
const Grace = time.Minute

// retryAfter is how long a run the router could not take for now (a busy
// thread, a full disk) waits before it is tried again.
const retryAfter = 30 * time.Second

// sendTimeout bounds one run's send.
const sendTimeout = 30 * time.Second

// Clock is where the Runner reads the time and waits: the real one in
// parley serve; tests run the real one in testing/synctest's fake time.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) *time.Timer
}

type realClock struct{}

func (realClock) Now() time.Time                       { return time.Now() }
func (realClock) NewTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }

// Options configure a Runner.
type Options struct {
	Store  Store
	Send   Sender
	Clock  Clock // nil: the real one
	Logger *slog.Logger
	// Check, when set, refuses a schedule whose agent or directory this
	// machine would refuse (the router's agents and roots), when it is added.
	Check func(agent, cwd string) error
	// Ran, when set, hears of each run once it is recorded (tests,
	// benchmarks): the schedule, the due time it ran for, and how long after
	// it the router had the run (stored, queued for its agent).
	Ran func(id string, due time.Time, late time.Duration)
	// Machine is this machine's name in its cluster ("" outside one);
	// Remote, set at a cluster's hub, reaches the nodes' schedules
	// (machines.go).
	Machine string
	Remote  Remote
	// Audit records schedules added, paused, resumed and removed
	// (audit.go); nil records nothing.
	Audit audit.Log
}

// Runner owns every schedule of this machine: one goroutine adds, pauses,
// resumes and deletes them, and runs each when it is due.
type Runner struct {
	opt  Options
	log  *slog.Logger
	cmds chan func()
	done chan struct{}
	stop context.CancelFunc

	// owned by the runner goroutine
	scheds map[string]*entry
}

type entry struct {
	s  store.Schedule
	tm timing
	// retry, when set, is when a run the router could not take is tried
	// again (it stays the run due: never judged missed).
	retry time.Time
}

// wake is when the entry wants the runner: zero for never.
func (e *entry) wake() time.Time {
	if e.s.Paused || e.s.NextRun.IsZero() {
		return time.Time{}
	}
	if !e.retry.IsZero() {
		return e.retry
	}
	return e.s.NextRun
}

// Start loads the schedules and starts the runner goroutine. A schedule
// whose stored timing no longer parses (a time zone gone from the system)
// is kept, with the reason, and does not run.
func Start(ctx context.Context, opt Options) (*Runner, error) {
	if opt.Clock == nil {
		opt.Clock = realClock{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	all, err := opt.Store.Schedules(ctx)
	if err != nil {
		return nil, fmt.Errorf("schedule: load: %w", err)
	}
	r := &Runner{opt: opt, log: opt.Logger, cmds: make(chan func()), done: make(chan struct{}), scheds: map[string]*entry{}}
	for _, s := range all {
		e := &entry{s: s}
		if e.tm, err = parseTiming(s.Kind, s.Expr, s.TZ, s.Created); err != nil {
			r.log.Warn("schedule: cannot run", "schedule", s.ID, "err", err)
			e.s.LastError = err.Error()
			e.s.NextRun = time.Time{}
		}
		r.scheds[s.ID] = e
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go r.loop(rctx)
	return r, nil
}

// Close stops the runner and waits for it: a run being sent ends first.
func (r *Runner) Close() {
	r.stop()
	<-r.done
}

func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	timer := r.opt.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Stop()
		var wake <-chan time.Time
		if at := r.earliest(); !at.IsZero() {
			timer.Reset(max(at.Sub(r.opt.Clock.Now()), 0))
			wake = timer.C
		}
		select {
		case f := <-r.cmds:
			f()
		case <-wake:
			r.runDue(ctx)
		case <-ctx.Done():
			return
		}
	}
}

func (r *Runner) earliest() time.Time {
	var at time.Time
	for _, e := range r.scheds {
		if w := e.wake(); !w.IsZero() && (at.IsZero() || w.Before(at)) {
			at = w
		}
	}
	return at
}

// call runs f on the runner goroutine and waits for it.
func (r *Runner) call(ctx context.Context, f func() error) error {
	errc := make(chan error, 1)
	select {
	case r.cmds <- func() { errc <- f() }:
	case <-r.done:
		return chat.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-errc
}

// runDue runs every schedule due now, the longest due first.
func (r *Runner) runDue(ctx context.Context) {
	now := r.opt.Clock.Now()
	var due []*entry
	for _, e := range r.scheds {
		if w := e.wake(); !w.IsZero() && !w.After(now) {
			due = append(due, e)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].s.NextRun.Equal(due[j].s.NextRun) {
			return due[i].s.NextRun.Before(due[j].s.NextRun)
		}
		return due[i].s.ID < due[j].s.ID
	})
	for _, e := range due {
		if ctx.Err() != nil {
			return
		}
		r.fire(ctx, e, now)
	}
}

// fire runs one due schedule, or skips what downtime made it miss. The
// schedule's row changes only once the router has the run: a crash between
// the two runs it again at the restart with the same message id, which the
// router takes once.
func (r *Runner) fire(ctx context.Context, e *entry, now time.Time) {
	due := e.s.NextRun
	retrying := !e.retry.IsZero()
	e.retry = time.Time{}
	// The last due time not after now: more than one, or one long past,
	// means parley was down.
	latest, missed := due, 0
	for n := e.tm.next(latest); !n.IsZero() && !n.After(now); n = e.tm.next(latest) {
		latest, missed = n, missed+1
	}
	late := !retrying && (missed > 0 || now.Sub(due) > Grace)
	if late && e.s.Missed == MissedSkip {
		r.log.Info("schedule: skipped runs missed while parley was down", "schedule", e.s.ID, "missed", missed+1, "since", due)
		e.s.NextRun = e.tm.next(now)
		r.save(ctx, e)
		return
	}
	runAt := due
	if late {
		runAt = latest // one run for all that were missed
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	th, err := Run(sctx, r.opt.Send, Target{Agent: e.s.Agent, Cwd: e.s.Cwd, Thread: e.s.Thread, NewEach: e.s.NewEach},
		Route(e.s.ID), runID(e.s.ID, runAt), e.s.Text,
		chat.Origin{Kind: chat.OriginSchedule, ID: e.s.ID, Name: e.s.Name}, e.s.LastThread)
	cancel()
	took := r.opt.Clock.Now()
	switch {
	case errors.Is(err, chat.ErrClosed) || ctx.Err() != nil:
		return // shutting down: the next start runs it
	case err != nil && !refused(err):
		// For now: the same run, a little later.
		r.log.Warn("schedule: run not taken yet; trying again", "schedule", e.s.ID, "err", err)
		e.retry = r.opt.Clock.Now().Add(retryAfter)
		e.s.LastError = err.Error()
		r.save(ctx, e)
		return
	case err != nil:
		// For good: this run fails, with the reason, and the next is due.
		r.log.Warn("schedule: run refused", "schedule", e.s.ID, "err", err)
		e.s.LastError = err.Error()
	default:
		e.s.LastError = ""
		e.s.LastThread = th
	}
	e.s.LastRun = runAt
	e.s.NextRun = e.tm.next(runAt)
	r.save(ctx, e)
	if r.opt.Ran != nil && err == nil {
		r.opt.Ran(e.s.ID, runAt, took.Sub(runAt))
	}
}

// refused tells an error that refuses the run for good (its agent, its
// directory, its thread or its text) from one that passes (a busy thread, a
// full disk, a slow start).
func refused(err error) bool {
	for _, e := range []error{chat.ErrBadInput, chat.ErrNotFound, chat.ErrUnknownAgent, chat.ErrOutsideRoot, chat.ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// save keeps a schedule's row; one that cannot be kept is tried again at
// its next change (the run itself is the router's, kept already).
func (r *Runner) save(ctx context.Context, e *entry) {
	if err := r.opt.Store.PutSchedule(ctx, e.s); err != nil {
		r.log.Error("schedule: keep", "schedule", e.s.ID, "err", err)
	}
}

// Add keeps a new schedule and answers it as listed. An add whose id
// (Spec.ID) is kept already answers that schedule when it is the same add
// sent again, and is ErrIDTaken when it is not.
func (r *Runner) Add(ctx context.Context, sp Spec) (Schedule, error) {
	s, _, err := r.add(ctx, sp)
	return s, err
}

// add is Add also saying whether the schedule was kept already (an earlier
// try of the same add made it). The stored schedule is the record: a retry
// after a restart finds it as well.
func (r *Runner) add(ctx context.Context, sp Spec) (out Schedule, existed bool, err error) {
	err = r.call(ctx, func() error {
		if sp.ID != "" {
			if err := chat.CheckAddID("schedule", sp.ID); err != nil {
				return err
			}
			if e, ok := r.scheds[sp.ID]; ok {
				if !sp.sameAdd(e.s) {
					return fmt.Errorf("schedule %s is kept already, made by another add (its agent, timing or text differ): choose a new id: %w",
						sp.ID, ErrIDTaken)
				}
				out, existed = view(e.s), true
				return nil
			}
		}
		if len(r.scheds) >= MaxSchedules {
			return chat.BadInput("this machine has %d schedules, the most it keeps: remove one first", len(r.scheds))
		}
		s, tm, err := sp.schedule(r.opt.Clock.Now())
		if err != nil {
			return err
		}
		if r.opt.Check != nil {
			if err := r.opt.Check(s.Agent, s.Cwd); err != nil {
				return err
			}
		}
		if err := r.opt.Store.PutSchedule(ctx, s); err != nil {
			return err
		}
		r.scheds[s.ID] = &entry{s: s, tm: tm}
		out = view(s)
		return nil
	})
	return out, existed, err
}

// List answers every schedule, oldest first.
func (r *Runner) List(ctx context.Context) ([]Schedule, error) {
	out := []Schedule{}
	err := r.call(ctx, func() error {
		for _, e := range r.scheds {
			out = append(out, view(e.s))
		}
		return nil
	})
	sortSchedules(out)
	return out, err
}

// sortSchedules puts the oldest first.
func sortSchedules(out []Schedule) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
}

// SetPaused pauses or resumes a schedule. A resumed schedule's next run is
// the next one due from now: what came due while it was paused is not run.
func (r *Runner) SetPaused(ctx context.Context, id string, paused bool) (Schedule, error) {
	var out Schedule
	err := r.call(ctx, func() error {
		e, ok := r.scheds[id]
		if !ok {
			return fmt.Errorf("schedule %s: %w", id, chat.ErrNotFound)
		}
		if e.s.Paused == paused {
			out = view(e.s)
			return nil
		}
		prev := e.s
		e.s.Paused, e.retry = paused, time.Time{}
		if !paused && e.tm != nil {
			if now := r.opt.Clock.Now(); !e.s.NextRun.IsZero() && e.s.NextRun.Before(now) {
				e.s.NextRun = e.tm.next(now)
			}
		}
		if err := r.opt.Store.PutSchedule(ctx, e.s); err != nil {
			e.s = prev
			return err
		}
		out = view(e.s)
		return nil
	})
	return out, err
}

// Remove deletes a schedule; a run already sent stays in its thread.
func (r *Runner) Remove(ctx context.Context, id string) error {
	return r.call(ctx, func() error {
		if _, ok := r.scheds[id]; !ok {
			return fmt.Errorf("schedule %s: %w", id, chat.ErrNotFound)
		}
		if err := r.opt.Store.DeleteSchedule(ctx, id); err != nil {
			return err
		}
		delete(r.scheds, id)
		return nil
	})
}
