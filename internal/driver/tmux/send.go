// Send: typing a message into the agent's box and proving what became of it
// (the rules of evidence are the package doc's), and Cancel.

package tmux

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

var _ driver.DeliveryProver = (*session)(nil)

// ProvesDelivery marks this driver's Prompt as the only proof of delivery (driver.DeliveryProver): agent output seen meanwhile may be a menu left open or a turn the person typed.
func (s *session) ProvesDelivery() {}

// Failure reasons, in the words a person sees on a failed receipt.
var (
	ErrBareShell = errors.New("the pane is a bare shell: nothing was typed")
	ErrKeyboard  = errors.New("something is holding the keyboard")
	ErrGone      = errors.New("tmux session is gone")
	// ErrStopped: the agent's process is stopped; nothing was typed.
	ErrStopped = fmt.Errorf("%w: the agent is stopped (SIGSTOP or Ctrl+Z); nothing was typed", ErrKeyboard)
)

var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "fish": true, "dash": true, "ksh": true, "tcsh": true, "csh": true, "nu": true}

// Prompt is the one send: leave copy-mode, check the pane, wait behind a live
// menu or a running turn, start a gone agent again (revive), clear staged
// text, paste, submit, and prove what became of it (see deliver).
func (s *session) Prompt(ctx context.Context, p driver.Prompt) (err error) {
	ctx, tl := s.startTimeline(ctx)
	defer func() { s.endTimeline(ctx, tl, err) }()
	if len(p.Images) > 0 {
		return fmt.Errorf("tmux: images cannot be typed into a terminal: %w", driver.ErrUnsupported)
	}
	if strings.TrimSpace(p.Text) == "" {
		return fmt.Errorf("tmux: empty message: %w", chat.ErrBadInput)
	}
	s.beginSend(p.Text)
	defer s.beginSend("")
	queued := ""
	for {
		if err := s.ready(ctx, p.MessageID, &queued); err != nil {
			return err
		}
		s.kbd.Lock()
		sent := time.Now()
		err := s.deliver(ctx, p.Text)
		s.kbd.Unlock()
		if errors.Is(err, errMenu) || errors.Is(err, errBusy) {
			continue // a menu came up, or a turn started, first: wait again
		}
		if err == nil {
			s.afterSubmit(p.Text, sent)
		}
		return err
	}
}

var (
	errMenu = errors.New("a menu is open")
	errBusy = errors.New("the agent is working")
)

// ready waits until the pane can take typing: no copy-mode, no live menu, no
// turn running, an agent running (not a dead pane or a shell: revive). A live
// menu or a running turn makes the message wait, reported once as queued.
func (s *session) ready(ctx context.Context, messageID string, queued *string) error {
	revived := false
	for {
		changed := s.ctl.Changed()
		info, err := s.paneInfo(ctx)
		if err != nil {
			return err
		}
		if info.InMode {
			// Enter is eaten in copy-mode.
			if err := s.c.ExitMode(ctx, s.pane); err != nil {
				return s.goneErr(err)
			}
			continue
		}
		if s.agentGone(info) {
			if revived && info.Dead {
				return fmt.Errorf("%w (even after starting the agent again)", ErrDeadPane)
			}
			if revived {
				return fmt.Errorf("%w (%s, even after starting the agent again)", ErrBareShell, info.CurrentCommand)
			}
			if err := s.revive(ctx, info); err != nil {
				return err
			}
			revived = true
			continue
		}
		scr, err := s.captureVisible(ctx)
		if err != nil {
			return err
		}
		m, live, _ := scr.Menu()
		var reason string
		switch {
		case stoppedUnder(ctx, info.PID):
			// Typed now, the text would wait unread in the terminal, out
			// of reach of any check or take-back, and land whenever the
			// agent goes on (glued to what comes next). /proc says so
			// before anything is typed: fail now, nothing typed (waiting
			// for a continue that may never come only makes the person
			// wait for the same failure).
			return ErrStopped
		case live && m.Kind == pane.MenuPermission:
			reason = "a permission menu is open"
		case live:
			reason = "a question is waiting for an answer"
		case scr.Working() || s.hookTurn():
			// Typed now, the text would go into Claude Code's own queue.
			reason = "the agent is working on a turn"
		default:
			return nil
		}
		if *queued != reason {
			*queued = reason
			s.sink.Waiting(messageID, reason)
		}
		// The card scanner (run) sees the same change. The hooks' word that
		// a turn runs is trusted for hookTurnTrust after the last hook.
		s.mu.Lock()
		heard := s.promptSeen
		s.mu.Unlock()
		trust := time.NewTimer(hookTurnTrust)
		select {
		case <-changed:
		case <-heard:
		case <-trust.C:
		case <-ctx.Done():
			trust.Stop()
			return ctx.Err()
		case <-s.ctl.Done():
			trust.Stop()
			return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
		}
		trust.Stop()
	}
}

