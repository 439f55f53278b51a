// The turn: its phases and their transitions, and everything that moves a turn.

package router

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/uploads"
)

// A turn is one message's way through the agent, from "delivering" to its end.
// Its phase says where the message is; the lane changes it only through move,
// along these transitions (every other field of the turn is data, not state):
//
//	awaitingSession ──session started──────────────────────▶ prompting
//	prompting ──Prompt nil, not a DeliveryProver────────────▶ handedOver
//	prompting ──Prompt nil (DeliveryProver), agent's evidence▶ delivered
//	handedOver ──agent's evidence───────────────────────────▶ delivered
//	any phase ──failed, unknown, not taken, ended, stopped──▶ over
//
// "submitted" is said on entering delivered, and only then. What arrives while
// Prompt still runs (the turn's end, the session's exit) is kept in endReason
// and exitDetail and judged when Prompt returns: only Prompt can say whether
// the text got there.
type turn struct {
	p          *pendingInput
	phase      turnPhase
	prover     bool   // the session is a driver.DeliveryProver: Prompt's nil is the evidence
	stopping   bool   // a stop was asked (any phase); the stop grace runs
	endReason  string // TurnEnded arrived while prompting
	exitDetail string // the session exited while prompting
	// exitUnverified: the driver said, with the exit, that the agent may
	// have taken the text (driver.ErrUnverified): not taken is then unknown.
	exitUnverified bool
	cancelPrompt   context.CancelFunc
	stopTimer      *time.Timer
}

type turnPhase int

const (
	awaitingSession turnPhase = iota // the session is starting; nothing was sent
	prompting                        // Prompt runs: the text is on its way
	handedOver                       // Prompt returned nil; waiting for the agent's evidence
	delivered                        // the agent has the text ("submitted")
	over                             // the turn ended; late reports about it are ignored
)

var turnPhases = [...]string{"awaiting session", "prompting", "handed over", "delivered", "over"}

func (p turnPhase) String() string { return turnPhases[p] }

// turnMoves lists each phase's next phases (over is always allowed).
var turnMoves = map[turnPhase][]turnPhase{
	awaitingSession: {prompting},
	prompting:       {handedOver, delivered},
	handedOver:      {delivered},
}

// move changes the turn's phase. A move the table does not allow is a bug in
// the lane; it is logged, and made (the receipts already said what happened).
func (l *lane) move(t *turn, to turnPhase) {
	if to != over && !slices.Contains(turnMoves[t.phase], to) {
		l.log.Error("turn: a move the phases do not allow", "from", t.phase, "to", to, "message", t.p.in.MessageID)
	}
	t.phase = to
}

// sent reports whether Prompt has been called and has returned, or the agent
// showed it has the text before it did: the text's fate is known.
func (t *turn) sent() bool { return t.phase == handedOver || t.phase == delivered }

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
	if l.turn != nil || len(l.queue) == 0 || l.life == laneClosing || l.checking > 0 {
		return
	}
	p := l.queue[0]
	l.queue = l.queue[1:]
	l.r.opt.Metrics.QueueDepth.Dec()
	if l.sess == nil {
		l.idle.Stop()
		l.turn = &turn{p: p}
		l.r.slots.busy(l)
		l.th.TurnMessageID = p.in.MessageID
		l.th.State = chat.ThreadWorking
		l.emit(chat.TurnStatus{Active: true, MessageID: p.in.MessageID})
		// Nothing is delivered until the agent runs: the message stays
		// queued, saying why; started() prompts the turn awaiting its session.
		if p.in.Detail != waitsForStart {
			l.receipt(p, chat.DeliveryQueued, waitsForStart)
		}
		l.startSession()
		return
	}
	l.logTurnStart(p)
	l.beginTurn(p)
}

// goesAtOnce reports whether a message accepted now starts its turn at
// once, to a live session (next would take it before any other).
func (l *lane) goesAtOnce() bool {
	return l.turn == nil && len(l.queue) == 0 && l.life != laneClosing && l.checking == 0 && l.sess != nil
}

