package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/store"
)

// lane owns one thread: its row, its queue of inputs, its cards, its session and
// its log. Everything below runs on the lane goroutine unless it says otherwise.
// Driver calls that might block run on their own goroutines and report back
// through l.results, so a slow agent never holds the lane.
type lane struct {
	r   *Router
	th  chat.Thread
	ag  config.Agent
	log *slog.Logger

	inbox   chan laneAccept // messages (bounded: full → busy)
	ctrl    chan func()     // controls: never behind a message
	updates chan update     // from the session's sink
	results chan func()     // completions of driver calls

	queue    []*pendingInput
	sess     driver.Session
	gen      int // session generation; updates of older sessions are ignored
	starting bool
	turn     *turn
	cards    map[string]*chat.Card // open cards by request id
	idle     *time.Timer
	closing  bool
	// closed is done once the sessions let go of so far have finished
	// closing. A start waits for it: an agent's new process must not meet
	// its old one, which holds the same names (a tmux session, a state
	// folder) until its Close returns.
	closed chan struct{}

	batch store.Batch // changes not yet committed
}

type pendingInput struct {
	in     chat.Input
	images []Image
	notify func(chat.Delivery)
	retry  bool // a failed message sent again: its user_message is already in the log
}

type laneAccept struct {
	p    *pendingInput
	done func(chat.Delivery, error)
}

type turn struct {
	p             *pendingInput
	prover        bool   // the session is a driver.DeliveryProver
	prompted      bool   // Prompt returned (or the agent's evidence came first)
	delivered     bool   // "submitted": the agent showed it has the message
	endReason     string // TurnEnded arrived before Prompt returned
	exitDetail    string // the session exited before Prompt returned
	stopping      bool
	cancelPrompt  context.CancelFunc
	stopTimer     *time.Timer
	sessionWaited bool // the turn waits for its session to start
}

type updateKind int

const (
	upEvent updateKind = iota
	upReceived
	upSessionID
	upTurnEnded
	upWithdrawn
	upExited
)

type update struct {
	gen  int
	kind updateKind
	p    chat.Payload
	s    string
	err  error
}

func (r *Router) newLane(th chat.Thread) *lane {
	ag, _ := r.agent(th.Agent)
	return &lane{
		r: r, th: th, ag: ag,
		log:     r.log.With("thread", th.ID, "agent", th.Agent),
		inbox:   make(chan laneAccept, r.opt.QueueDepth),
		ctrl:    make(chan func(), 64),
		updates: make(chan update, 1024),
		results: make(chan func(), 16),
		cards:   map[string]*chat.Card{},
	}
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
	errc := make(chan error, 1)
	f := func() { l.doControl(c, func(err error) { errc <- err }) }
	select {
	case l.ctrl <- f:
	case <-ctx.Done():
		return ctx.Err()
	case <-l.r.ctx.Done():
		return chat.ErrClosed
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-l.r.ctx.Done():
		return chat.ErrClosed
	}
}

func (l *lane) run() {
	l.idle = time.NewTimer(time.Hour)
	l.idle.Stop()
	defer l.idle.Stop()
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
		case <-l.r.ctx.Done():
			l.shutdown()
			return
		}
		l.flush()
	}
}

// emit appends an event to the log (committed at the end of the lane step).
func (l *lane) emit(p chat.Payload) {
	ev, err := chat.NewEvent(l.th.ID, p, l.r.opt.Now())
	if err != nil {
		l.log.Error("encode event", "type", p.EventType(), "err", err)
		return
	}
	l.th.LastSeq++
	ev.Seq = l.th.LastSeq
	l.batch.Events = append(l.batch.Events, ev)
}

func (l *lane) saveInput(p *pendingInput) { l.batch.Inputs = append(l.batch.Inputs, p.in) }
func (l *lane) saveCard(c *chat.Card)     { l.batch.Cards = append(l.batch.Cards, *c) }

