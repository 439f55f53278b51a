package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/marks"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/uploads"
)

// lane owns one thread: its row, its queue of inputs, its cards, its session and
// its log. Everything runs on the lane goroutine unless it says otherwise.
// Driver calls that might block run on goroutines of the lane's own (spawn)
// and report back through l.results, so a slow agent never holds the lane.
//
// The lane's code, by concept: this file (the loop, the log's commit, taking a
// message), turn.go (a turn's phases beside the moves between them, stop),
// lifecycle.go (the session's phases beside the moves between them: start,
// idle unload, close; recovery and shutdown), clock.go, cards.go (cards and
// the controls that answer them), sink.go (what the agent reports).
type lane struct {
	r   *Router // the router's options, context, slots and WaitGroup
	th  chat.Thread
	ag  config.Agent
	log *slog.Logger

	// What the lane writes to, reads from and keeps time by, given to it
	// explicitly.
	store  store.Store
	fanout *fanout.Fanout
	clock  clock

	inbox   chan laneAccept // messages (bounded: full → busy)
	ctrl    chan func()     // controls: never behind a message
	updates chan update     // from the session's sink
	results chan func()     // completions of driver calls

	queue []*pendingInput
	// The session's phase (lifecycle.go) and, while live, the session; a
	// start's result for an older generation, or after closing, is closed.
	life  sessionPhase
	sess  driver.Session
	gen   int                   // session generation; updates of older sessions are ignored
	turn  *turn                 // the turn in flight (turn.go), or nil
	cards map[string]*chat.Card // open cards by request id
	// asks are the open cards of the agent's ask_person calls (person.go):
	// closing one hands its resolution to the call waiting for it.
	asks map[string]chan<- chat.QuestionResolved
	// revokeTools drops the live session's credential for parley's MCP
	// server (Options.Tools), nil when it has none.
	revokeTools func()
	// term is the person's process the thread follows instead of starting
	// its own (terminal.go), or nil.
	term *terminal
	idle *time.Timer
	// closed is done once the sessions let go of so far have finished
	// closing. A start waits for it: an agent's new process must not meet
	// its old one, which holds the same names (a tmux session, a state
	// folder) until its Close returns.
	closed chan struct{}
	// settled is done once the settings told to the session so far (mode,
	// config option) have returned: the next one waits for it (tellInOrder).
	settled chan struct{}

	batch store.Batch // changes not yet committed
	// A step whose commit failed for now (store.ErrUnavailable: a full
	// disk, say) stays in the batch, ahead of what follows, and is tried
	// again when retry fires (retryAfter, doubling), or with a message or
	// an edit: the agent's words are stored and shown late, never dropped.
	// A step refused whole (a person's message, an edit) takes its own part
	// back (mark, rollback).
	retry      *time.Timer
	retryAfter time.Duration // 0: no step kept
	retryDue   bool          // the retry timer fired
	// draft is the newest provisional text of the turn not yet published
	// (published after the batch, never stored); an event of the log that
	// supersedes it drops it (emit).
	draft *chat.AgentDraft
	// sentDraft is the draft published last, while no event ended it: the
	// next may only add to it (publishDraft).
	sentDraft chat.AgentDraft

	// carryCheck: the next prompt looks in the log for a move whose context
	// it must carry to the new agent (manage.go). Set for a thread without
	// a session (moved, maybe, before a restart) and by a move; kept while
	// the prompts it looked for carry the context (one may fail to reach the
	// agent).
	carryCheck bool

	// checking counts messages a crash left "delivering" whose driver has
	// not yet said whether they reached the agent (checkCutOff): the queue
	// behind them waits.
	checking int

	// handBackDue is a hand back to a terminal asked for, done once no turn
	// runs or waits (handback.go); nil when none is.
	handBackDue *handBackDue

	retiring bool          // its thread is being deleted: the lane ends after this step
	gone     chan struct{} // closed when run has returned
}

type pendingInput struct {
	in     chat.Input
	images []Image
	files  []uploads.File // saved when accepted (not again on a retry)
	notify func(chat.Delivery)
	retry  bool   // a failed message sent again: its user_message is already in the log
	failed string // recorded as failed with this reason, never queued (SendRequest.Failed)
	origin *chat.Origin
}

type laneAccept struct {
	p    *pendingInput
	done func(chat.Delivery, error)
}

func (r *Router) newLane(th chat.Thread) *lane {
	ag, _ := r.agent(th.Agent)
	return &lane{
		r: r, th: th, ag: ag,
		store: r.store, fanout: r.fanout, clock: clock{now: r.opt.Now},
		log:     r.log.With("thread", th.ID, "agent", th.Agent),
		inbox:   make(chan laneAccept, r.opt.QueueDepth),
		ctrl:    make(chan func(), 64),
		updates: make(chan update, 1024),
		results: make(chan func(), 16),
		cards:   map[string]*chat.Card{},
		asks:    map[string]chan<- chat.QuestionResolved{},
		gone:    make(chan struct{}),

		carryCheck: th.SessionID == "",
	}
}