// stoppedPoll is how often a stopped agent is looked at again.
const stoppedPoll = 200 * time.Millisecond

// deliver types text and proves what became of it. The rules of evidence:
//   - submitted: with hooks, Claude Code's UserPromptSubmit hook reported a
//     prompt holding the text after parley pressed Enter (the agent's own
//     word); without hooks, a new occurrence of the text above the box in the
//     whole history (position and novelty).
//   - not submitted: Enter was never pressed, or the box still holds exactly
//     the text after the agent has drawn since Enter. Only then is the text
//     taken back (the box proven empty) and typed again or failed.
//   - neither: the text left the box unseen, or the agent stopped drawing
//     after Enter. The send keeps verifying until ctx ends, and then says it
//     is unknown (errUnverified), never failed: it may yet be submitted.
func (s *session) deliver(ctx context.Context, text string) error {
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return err
	}
	if _, live, _ := scr.Menu(); live {
		return errMenu
	}
	if scr.Working() {
		return errBusy
	}
	if !scr.HasBox() {
		var ok bool
		scr, ok, err = s.waitFor(ctx, s.step, (*pane.Screen).HasBox)
		if err != nil {
			return err
		}
		if !ok {
			if _, live, _ := scr.Menu(); live {
				return errMenu
			}
			return fmt.Errorf("%w: a dialog is holding the keyboard (no input box on the pane)", ErrKeyboard)
		}
	}
	// Novelty: only an occurrence the history did not have before counts.
	// The visible screen says when to look; the whole history decides.
	full, err := s.capture(ctx)
	if err != nil {
		return err
	}
	base := full.CountSubmitted(text)
	onScreen := func(scr *pane.Screen) bool {
		if scr.InBox(text) || !scr.ShowsAbove(text) {
			return false
		}
		full, err := s.capture(ctx)
		return err == nil && full.CountSubmitted(text) > base && !full.InBox(text)
	}
	mark, byHook := s.promptMark()
	submitted := func(scr *pane.Screen) bool {
		// The hook's word counts even when it is the first heard from this
		// agent (its SessionStart hook can come after its box shows): the
		// screen proof never sees a prompt glued to late typing.
		if s.promptSince(mark, text) {
			begin(ctx)("hook: UserPromptSubmit holds the text")
			return true
		}
		// A redraw (a resize, SIGCONT) rewrites the history the screen proof
		// counts in; with hooks working, only their word counts.
		return !byHook && onScreen(scr)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if scr.Staged() != "" {
			if _, err = s.clear(ctx, scr); err != nil {
				return err
			}
		}
		outputs := s.ctl.Outputs()
		mark := begin(ctx)
		if err := s.paste(ctx, text); err != nil {
			return s.goneErr(err)
		}
		mark("paste (load-buffer, paste-buffer)")
		var ok bool
		scr, ok, err = s.waitFor(ctx, s.step, func(scr *pane.Screen) bool { return scr.InBox(text) || submitted(scr) })
		for err == nil && !ok && s.ctl.Outputs() == outputs && s.stopped(ctx) {
			// Stopped after ready looked: the paste waits unread in the
			// terminal, where nothing can take it back. It lands when the
			// agent goes on: wait for that and look again (never type it
			// again: it would be there twice).
			s.log.Info("the agent was stopped under the paste; waiting for it to continue")
			if err = s.waitContinued(ctx); err == nil {
				scr, ok, err = s.waitFor(ctx, s.step, func(scr *pane.Screen) bool { return scr.InBox(text) || submitted(scr) })
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				// Stopped before Enter: it did not reach the agent; take
				// the paste back so nobody submits it later.
				tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.step)
				_ = s.takeBack(tctx, text, err)
				cancel()
			}
			return err
		}
		if !ok {
			if s.ctl.Outputs() == outputs {
				// Nothing rendered at all: the agent is not reading its input
				// (stopped, hung). Take the paste back so it cannot land later;
				// the next send proves the box empty before it types.
				_ = s.c.SendKeysN(ctx, s.pane, "BSpace", clearCount(text))
				return fmt.Errorf("%w: the agent did not react to typing (nothing rendered)", ErrKeyboard)
			}
			if _, live, _ := scr.Menu(); live {
				return s.takeBack(ctx, text, errMenu)
			}
			continue // Enter was not pressed: typing again is safe
		}
		if submitted(scr) {
			return nil
		}
		// Typing may still be arriving: read the box once more with nothing
		// drawn meanwhile, right before Enter.
		for settle := 0; settle < 5; settle++ {
			o := s.ctl.Outputs()
			if scr, err = s.captureVisible(ctx); err != nil {
				return err
			}
			if s.ctl.Outputs() == o {
				break
			}
		}
		if !scr.BoxHolds(text) {
			// Our paste landed on leftover input (typing that arrived late):
			// submitting now would send both glued together.
			s.log.Info("the input box holds more than the message; clearing and retyping", "attempt", attempt)
			continue
		}
		if scr.Working() || s.hookTurn() {
			// A turn started under the paste (typed at the terminal): Enter
			// now would put the text in Claude Code's own queue.
			return s.takeBack(ctx, text, errBusy)
		}
		return s.submit(ctx, text, submitted)
	}
	return s.takeBack(ctx, text, fmt.Errorf("%w: the text stayed in the input box (other typing kept arriving); it was taken back", ErrKeyboard))
}