// flush commits the step's changes in one transaction, then fans the events out.
// Nothing is shown that is not stored.
func (l *lane) flush() error {
	if l.batch.Empty() {
		return nil
	}
	l.th.UpdatedAt = l.r.opt.Now()
	th := l.th
	l.batch.Thread = &th
	b := l.batch
	l.batch = store.Batch{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.r.store.Commit(ctx, b); err != nil {
		l.log.Error("commit", "err", err, "events", len(b.Events))
		l.th.LastSeq -= int64(len(b.Events))
		return err
	}
	for _, ev := range b.Events {
		l.r.hub.Publish(ev)
	}
	l.r.opt.Metrics.Events.Add(float64(len(b.Events)))
	return nil
}

func (l *lane) onAccept(a laneAccept) {
	p := a.p
	same := func(q *pendingInput) bool { return q.in.From == p.in.From && q.in.MessageID == p.in.MessageID }
	if slices.ContainsFunc(l.queue, same) || (l.turn != nil && same(l.turn.p)) {
		a.done(chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryQueued}, chat.ErrDuplicate)
		return
	}
	if len(l.queue) >= l.r.opt.QueueDepth {
		a.done(chat.Delivery{}, chat.ErrBusy)
		return
	}
	p.in.Detail = l.waitsFor()
	l.saveInput(p)
	if !p.retry {
		l.emit(chat.UserMessage{MessageID: p.in.MessageID, Text: p.in.Text, From: p.in.From})
	}
	if l.th.Title == "" {
		l.th.Title = titleOf(p.in.Text)
	}
	d := chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryQueued, Detail: p.in.Detail}
	l.emit(d)
	if err := l.flush(); err != nil {
		a.done(chat.Delivery{}, fmt.Errorf("could not store the message: %w", err))
		return
	}
	l.r.opt.Metrics.Receipts.WithLabelValues(chat.DeliveryQueued).Inc()
	l.queue = append(l.queue, p)
	l.r.opt.Metrics.QueueDepth.Inc()
	if p.notify != nil {
		p.notify(d)
	}
	a.done(d, nil)
	l.next()
}