// spawn runs f on a goroutine the router owns: Close waits for it. It is called
// on the lane goroutine, itself counted in r.wg, so the count is above zero.
func (l *lane) spawn(f func()) {
	l.r.wg.Add(1)
	go func() {
		defer l.r.wg.Done()
		f()
	}()
}

// accept hands a message to the lane without blocking the router goroutine.
func (l *lane) accept(p *pendingInput, done func(chat.Delivery, error)) {
	select {
	case l.inbox <- laneAccept{p: p, done: done}:
	default:
		done(chat.Delivery{}, chat.ErrBusy)
	}
}

// control runs a control on the lane and waits for its verdict.
func (l *lane) control(ctx context.Context, c Control) error {
	return l.onLane(ctx, func(reply func(error)) { l.doControl(c, reply) })
}

// onLane runs f on the lane goroutine, between two steps as a control
// does, and waits for the verdict f replies (once, at once or later).
func (l *lane) onLane(ctx context.Context, f func(reply func(error))) error {
	errc := make(chan error, 1)
	g := func() { f(func(err error) { errc <- err }) }
	select {
	case l.ctrl <- g:
	case <-ctx.Done():
		return ctx.Err()
	case <-l.r.ctx.Done():
		return chat.ErrClosed
	case <-l.gone:
		return fmt.Errorf("thread %s: %w: it was deleted", l.th.ID, chat.ErrNotFound)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-l.r.ctx.Done():
		return chat.ErrClosed
	case <-l.gone:
		return fmt.Errorf("thread %s: %w: it was deleted", l.th.ID, chat.ErrNotFound)
	}
}

func (l *lane) run() {
	defer close(l.gone)
	l.idle = l.clock.NewTimer()
	defer l.idle.Stop()
	l.retry = l.clock.NewTimer()
	defer l.retry.Stop()
	l.next()
	l.flush()
	for {
		select {
		case a := <-l.inbox:
			l.onAccept(a)
		case f := <-l.ctrl:
			f()
		case u := <-l.updates:
			l.onUpdate(u)
			// Batch whatever else the agent already said into the same commit.
			for i := 0; i < 255; i++ {
				select {
				case u := <-l.updates:
					l.onUpdate(u)
					continue
				default:
				}
				break
			}
		case f := <-l.results:
			f()
		case <-l.idle.C:
			l.onIdle()
		case <-l.retry.C:
			l.retryDue = true
		case <-l.r.ctx.Done():
			l.shutdown("parley is shutting down; this turn was cut off", "parley shut down before the message reached the agent", false)
			return
		}
		// While a kept step waits for its retry, the steps after it join
		// it unstored: trying the growing batch at every step would cost
		// its whole size each time. (A message or an edit tries at once:
		// it is refused whole when the store still cannot write.)
		if l.retryAfter == 0 || l.retryDue {
			l.retryDue = false
			l.flush()
		}
		if l.retiring {
			l.end()
			return
		}
	}
}

// emit appends an event to the log (committed at the end of the lane step).
func (l *lane) emit(p chat.Payload) {
	ev, err := chat.NewEvent(l.th.ID, p, l.clock.Now())
	if err != nil {
		l.log.Error("encode event", "type", p.EventType(), "err", err)
		return
	}
	l.th.LastSeq++
	ev.Seq = l.th.LastSeq
	l.batch.Events = append(l.batch.Events, ev)
	if chat.EndsDraft(p.EventType()) {
		l.draft, l.sentDraft = nil, chat.AgentDraft{}
	}
}

func (l *lane) saveInput(p *pendingInput) { l.batch.Inputs = append(l.batch.Inputs, p.in) }

func (l *lane) saveCard(c *chat.Card) { l.batch.Cards = append(l.batch.Cards, *c) }

// flush commits the step's changes in one transaction, then fans the events out.
// Nothing is shown that is not stored.
func (l *lane) flush() error {
	if err := l.commit(); err != nil {
		l.draft = nil // it would follow events nobody was shown
		return err
	}
	if d := l.draft; d != nil {
		l.draft = nil
		d.AfterSeq = l.th.LastSeq
		l.publishDraft(*d)
	}
	return nil
}