// stopped reports whether the agent's process (or one under the pane) is stopped.
func (s *session) stopped(ctx context.Context) bool {
	info, err := s.paneInfo(ctx)
	return err == nil && stoppedUnder(ctx, info.PID)
}

// waitContinued waits until no process under the pane is stopped.
func (s *session) waitContinued(ctx context.Context) error {
	tick := time.NewTicker(stoppedPoll)
	defer tick.Stop()
	for {
		stopped := s.stopped(ctx)
		if err := ctx.Err(); err != nil {
			return err // (a read cut short says nothing)
		}
		if !stopped {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctl.Done():
			return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
		}
	}
}

// submit presses Enter on the text in the box and verifies. It never types
// the text again: a second Enter is harmless (an empty box submits nothing),
// a second paste is not.
func (s *session) submit(ctx context.Context, text string, submitted func(*pane.Screen) bool) error {
	for enters := 1; ; enters++ {
		if s.beforeEnter != nil {
			s.beforeEnter()
		}
		if s.dialect == pane.GeminiCLI {
			geminiEnterGap(ctx)
		}
		outputs := s.ctl.Outputs()
		s.mu.Lock()
		s.entered = true
		s.mu.Unlock()
		if err := s.press(ctx, "C-m"); err != nil {
			return s.goneErr(err)
		}
		scr, ok, err := s.waitFor(ctx, s.step, submitted)
		if err != nil {
			return s.unverified(err)
		}
		if ok {
			return nil
		}
		drawn := s.ctl.Outputs() != outputs
		if !drawn && !scr.BoxHolds(text) {
			drawn = true // the box changed: it was drawn
		}
		if s.dialect == pane.GeminiCLI && scr.BoxHolds(text) {
			// Gemini takes an Enter within 30 ms of typing for a new line
			// and may draw nothing for it: the text alone in the box is
			// not submitted, and Enter again cannot send it twice.
			drawn = true
		}
		switch {
		case drawn && scr.BoxHolds(text) && !scr.Working() && enters < 3:
			// Drawn since, and still the text alone in the box: Enter was
			// not taken (a redraw ate it). Press it again.
			s.log.Info("the text is still in the input box after Enter; pressing Enter again", "enters", enters)
			continue
		case drawn && scr.BoxHolds(text) && !scr.Working():
			return s.takeBack(ctx, text, fmt.Errorf("%w: the text stayed in the input box; it was taken back", ErrKeyboard))
		}
		// Not proven either way: the text left the box unseen, or nothing
		// draws any more (a stopped agent). Keep looking; only ctx ends it.
		s.log.Info("send not proven submitted nor proven not; still verifying", "drawn", drawn)
		return s.verify(ctx, text, submitted)
	}
}