// waitsFor says what a message queued now waits for, in words a person can
// act on ("" when it goes at once).
func (l *lane) waitsFor() string {
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

// receipt moves an input to a new delivery state, logged and told to its waiter.
func (l *lane) receipt(p *pendingInput, state, detail string) {
	p.in.State, p.in.Detail = state, detail
	l.saveInput(p)
	d := chat.Delivery{MessageID: p.in.MessageID, State: state, Detail: detail}
	l.emit(d)
	l.r.opt.Metrics.Receipts.WithLabelValues(state).Inc()
	if p.notify != nil {
		p.notify(d)
	}
}

// next starts the oldest queued message's turn when none runs.
func (l *lane) next() {
	if l.turn != nil || len(l.queue) == 0 || l.closing {
		return
	}
	p := l.queue[0]
	l.queue = l.queue[1:]
	l.r.opt.Metrics.QueueDepth.Dec()
	l.idle.Stop()
	t := &turn{p: p}
	l.turn = t
	l.r.slots.busy(l)
	l.th.TurnMessageID = p.in.MessageID
	l.th.State = chat.ThreadWorking
	l.receipt(p, chat.DeliveryDelivering, "")
	l.emit(chat.TurnStatus{Active: true, MessageID: p.in.MessageID})
	if l.sess == nil {
		t.sessionWaited = true
		l.startSession()
		return
	}
	l.prompt(t)
}

func (l *lane) startSession() {
	if l.starting || l.sess != nil {
		return
	}
	drv, ag, err := l.r.Driver(l.th.Agent)
	if err != nil {
		l.sessionFailed(err)
		return
	}
	l.ag = ag
	l.starting = true
	l.gen++
	gen := l.gen
	env := make([]string, 0, len(ag.Env))
	for k, v := range ag.Env {
		env = append(env, k+"="+v)
	}
	spec := driver.Spec{
		ThreadID: l.th.ID, AgentID: ag.ID, Command: ag.Command, Args: ag.Args, Env: env,
		Cwd: l.th.Cwd, ResumeID: l.th.SessionID, Mode: l.th.Mode, Model: ag.Model,
		Options: ag.Options, Logger: l.log,
	}
	sink := &laneSink{l: l, gen: gen}
	resumed := l.th.SessionID != ""
	closed := l.closed
	go func() {
		if closed != nil {
			select {
			case <-closed:
			case <-l.r.ctx.Done():
			}
		}
		var s driver.Session
		err := l.r.slots.acquire(l.r.ctx, l)
		if err == nil {
			s, err = drv.Start(l.r.ctx, spec, sink)
		}
		l.result(func() { l.started(gen, s, err, resumed) })
	}()
}

// result reports a driver call's completion to the lane (from any goroutine).
func (l *lane) result(f func()) {
	select {
	case l.results <- f:
	case <-l.r.ctx.Done():
	}
}

func (l *lane) started(gen int, s driver.Session, err error, resumed bool) {
	l.starting = false
	if s == nil {
		l.r.slots.release(l) // no process came of this start
	}
	if gen != l.gen || l.closing {
		l.closeLater(s)
		return
	}
	if err != nil && resumed && errors.Is(err, driver.ErrHistoryLost) {
		// The agent has no record of the session (e.g. it died before saving
		// it): say so plainly and carry on in a fresh session.
		l.log.Warn("resume failed; starting a new session", "session_id", l.th.SessionID, "err", err)
		l.emit(chat.Error{Code: chat.CodeNoHistory, Message: "the earlier conversation could not be restored by the agent; this continues in a new session (" + err.Error() + ")"})
		l.th.SessionID = ""
		l.startSession()
		return
	}
	if err != nil {
		l.sessionFailed(err)
		return
	}
	l.setSession(s)
	state := "started"
	if resumed {
		state = "resumed"
	}
	l.emit(chat.SessionInfo{State: state, SessionID: l.th.SessionID})
	if l.turn == nil {
		l.th.State = chat.ThreadIdle
		l.bumpIdle()
		return
	}
	if t := l.turn; t.sessionWaited {
		t.sessionWaited = false
		l.prompt(t)
	}
}

// sessionFailed ends a turn waiting for a session that could not start.
func (l *lane) sessionFailed(err error) {
	l.log.Warn("session start failed", "err", err)
	l.th.State = chat.ThreadCrashed
	if errors.Is(err, chat.ErrSessionLimit) {
		l.th.State = chat.ThreadUnloaded // nothing crashed: the next message tries again
	}
	l.emit(chat.Error{Code: chat.CodeAgent, Message: "the agent could not be started: " + err.Error()})
	if t := l.turn; t != nil {
		l.receipt(t.p, chat.DeliveryFailed, "the agent could not be started: "+err.Error())
		l.finishTurn(t, "")
	}
}

func (l *lane) prompt(t *turn) {
	ctx, cancel := context.WithCancel(l.r.ctx)
	t.cancelPrompt = cancel
	s, gen := l.sess, l.gen
	_, t.prover = s.(driver.DeliveryProver)
	p := driver.Prompt{MessageID: t.p.in.MessageID, Text: t.p.in.Text}
	for _, im := range t.p.images {
		p.Images = append(p.Images, driver.Image{MIMEType: im.MIMEType, Data: im.Data})
	}
	go func() {
		err := s.Prompt(ctx, p)
		cancel()
		l.result(func() { l.prompted(t, gen, err) })
	}()
}

// prompted takes Prompt's verdict. The rule of receipts, for every driver:
// "failed" when Prompt says the text could not be handed over; "submitted"
// only on the agent's own evidence that it has the text (Sink.Received; for a
// DeliveryProver, its Prompt returning nil); a turn that ends, or a session
// that exits, after the hand-over but before any evidence "failed": the agent
// never showed it took the text (e.g. the process died with the line unread
// in its stdin).
func (l *lane) prompted(t *turn, gen int, err error) {
	if t != l.turn || t.prompted {
		// The turn was already ended (forced stop, exit), or the agent's own
		// evidence came first.
		if err != nil && t.delivered {
			l.log.Warn("driver reported a failed delivery after the agent answered", "err", err)
		}
		if t == l.turn && t.endReason != "" {
			l.finishTurn(t, t.endReason)
		}
		return
	}
	t.prompted = true
	if errors.Is(err, driver.ErrUnverified) {
		// It may have reached the agent: neither submitted nor failed.
		detail := "parley could not tell whether it reached the agent: "
		switch {
		case t.exitDetail != "":
			detail += t.exitDetail
		case t.stopping:
			detail += "stopped while it was being verified"
		default:
			detail += err.Error()
		}
		l.receipt(t.p, chat.DeliveryUnknown, detail)
		l.finishTurn(t, "")
		return
	}
	if err != nil {
		detail := err.Error()
		switch {
		case t.exitDetail != "":
			detail = t.exitDetail
		case t.stopping && errors.Is(err, context.Canceled):
			detail = "stopped before it reached the agent"
		}
		l.receipt(t.p, chat.DeliveryFailed, detail)
		l.finishTurn(t, "")
		return
	}
	if !t.prover {
		// Handed over; "submitted" waits for the agent's evidence.
		if t.exitDetail != "" || t.endReason != "" {
			l.notTaken(t, t.endReason, t.exitDetail)
		}
		return
	}
	t.delivered = true
	l.receipt(t.p, chat.DeliverySubmitted, "")
	if t.exitDetail != "" {
		l.emit(chat.Error{Code: chat.CodeAgent, Message: t.exitDetail, Ref: t.p.in.MessageID})
	}
	if t.endReason != "" {
		l.endTurn(t, t.endReason)
	}
}

// received takes the agent's first evidence that it has the turn's text.
func (l *lane) received() {
	t := l.turn
	if t == nil || t.delivered || t.prover || t.cancelPrompt == nil {
		return // no turn handed over, or only Prompt may say (DeliveryProver)
	}
	t.prompted, t.delivered = true, true
	l.receipt(t.p, chat.DeliverySubmitted, "")
}

// notTaken fails a turn whose text was handed over but which ended (reason)
// or whose session exited (exitDetail) before the agent showed it had it.
func (l *lane) notTaken(t *turn, reason, exitDetail string) {
	detail := "the agent ended the turn before it showed it had the message"
	switch {
	case t.stopping:
		detail = "stopped before the agent showed it had the message"
	case exitDetail != "":
		detail = exitDetail + ", before it showed it had the message"
	case reason == chat.StopError:
		detail = "the agent failed before it showed it had the message"
	}
	l.receipt(t.p, chat.DeliveryFailed, detail)
	l.finishTurn(t, "")
}

// endTurn ends a delivered turn with prompt_done.
func (l *lane) endTurn(t *turn, reason string) {
	if t != l.turn {
		return
	}
	if !t.prompted {
		t.endReason = reason // wait for Prompt to say whether the text got there
		return
	}
	if !t.delivered {
		l.notTaken(t, reason, "")
		return
	}
	l.finishTurn(t, reason)
}

// finishTurn closes the turn: its open cards are cancelled, prompt_done is logged
// when the message was delivered, and the next message may go.
func (l *lane) finishTurn(t *turn, reason string) {
	if t.stopTimer != nil {
		t.stopTimer.Stop()
	}
	if t.cancelPrompt != nil {
		t.cancelPrompt()
	}
	l.cancelCards(t.p.in.MessageID, "")
	if reason != "" {
		l.emit(chat.PromptDone{StopReason: reason, MessageID: t.p.in.MessageID})
	}
	l.emit(chat.TurnStatus{Active: false})
	l.turn = nil
	l.th.TurnMessageID = ""
	switch {
	case l.sess != nil:
		l.th.State = chat.ThreadIdle
	case l.th.State == chat.ThreadWorking:
		l.th.State = chat.ThreadUnloaded
	}
	l.bumpIdle()
	l.next()
}

// cancelCards cancels the open cards of a turn ("" for all).
func (l *lane) cancelCards(turnID string, _ string) {
	for id, c := range l.cards {
		if turnID != "" && c.TurnMessageID != "" && c.TurnMessageID != turnID {
			continue
		}
		l.closeCard(c, chat.CardCancelled, nil)
		delete(l.cards, id)
	}
}

// closeCard resolves or cancels a card and logs its *_resolved event.
func (l *lane) closeCard(c *chat.Card, state string, resolved chat.Payload) {
	if resolved == nil {
		if c.Kind == chat.CardQuestion {
			resolved = chat.QuestionResolved{RequestID: c.RequestID, Cancelled: true}
		} else {
			resolved = chat.PermissionResolved{RequestID: c.RequestID, Cancelled: true}
		}
	}
	b, _ := json.Marshal(resolved)
	c.State, c.Resolution, c.ResolvedAt = state, b, l.r.opt.Now()
	l.saveCard(c)
	l.emit(resolved)
	delete(l.cards, c.RequestID)
}

func (l *lane) bumpIdle() {
	if l.sess == nil || l.turn != nil {
		return
	}
	l.r.slots.idle(l)
	l.idle.Reset(l.ag.IdleTimeout.Duration)
}

func (l *lane) onIdle() {
	if l.sess == nil || l.turn != nil || len(l.queue) > 0 {
		return
	}
	l.log.Info("idle: unloading session")
	l.closeSession()
	l.th.State = chat.ThreadUnloaded
	l.emit(chat.SessionInfo{State: "unloaded", SessionID: l.th.SessionID})
}

// setSession changes the live session, keeping the live-sessions gauge.
func (l *lane) setSession(s driver.Session) {
	switch {
	case l.sess == nil && s != nil:
		l.r.opt.Metrics.LiveSessions.Inc()
	case l.sess != nil && s == nil:
		l.r.opt.Metrics.LiveSessions.Dec()
	}
	l.sess = s
}

// closeSession ends the live session without waiting for it.
func (l *lane) closeSession() {
	s := l.sess
	l.setSession(nil)
	l.gen++
	l.closeLater(s)
}

// closeLater closes s off the lane, after the sessions closed before it; the
// thread's next start waits for it (l.closed).
func (l *lane) closeLater(s driver.Session) {
	if s == nil {
		return
	}
	prev, done := l.closed, make(chan struct{})
	l.closed = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
		l.r.slots.release(l) // the process is gone: its slot is free (sessions.go)
	}()
}

