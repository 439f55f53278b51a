// The session's watch loop: the pane and the hooks followed until Close, and
// a turn's end worked out from the Stop hook and the transcript.

package tmux

import (
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// run follows the pane and the hooks until Close or until the session ends.
func (s *session) run() {
	defer close(s.done)
	var pokes <-chan struct{}
	if s.hooks != nil {
		pokes = s.hooks.Pokes()
	}
	redraft := time.NewTimer(time.Hour)
	redraft.Stop()
	defer redraft.Stop()
	for {
		changed := s.ctl.Changed()
		s.scan()
		if s.adoptedAgentExited() {
			s.ended() // the pane stays the person's; the thread can continue the session
			return
		}
		if d := s.draftWait(); d > 0 {
			redraft.Reset(d) // a change came too soon after the last draft: look again then
		}
		select {
		case <-s.stop:
			return
		case <-redraft.C:
		case <-changed:
		case <-pokes:
			s.readSpool()
		case <-s.ctl.Done():
			s.ended()
			return
		}
	}
}

func (s *session) ended() {
	s.mu.Lock()
	closed := s.closed
	s.card = nil // the lane closes every card at the exit
	s.mu.Unlock()
	if closed {
		return
	}
	// The pane closes when the agent exits: nothing tells a crash from a quit.
	s.sink.Exited(nil)
}

// stopWait bounds how long the Stop hook waits for the transcript to catch up.
const stopWait = 3 * time.Second

func (s *session) endTurnFromStop() {
	s.mu.Lock()
	f := s.follower
	s.endSeen = true // the transcript said nothing in time: end the turn anyway
	s.mu.Unlock()
	if f != nil {
		f.Sync()
	}
	s.maybeEndTurn()
}

// maybeEndTurn ends the turn once the Stop hook and the transcript agree.
func (s *session) maybeEndTurn() {
	s.draftMu.Lock() // no draft of the turn after its end
	defer s.draftMu.Unlock()
	s.mu.Lock()
	end := s.turn && s.stopSeen && s.endSeen
	report := end && s.ownsTurn()
	if end {
		s.turn = false
		s.heard()
		if s.stopTimer != nil {
			s.stopTimer.Stop()
			s.stopTimer = nil
		}
	}
	s.mu.Unlock()
	if report {
		s.sink.TurnEnded(chat.StopEndTurn)
	}
}

// ownsTurn (s.mu held) reports whether the hooks' running turn may be the
// lane's: any turn when no send is in flight, but while one is, only the
// turn of a prompt holding its text. A turn typed at the terminal (or left
// over from before) that ends while a send waits to type is not the send's:
// reported, it would end the send's turn the moment it is submitted, and
// the next message (or a kill) would follow while the agent has not yet
// sent this one to its model.
//
// A prompt submitted before the send began is never the send's, whatever its
// text: a stopped "yes, do it the other way" ending while "yes" waits.
func (s *session) ownsTurn() bool {
	if s.sending == "" {
		return true
	}
	return s.turnAt >= s.sendFrom && strings.Contains(pane.Normalize(s.turnPrompt), pane.Normalize(s.sending))
}

// beginSend marks a send of text in flight ("" ends it): from now on, a
// turn is the send's only if its prompt comes after this and holds the text.
func (s *session) beginSend(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sending, s.sendFrom = text, s.promptsGone+len(s.prompts)
	if text != "" {
		s.ownSend(text)
	}
	s.entered, s.endedEarly = false, false
}
