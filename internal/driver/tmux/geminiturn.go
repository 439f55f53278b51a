// A Gemini turn in an adopted pane, told from its screen: Gemini has no
// hooks and its chat is not followed, so its box, spinner and the line after
// the prompt say when the turn a send began is over.

package tmux

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// geminiSubmitted marks a Gemini turn begun by a send proven submitted, and
// looks once: a quick answer may have been drawn already, and the pane may
// not change again.
func (s *session) geminiSubmitted() {
	s.mu.Lock()
	s.turn = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if scr, err := s.captureVisible(ctx); err == nil {
		s.geminiTurn(scr)
	}
}

// geminiTurn ends the running turn when the screen says it is over.
func (s *session) geminiTurn(scr *pane.Screen) {
	if s.dialect != pane.GeminiCLI {
		return
	}
	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	s.mu.Lock()
	end := s.turn && scr.GeminiTurnDone()
	if end {
		s.turn = false
	}
	s.mu.Unlock()
	if end {
		s.sink.TurnEnded(chat.StopEndTurn)
	}
}

// geminiFastReturn is Gemini CLI 0.61.0's FAST_RETURN_TIMEOUT with room: an
// Enter read within 30 ms of typed (or pasted) text is taken as part of it, a
// new line, not a submit. The gap is counted from when the box was seen
// holding the text, so Gemini has read the text already.
const geminiFastReturn = 100 * time.Millisecond

// geminiEnterGap waits out Gemini's fast-return window before an Enter.
func geminiEnterGap(ctx context.Context) {
	t := time.NewTimer(geminiFastReturn)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