func (l *lane) onUpdate(u update) {
	if u.gen != l.gen {
		return // a session that is gone
	}
	switch u.kind {
	case upEvent:
		l.onEvent(u.p)
	case upReceived:
		l.received()
	case upSessionID:
		if u.s != "" && u.s != l.th.SessionID {
			l.th.SessionID = u.s
			l.emit(chat.SessionInfo{State: "identified", SessionID: u.s})
		}
	case upTurnEnded:
		if l.turn != nil {
			l.endTurn(l.turn, u.s)
		}
	case upWithdrawn:
		if c := l.cards[u.s]; c != nil {
			l.closeCard(c, chat.CardCancelled, nil)
		}
	case upExited:
		l.closeSession() // what the driver still holds for it (a follower, a listener)
		detail := "the agent exited"
		if u.err != nil {
			detail = "the agent exited: " + u.err.Error()
			l.th.State = chat.ThreadCrashed
		} else {
			l.th.State = chat.ThreadUnloaded
		}
		l.emit(chat.SessionInfo{State: "exited", SessionID: l.th.SessionID, Detail: detail})
		l.cancelCards("", "")
		if t := l.turn; t != nil {
			switch {
			case !t.prompted:
				// Whether the text got there is Prompt's to say; it returns
				// promptly now that the process is gone.
				t.exitDetail, t.endReason = detail, chat.StopError
			case !t.delivered:
				l.notTaken(t, chat.StopError, detail)
			default:
				l.emit(chat.Error{Code: chat.CodeAgent, Message: detail, Ref: t.p.in.MessageID})
				l.finishTurn(t, chat.StopError)
			}
		}
	}
}