// logTurnStart puts a turn's start in the step's batch: the thread working
// on p, turn_status, and p's delivering receipt. beginTurn follows it once
// the step may go on (onAccept: once its commit holds the message too).
func (l *lane) logTurnStart(p *pendingInput) {
	l.th.TurnMessageID = p.in.MessageID
	l.th.State = chat.ThreadWorking
	l.emit(chat.TurnStatus{Active: true, MessageID: p.in.MessageID})
	p.in.State, p.in.Detail = chat.DeliveryDelivering, ""
	l.saveInput(p)
	l.emit(chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryDelivering})
}

// beginTurn starts the turn logged by logTurnStart: its receipt told, the
// agent prompted (after the commit of that receipt: prompt).
func (l *lane) beginTurn(p *pendingInput) {
	l.idle.Stop()
	t := &turn{p: p}
	l.turn = t
	l.r.slots.busy(l)
	l.r.opt.Metrics.Receipts.WithLabelValues(chat.DeliveryDelivering).Inc()
	if p.notify != nil {
		p.notify(chat.Delivery{MessageID: p.in.MessageID, State: chat.DeliveryDelivering})
	}
	l.prompt(t)
}

func (l *lane) prompt(t *turn) {
	l.move(t, prompting)
	ctx, cancel := context.WithCancel(l.r.ctx)
	t.cancelPrompt = cancel
	s, gen := l.sess, l.gen
	_, t.prover = s.(driver.DeliveryProver)
	p := driver.Prompt{MessageID: t.p.in.MessageID, Text: t.p.in.Text}
	if l.carryCheck {
		// A moved thread's first message takes the earlier messages the
		// person chose to give the new agent (the log shows the move). The
		// next prompt looks again while this one may still fail.
		carry := l.moveContext()
		l.carryCheck = carry != ""
		p.Text = carry + p.Text
	}
	// Each image goes with the type its bytes say (Validate refused images
	// that are none), never the type the client declared.
	for _, im := range t.p.images {
		p.Images = append(p.Images, driver.Image{MIMEType: uploads.SniffImage(im.Data), Data: im.Data})
	}
	for _, f := range t.p.files {
		if mime := f.ImageType(); mime != "" {
			p.FileImages = append(p.FileImages, driver.Image{MIMEType: mime, Data: f.Data})
		}
	}
	// The agent is told only once "delivering" is stored: a crash after it
	// was told then finds the message delivering, judged at the restart by
	// the agent's own record, never still queued, which would send it again.
	// (When the store cannot write for now, the step is kept and the agent
	// told anyway: the turn does not wait on a full disk.)
	if err := l.flush(); err != nil {
		l.log.Warn("router: the delivering receipt is not stored yet; prompting anyway", "message", t.p.in.MessageID, "err", err)
	}
	l.spawn(func() {
		err := s.Prompt(ctx, p)
		cancel()
		l.result(func() { l.prompted(t, gen, err) })
	})
}

// prompted takes Prompt's verdict. The rule of receipts, for every driver:
// "failed" when Prompt says the text could not be handed over; "submitted"
// only on the agent's own evidence that it has the text (Sink.Received; for a
// DeliveryProver, its Prompt returning nil); a turn that ends, or a session
// that exits, after the hand-over but before any evidence "failed": the agent
// never showed it took the text (e.g. the process died with the line unread
// in its stdin).
func (l *lane) prompted(t *turn, gen int, err error) {
	if t != l.turn || t.phase != prompting {
		// The turn was already ended (forced stop, exit), or the agent's own
		// evidence came first.
		if err != nil && t.phase == delivered {
			l.log.Warn("driver reported a failed delivery after the agent answered", "err", err)
		}
		if t == l.turn && t.endReason != "" {
			l.finishTurn(t, t.endReason)
		}
		return
	}
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
		l.move(t, handedOver)
		if t.exitDetail != "" || t.endReason != "" {
			l.notTaken(t, t.endReason, t.exitDetail)
		}
		return
	}
	l.move(t, delivered)
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
	if t == nil || t.prover || (t.phase != prompting && t.phase != handedOver) {
		return // no turn on its way, already delivered, or only Prompt may say (DeliveryProver)
	}
	l.move(t, delivered)
	l.receipt(t.p, chat.DeliverySubmitted, "")
}