// publishDraft sends provisional text to every view of the thread: whole,
// and, when it only adds to the draft sent before it (nothing ended that one
// since), also as what it adds, which a view given that one gets instead (a
// long answer is not sent whole again at every change).
func (l *lane) publishDraft(d chat.AgentDraft) {
	d.ID = l.r.draftIDs.Add(1)
	whole, err := chat.NewEvent(l.th.ID, d, l.clock.Now())
	if err != nil {
		return
	}
	pub := fanout.Draft{ID: d.ID, After: d.AfterSeq, Whole: whole}
	if prev := l.sentDraft; prev.ID != 0 && len(d.Text) > len(prev.Text) && strings.HasPrefix(d.Text, prev.Text) {
		app := chat.AgentDraft{Text: d.Text[len(prev.Text):], AfterSeq: d.AfterSeq, ID: d.ID, Extends: prev.ID}
		if ev, err := chat.NewEvent(l.th.ID, app, l.clock.Now()); err == nil {
			pub.Append, pub.Extends = &ev, prev.ID
		}
	}
	l.sentDraft = d
	l.fanout.PublishDraft(pub)
}

// commit commits the step's batch and fans its events out.
func (l *lane) commit() error {
	if l.batch.Empty() {
		l.settle()
		return nil
	}
	l.th.UpdatedAt = l.clock.Now()
	th := l.th
	l.batch.Thread = &th
	b := l.batch
	l.batch = store.Batch{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t := marks.Start()
	err := l.store.Commit(ctx, b)
	if !t.IsZero() {
		marks.End("commit", marks.Types(b.Events), t)
	}
	if err != nil {
		if !errors.Is(err, store.ErrUnavailable) {
			// It would fail the same way again: dropped, so the thread
			// goes on (the error is parley's, and logged).
			l.log.Error("commit", "err", err, "events", len(b.Events), "dropped", true)
			l.th.LastSeq -= int64(len(b.Events))
			l.settle()
			return err
		}
		b.Thread = nil
		l.batch = b
		l.retryAfter = min(max(2*l.retryAfter, commitRetryFirst), commitRetryMax)
		l.log.Error("commit", "err", err, "events", len(b.Events), "kept_for", l.retryAfter)
		if l.retry != nil {
			l.retry.Reset(l.retryAfter)
		}
		return err
	}
	if l.retryAfter != 0 {
		l.log.Info("commit succeeded again", "events", len(b.Events))
	}
	l.settle()
	t = marks.Start()
	l.fanout.PublishStep(b.Events)
	if !t.IsZero() {
		marks.End("fanout", marks.Types(b.Events), t)
	}
	l.r.opt.Metrics.Events.Add(float64(len(b.Events)))
	return nil
}

// commitRetryFirst and commitRetryMax bound the wait before a failed
// commit is tried again.
const (
	commitRetryFirst = time.Second
	commitRetryMax   = 30 * time.Second
)

// batchMark is where a step's own changes start, for a step refused whole
// when its commit fails: rollback takes them back (and the thread's fields
// as they were), leaving a failed step's kept changes before them.
type batchMark struct {
	th                    chat.Thread
	events, cards, inputs int
}

func (l *lane) mark() batchMark {
	return batchMark{th: l.th, events: len(l.batch.Events), cards: len(l.batch.Cards), inputs: len(l.batch.Inputs)}
}

func (l *lane) rollback(m batchMark) {
	// A batch dropped whole (an error that would come again) keeps nothing.
	events := min(m.events, len(l.batch.Events))
	seq := l.th.LastSeq - int64(len(l.batch.Events)-events)
	l.th = m.th
	l.th.LastSeq = seq
	l.batch.Events = l.batch.Events[:events]
	l.batch.Cards = l.batch.Cards[:min(m.cards, len(l.batch.Cards))]
	l.batch.Inputs = l.batch.Inputs[:min(m.inputs, len(l.batch.Inputs))]
}

// settle ends the wait for a kept step's retry: nothing is kept.
func (l *lane) settle() {
	if l.retryAfter != 0 {
		l.retryAfter, l.retryDue = 0, false
		if l.retry != nil {
			l.retry.Stop()
		}
	}
}

func (l *lane) onAccept(a laneAccept) {
	p := a.p
	marks.End("lane accept", p.in.MessageID, marks.Start())
	same := func(q *pendingInput) bool { return q.in.From == p.in.From && q.in.MessageID == p.in.MessageID }
	if slices.ContainsFunc(l.queue, same) || (l.turn != nil && same(l.turn.p)) {
		a.done(chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryQueued}, chat.ErrDuplicate)
		return
	}
	if p.failed != "" {
		l.recordFailed(a)
		return
	}

	if len(l.queue) >= l.r.opt.QueueDepth {
		a.done(chat.Delivery{}, chat.ErrBusy)
		return
	}
	m := l.mark()
	refs, err := l.saveFiles(p)
	if err != nil {
		a.done(chat.Delivery{}, err)
		return
	}
	p.in.Detail = l.waitsFor()
	l.saveInput(p)
	if !p.retry {
		l.emit(chat.UserMessage{MessageID: p.in.MessageID, Text: p.in.Text, From: p.in.From, Files: refs, Origin: p.origin})
	}
	if l.th.Title == "" {
		l.th.Title = titleOf(p.in.Text)
	}
	l.unarchive()
	d := chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryQueued, Detail: p.in.Detail}
	l.emit(d)
	// A message that goes at once has its turn's start and its delivering
	// receipt stored in the same commit as itself: one commit before the
	// agent is told instead of two (docs/benchmarks.md, the first words).
	// Refused, it leaves no turn behind: the turn begins after the commit.
	atOnce := l.goesAtOnce()
	if atOnce {
		l.logTurnStart(p)
	}
	if err := l.flush(); err != nil {
		l.rollback(m)
		a.done(chat.Delivery{}, fmt.Errorf("could not store the message: %w", err))
		return
	}
	l.r.opt.Metrics.Receipts.WithLabelValues(chat.DeliveryQueued).Inc()
	if !atOnce {
		l.queue = append(l.queue, p)
		l.r.opt.Metrics.QueueDepth.Inc()
	}
	if p.notify != nil {
		p.notify(d)
	}
	a.done(d, nil)
	if atOnce {
		l.beginTurn(p)
		return
	}
	l.next()
}