func (l *lane) onEvent(p chat.Payload) {
	switch p := p.(type) {
	case chat.PermissionRequest:
		l.openCard(chat.CardPermission, p.RequestID, p)
		return
	case chat.Question:
		l.openCard(chat.CardQuestion, p.RequestID, p)
		return
	case chat.Mode:
		l.th.Mode = p.Current
	}
	l.emit(p)
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

func (l *lane) openCard(kind, id string, p chat.Payload) {
	if id == "" || l.cards[id] != nil {
		l.log.Warn("card with empty or duplicate id ignored", "request_id", id)
		return
	}
	b, _ := json.Marshal(p)
	c := &chat.Card{ThreadID: l.th.ID, RequestID: id, Kind: kind, State: chat.CardOpen, Request: b, CreatedAt: l.r.opt.Now()}
	if l.turn != nil {
		c.TurnMessageID = l.turn.p.in.MessageID
	}
	l.cards[id] = c
	l.saveCard(c)
	l.emit(p)
}

// doControl runs a control; reply is called once with its verdict, at once or,
// for card answers, when the agent has taken the answer.
func (l *lane) doControl(c Control, reply func(error)) {
	switch {
	case c.Stop:
		reply(l.stop())
	case c.Permission != nil:
		l.answerPermission(c, reply)
	case c.Answer != nil:
		l.answerQuestion(c, reply)
	case c.SetMode != nil:
		reply(l.setMode(c.SetMode.ModeID))
	case c.SetOption != nil:
		reply(l.setOption(c.SetOption.ConfigID, c.SetOption.Value))
	}
}

// stop cancels the turn in flight at once.
func (l *lane) stop() error {
	t := l.turn
	if t == nil {
		return chat.ErrNoTurn
	}
	if t.stopping {
		return nil
	}
	t.stopping = true
	l.cancelCards(t.p.in.MessageID, "")
	if l.sess == nil || !t.prompted && t.sessionWaited {
		// Nothing reached an agent yet: the message simply fails.
		t.prompted = true
		l.receipt(t.p, chat.DeliveryFailed, "stopped before it reached the agent")
		l.finishTurn(t, "")
		return nil
	}
	if !t.prompted && t.cancelPrompt != nil {
		t.cancelPrompt() // abandon a delivery still being verified
	}
	s, gen := l.sess, l.gen
	go func() {
		ctx, cancel := context.WithTimeout(l.r.ctx, l.r.opt.StopGrace)
		defer cancel()
		if err := s.Cancel(ctx); err != nil {
			l.result(func() {
				if gen == l.gen {
					l.log.Warn("cancel failed", "err", err)
				}
			})
		}
	}()
	t.stopTimer = time.AfterFunc(l.r.opt.StopGrace, func() {
		l.result(func() {
			if l.turn != t {
				return
			}
			// The agent did not end the turn: end it here and drop the session,
			// whose state can no longer be trusted. The next message resumes.
			l.log.Warn("agent did not honour stop; closing the session")
			l.closeSession()
			l.th.State = chat.ThreadUnloaded
			if !t.prompted {
				// The driver never said what became of the text: it may be
				// on its way (a stalled agent runs it when it wakes).
				t.prompted = true
				l.receipt(t.p, chat.DeliveryUnknown, "parley could not tell whether it reached the agent: stopped while it was being delivered")
				l.finishTurn(t, "")
				return
			}
			if !t.delivered {
				l.notTaken(t, chat.StopCancelled, "")
				return
			}
			l.finishTurn(t, chat.StopCancelled)
		})
	})
	return nil
}

func (l *lane) card(id, kind string) (*chat.Card, error) {
	c := l.cards[id]
	if c == nil || c.Kind != kind {
		return nil, fmt.Errorf("%w: %s", chat.ErrCardClosed, id)
	}
	return c, nil
}

// answerCard resolves a card for every connection at once (so a second answer,
// from another tab, is refused as no longer open, and the resolution precedes
// the agent's reaction in the log), then tells the agent. The answer was checked
// against the card first; should the agent still refuse it, an error event says
// so in the thread.
func (l *lane) answerCard(c *chat.Card, state string, resolved chat.Payload, tell func(context.Context, driver.Session) error, reply func(error)) {
	if l.sess == nil {
		reply(fmt.Errorf("%w: the agent is not running", chat.ErrCardClosed))
		return
	}
	l.closeCard(c, state, resolved)
	id := c.RequestID
	l.tellSession(func(ctx context.Context, s driver.Session) error {
		if err := tell(ctx, s); err != nil {
			return fmt.Errorf("the agent did not take the answer to %s: %w", id, err)
		}
		return nil
	})
	reply(nil)
}

func (l *lane) answerPermission(ctl Control, reply func(error)) {
	r := ctl.Permission
	c, err := l.card(r.RequestID, chat.CardPermission)
	if err != nil {
		reply(err)
		return
	}
	if !r.Cancelled {
		var req chat.PermissionRequest
		_ = json.Unmarshal(c.Request, &req)
		if !slices.ContainsFunc(req.Options, func(o chat.PermissionOption) bool { return o.ID == r.OptionID }) {
			reply(fmt.Errorf("%w: %q is not one of this card's options", chat.ErrBadInput, r.OptionID))
			return
		}
	}
	by := ctl.From
	res := chat.PermissionResolved{RequestID: r.RequestID, OptionID: r.OptionID, Message: r.Message, Cancelled: r.Cancelled, By: &by}
	state := chat.CardResolved
	if r.Cancelled {
		state = chat.CardCancelled
	}
	ans := driver.PermissionAnswer{OptionID: r.OptionID, Message: r.Message, Cancelled: r.Cancelled}
	l.answerCard(c, state, res, func(ctx context.Context, s driver.Session) error {
		return s.AnswerPermission(ctx, r.RequestID, ans)
	}, reply)
}

func (l *lane) answerQuestion(ctl Control, reply func(error)) {
	q := ctl.Answer
	c, err := l.card(q.RequestID, chat.CardQuestion)
	if err != nil {
		reply(err)
		return
	}
	var req chat.Question
	_ = json.Unmarshal(c.Request, &req)
	for text := range q.Answers {
		if !slices.ContainsFunc(req.Questions, func(it chat.QuestionItem) bool { return it.Question == text }) {
			reply(fmt.Errorf("%w: %q is not a question of this card", chat.ErrBadInput, text))
			return
		}
	}
	by := ctl.From
	res := chat.QuestionResolved{RequestID: q.RequestID, Answers: q.Answers, Response: q.Response, By: &by}
	ans := driver.QuestionAnswer{Answers: q.Answers, Response: q.Response}
	l.answerCard(c, chat.CardResolved, res, func(ctx context.Context, s driver.Session) error {
		return s.AnswerQuestion(ctx, q.RequestID, ans)
	}, reply)
}

func (l *lane) setMode(id string) error {
	if l.sess == nil {
		// No live session: remember it for the next start.
		l.th.Mode = id
		l.emit(chat.Mode{Current: id})
		return nil
	}
	l.tellSession(func(ctx context.Context, s driver.Session) error { return s.SetMode(ctx, id) })
	return nil
}

func (l *lane) setOption(id, value string) error {
	if l.sess == nil {
		return fmt.Errorf("%w: the agent is not running; send a message first", driver.ErrNotRunning)
	}
	l.tellSession(func(ctx context.Context, s driver.Session) error { return s.SetConfigOption(ctx, id, value) })
	return nil
}

// tellSession runs a driver call off the lane; a failure is logged as an error event.
func (l *lane) tellSession(f func(context.Context, driver.Session) error) {
	s, gen := l.sess, l.gen
	if s == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(l.r.ctx, 30*time.Second)
		defer cancel()
		if err := f(ctx, s); err != nil {
			l.result(func() {
				if gen == l.gen {
					l.emit(chat.Error{Code: chat.CodeAgent, Message: err.Error()})
				}
			})
		}
	}()
}