// notTaken fails a turn whose text was handed over but which ended (reason)
// or whose session exited (exitDetail) before the agent showed it had it; it
// is unknown when the driver said the agent may have taken it before it died.
func (l *lane) notTaken(t *turn, reason, exitDetail string) {
	if exitDetail != "" && t.exitUnverified {
		l.receipt(t.p, chat.DeliveryUnknown, "parley could not tell whether it reached the agent: "+exitDetail)
		l.finishTurn(t, "")
		return
	}
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
	if !t.sent() {
		t.endReason = reason // wait for Prompt to say whether the text got there
		return
	}
	if t.phase != delivered {
		l.notTaken(t, reason, "")
		return
	}
	l.finishTurn(t, reason)
}

// finishTurn closes the turn: its open cards are cancelled, prompt_done is logged
// when the message was delivered, and the next message may go.
func (l *lane) finishTurn(t *turn, reason string) {
	l.move(t, over)
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
	l.maybeHandBack()
}

// stop cancels the turn in flight at once.
// WithdrawnDetail is a withdrawn message's receipt: failed, never delivered.
const WithdrawnDetail = "withdrawn before its turn: never sent to the agent"

// withdraw takes a queued message out of the queue: it is never delivered (its
// receipt says failed, withdrawn; it may be sent again). A message whose turn
// began cannot be withdrawn (stop is for that): the lane alone takes messages
// from its queue, so the answer is the truth either way. A message id is the
// client's choice, unique only per route: a route withdraws its own message,
// never another device's that happens to share the id.
func (l *lane) withdraw(from chat.RouteKey, id string) error {
	for i, p := range l.queue {
		if p.in.MessageID == id && p.in.From == from {
			l.queue = slices.Delete(l.queue, i, i+1)
			l.r.opt.Metrics.QueueDepth.Dec()
			l.receipt(p, chat.DeliveryFailed, WithdrawnDetail)
			return nil
		}
	}
	if l.turn != nil && l.turn.p.in.MessageID == id && l.turn.p.in.From == from {
		return invalid("message %s is already being delivered: it cannot be withdrawn (stop the turn instead)", id)
	}
	return invalid("no message %s is waiting in this thread's queue: it was delivered, failed or withdrawn already", id)
}

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
	if l.sess == nil || t.phase == awaitingSession {
		// Nothing reached an agent yet: the message simply fails.
		l.receipt(t.p, chat.DeliveryFailed, "stopped before it reached the agent")
		l.finishTurn(t, "")
		return nil
	}
	// Everyone watching sees the stop taken now; the honest end of the turn
	// (cancelled) is the agent's to say.
	l.emit(chat.TurnStatus{Active: true, MessageID: t.p.in.MessageID, Stopping: true})
	if t.phase == prompting {
		t.cancelPrompt() // abandon a delivery still being verified
	}
	s, gen := l.sess, l.gen
	l.spawn(func() {
		ctx, cancel := context.WithTimeout(l.r.ctx, l.r.opt.StopGrace)
		defer cancel()
		if err := s.Cancel(ctx); err != nil {
			l.result(func() {
				if gen == l.gen {
					l.log.Warn("cancel failed", "err", err)
				}
			})
		}
	})
	t.stopTimer = l.clock.AfterFunc(l.r.opt.StopGrace, func() {
		l.result(func() {
			if l.turn != t {
				return
			}
			// The agent did not end the turn: end it here and drop the session,
			// whose state can no longer be trusted. The next message resumes.
			l.log.Warn("agent did not honour stop; closing the session")
			l.closeSession()
			l.th.State = chat.ThreadUnloaded
			if !t.sent() {
				// The driver never said what became of the text: it may be
				// on its way (a stalled agent runs it when it wakes).
				l.receipt(t.p, chat.DeliveryUnknown, "parley could not tell whether it reached the agent: stopped while it was being delivered")
				l.finishTurn(t, "")
				return
			}
			if t.phase != delivered {
				l.notTaken(t, chat.StopCancelled, "")
				return
			}
			l.finishTurn(t, chat.StopCancelled)
		})
	})
	return nil
}