// saveFiles saves a new message's files in the thread's working directory
// and names them in its text. Saved before anything is logged: a file that
// cannot be saved refuses the message, which the client keeps.
func (l *lane) saveFiles(p *pendingInput) ([]chat.FileRef, error) {
	if len(p.files) == 0 || p.retry {
		return nil, nil
	}
	refs, err := uploads.Save(l.th.Cwd, l.ag.Roots, p.files)
	if err != nil {
		return nil, invalid("the attached files could not be saved in the thread's working directory: %v", err)
	}
	if l.th.Title == "" {
		l.th.Title = titleOf(firstNonEmpty(p.in.Text, refs[0].Name))
	}
	p.in.Text = strings.TrimSpace(p.in.Text + "\n\n" + uploads.Mention(refs))
	return refs, nil
}

// recordFailed keeps a message that failed before it reached this machine:
// in the log with its failed receipt, as a message the lane failed is, its
// files saved (a retry sends it as it is kept).
func (l *lane) recordFailed(a laneAccept) {
	p := a.p
	m := l.mark()
	refs, err := l.saveFiles(p)
	if err != nil {
		a.done(chat.Delivery{}, err)
		return
	}
	p.in.State, p.in.Detail = chat.DeliveryFailed, p.failed
	l.saveInput(p)
	l.emit(chat.UserMessage{MessageID: p.in.MessageID, Text: p.in.Text, From: p.in.From, Files: refs})
	if l.th.Title == "" {
		l.th.Title = titleOf(p.in.Text)
	}
	d := chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryFailed, Detail: p.failed}
	l.emit(d)
	if err := l.flush(); err != nil {
		l.rollback(m)
		a.done(chat.Delivery{}, fmt.Errorf("could not store the message: %w", err))
		return
	}
	l.r.opt.Metrics.Receipts.WithLabelValues(chat.DeliveryFailed).Inc()
	a.done(d, nil)
}

// waitsForStart is the reason on a message that waits for the agent's process
// to start: it is queued, never failed for the agent's slowness.
const waitsForStart = "waits for the agent to start"

// waitsFor says what a message queued now waits for, in words a person can
// act on ("" when it goes at once).
func (l *lane) waitsFor() string {
	if l.life == sessionStarting {
		return waitsForStart
	}
	if l.turn == nil && len(l.queue) == 0 {
		return ""
	}
	kind := ""
	for _, c := range l.cards {
		if kind == "" || c.Kind == chat.CardPermission {
			kind = c.Kind
		}
	}
	switch kind {
	case chat.CardPermission:
		return "waits until the open permission request is answered and the turn ends"
	case chat.CardQuestion:
		return "waits until the open question is answered and the turn ends"
	}
	return "waits for the agent's current turn to end"
}

// result reports a driver call's completion to the lane (from any goroutine);
// false when the lane is gone (shut down, or its thread deleted) and f was
// not run.
func (l *lane) result(f func()) bool {
	select {
	case l.results <- f:
		return true
	case <-l.r.ctx.Done():
	case <-l.gone:
	}
	return false
}

// titleOf makes a thread's title from its first message: the first line, cut
// at a word near 80 characters.
func titleOf(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > 80 {
		cut := string(r[:80])
		if i := strings.LastIndexByte(cut, ' '); i > 40 {
			cut = cut[:i]
		}
		line = cut + "…"
	}
	return line
}