// recover settles what a previous run left: open cards of dead sessions are
// cancelled, a turn cut off mid-way ends with an error, a message cut off during
// delivery fails with the reason, and queued messages wait for delivery.
func (l *lane) recover(ctx context.Context, pending []chat.Input, open []chat.Card) error {
	for i := range open {
		l.closeCard(&open[i], chat.CardExpired, nil)
	}
	if id := l.th.TurnMessageID; id != "" {
		// The turn's message is still delivering (failed below) or was
		// submitted: a failed one ends its turn in the same commit.
		delivering := slices.ContainsFunc(pending, func(in chat.Input) bool {
			return in.MessageID == id && in.State == chat.DeliveryDelivering
		})
		if !delivering {
			l.emit(chat.Error{Code: chat.CodeRestart, Message: "parley stopped during this turn; the answer may be incomplete", Ref: id})
			l.emit(chat.PromptDone{StopReason: chat.StopError, MessageID: id})
		}
		l.emit(chat.TurnStatus{Active: false})
		l.th.TurnMessageID = ""
	}
	for _, in := range pending {
		p := &pendingInput{in: in}
		switch in.State {
		case chat.DeliveryDelivering:
			l.receipt(p, chat.DeliveryFailed, "parley stopped while delivering this message; it may not have reached the agent")
		case chat.DeliveryQueued:
			l.queue = append(l.queue, p)
			l.r.opt.Metrics.QueueDepth.Inc()
		}
	}
	l.th.State = chat.ThreadUnloaded
	return l.flush()
}