// verify waits for the proof of a send whose fate is not known, at every
// change of the pane and every hook, until ctx ends. If the box is seen
// holding the text alone after the agent drew again, it was not submitted.
func (s *session) verify(ctx context.Context, text string, submitted func(*pane.Screen) bool) error {
	outputs := s.ctl.Outputs()
	for {
		scr, ok, err := s.waitFor(ctx, time.Hour, func(scr *pane.Screen) bool {
			return submitted(scr) || s.ctl.Outputs() != outputs && scr.BoxHolds(text) && !scr.Working()
		})
		if err != nil {
			return s.unverified(err)
		}
		if !ok {
			continue
		}
		if submitted(scr) {
			return nil
		}
		// The agent draws again and the text sits in its box: press Enter.
		return s.submit(ctx, text, submitted)
	}
}

// unverified wraps an error that ended a send whose fate is unknown.
func (s *session) unverified(err error) error {
	return fmt.Errorf("%w: %w", driver.ErrUnverified, err)
}

// takeBack empties the box of a text that was not submitted and returns why
// the send failed; a box that cannot be proven empty makes the failure say so.
func (s *session) takeBack(ctx context.Context, text string, why error) error {
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return err
	}
	if scr.Staged() == "" {
		return why
	}
	if _, err := s.clear(ctx, scr); err != nil {
		return fmt.Errorf("%w (and the input box could not be emptied: %w)", why, err)
	}
	return why
}

func clearCount(text string) int { return len([]rune(text)) + strings.Count(text, "\n") + 8 }

// clear empties the input box with End, BSpace × N and Delete × N (C-u does
// not clear Claude Code's input), and proves it empty.
func (s *session) clear(ctx context.Context, scr *pane.Screen) (*pane.Screen, error) {
	empty := func(scr *pane.Screen) bool { return scr.HasBox() && scr.Staged() == "" }
	for round := 0; round < 3; round++ {
		if round > 0 {
			// A screen left garbled by a redraw (a stopped agent resumed)
			// can show in the box what is not in the input: Ctrl+L makes
			// Claude Code draw everything again, the input kept.
			if err := s.c.SendKeys(ctx, s.pane, "C-l"); err != nil {
				return nil, s.goneErr(err)
			}
			var ok bool
			var err error
			if scr, ok, err = s.waitFor(ctx, s.step, empty); err != nil {
				return nil, err
			} else if ok {
				return scr, nil
			}
		}
		staged := scr.Staged()
		n := clearCount(staged)
		if scr.PastedPlaceholder() {
			n += 16
		}
		// The cursor may be anywhere in the text (a person moved it): from
		// the end of its line, BSpace takes what is before it, Delete what
		// is after (the lines below).
		mark := begin(ctx)
		if err := s.c.SendKeys(ctx, s.pane, "End"); err != nil {
			return nil, s.goneErr(err)
		}
		if err := s.c.SendKeysN(ctx, s.pane, "BSpace", n); err != nil {
			return nil, s.goneErr(err)
		}
		if err := s.c.SendKeysN(ctx, s.pane, "DC", n); err != nil {
			return nil, s.goneErr(err)
		}
		mark("tmux send-keys End, BSpace, Delete (clear)")
		var ok bool
		var err error
		scr, ok, err = s.waitFor(ctx, s.step, empty)
		if err != nil {
			return nil, err
		}
		if ok {
			return scr, nil
		}
	}
	return nil, fmt.Errorf("%w: the input box could not be cleared", ErrKeyboard)
}

// Cancel interrupts the turn (Escape) and withdraws the open card.
func (s *session) Cancel(ctx context.Context) error {
	s.kbd.Lock()
	defer s.kbd.Unlock()
	select {
	case <-s.ctl.Done():
		return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
	default:
	}
	if err := s.c.SendKeys(ctx, s.pane, "Escape"); err != nil {
		return s.goneErr(err)
	}
	s.mu.Lock()
	// The card is the lane's, closed with the stop; Escape left its menu.
	if card := s.card; card != nil {
		s.answered[card.id] = true
	}
	s.card = nil
	turn := s.turn
	s.turn = false
	s.mu.Unlock()
	if turn {
		s.draftMu.Lock()
		s.sink.TurnEnded(chat.StopCancelled)
		s.draftMu.Unlock()
	}
	return nil
}