// shutdown ends the session; a turn in flight ends with an error, queued messages
// stay queued for the next start.
func (l *lane) shutdown() {
	l.closing = true
	if t := l.turn; t != nil {
		if t.delivered {
			l.emit(chat.Error{Code: chat.CodeRestart, Message: "parley is shutting down; this turn was cut off", Ref: t.p.in.MessageID})
			l.finishTurn(t, chat.StopError)
		} else {
			l.receipt(t.p, chat.DeliveryFailed, "parley shut down before the message reached the agent")
			l.finishTurn(t, "")
		}
	}
	if l.sess != nil {
		s := l.sess
		l.setSession(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Close(ctx)
		cancel()
	}
	if l.closed != nil {
		// Sessions let go of earlier are still closing: end with them.
		select {
		case <-l.closed:
		case <-time.After(5 * time.Second):
		}
	}
	l.th.State = chat.ThreadUnloaded
	l.flush()
}

// laneSink is the driver.Sink of one session generation.
type laneSink struct {
	l   *lane
	gen int
}

func (s *laneSink) send(u update) {
	u.gen = s.gen
	select {
	case s.l.updates <- u:
	case <-s.l.r.ctx.Done():
	}
}

func (s *laneSink) Event(p chat.Payload)    { s.send(update{kind: upEvent, p: p}) }
func (s *laneSink) Received()               { s.send(update{kind: upReceived}) }
func (s *laneSink) SessionID(id string)     { s.send(update{kind: upSessionID, s: id}) }
func (s *laneSink) TurnEnded(reason string) { s.send(update{kind: upTurnEnded, s: reason}) }
func (s *laneSink) CardWithdrawn(id string) { s.send(update{kind: upWithdrawn, s: id}) }
func (s *laneSink) Exited(err error)        { s.send(update{kind: upExited, err: err}) }
