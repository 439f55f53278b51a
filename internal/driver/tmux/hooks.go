// The hook reader: Claude Code's hook events from the spool, and what sends
// learn from them (the prompts submitted, a turn running).

package tmux

import (
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/driver/tmux/transcript"
)

// hookTurnTrust bounds how long the hooks' word that a turn runs (a
// UserPromptSubmit not yet ended by Stop) holds without another hook: it
// covers the moments Claude Code works but shows no "esc to interrupt" (a
// menu just answered, a prompt typed at the terminal not yet drawn).
const hookTurnTrust = 15 * time.Second

// hookTurn reports whether the hooks say a turn is running.
func (s *session) hookTurn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.useHooks && s.hooksWork && s.turn && time.Since(s.lastHook) < hookTurnTrust
}

// readSpool reads the hook events added since last time.
func (s *session) readSpool() {
	evs, err := s.spool.Read()
	if err != nil {
		s.log.Debug("hook spool", "err", err)
		return
	}
	for _, e := range evs {
		s.hookEvent(e)
	}
}

func (s *session) hookEvent(e hook.Event) {
	s.mu.Lock()
	s.hooksWork = true
	s.lastHook = time.Now()
	s.heard()
	s.mu.Unlock()
	switch e.Name {
	case "SessionStart":
		if e.SessionID != "" {
			s.mu.Lock()
			s.sessionID = e.SessionID
			s.mu.Unlock()
			s.sink.SessionID(e.SessionID)
		}
		if e.TranscriptPath != "" {
			var skip int64
			if e.Source == "resume" || s.adopted {
				skip = transcript.SkipAll
			}
			s.follow(e.TranscriptPath, skip, time.Time{})
		}
	case "UserPromptSubmit":
		s.newTurnDrafts()
		s.mu.Lock()
		s.turn, s.stopSeen, s.endSeen = true, false, false
		s.turnPrompt, s.turnAt = e.Prompt, -1
		if !s.replaying {
			s.turnAt = s.promptsGone + len(s.prompts)
			if len(s.prompts) == maxPrompts {
				// Only a send in flight looks back, and never this far.
				s.prompts = append(s.prompts[:0], s.prompts[maxPrompts/2:]...)
				s.promptsGone += maxPrompts / 2
			}
			s.prompts = append(s.prompts, e.Prompt)
			s.heard()
		}
		s.mu.Unlock()
	case "PreToolUse":
		s.mu.Lock()
		s.preTool[e.ToolName] = e
		s.mu.Unlock()
	case "Stop":
		if s.replaying {
			s.mu.Lock()
			s.turn = false
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.stopSeen = true
		if s.turn && !s.endSeen && s.stopTimer == nil {
			// The hook can fire before Claude Code writes the turn's words to the
			// transcript: wait for its end of turn, a little.
			s.stopTimer = time.AfterFunc(stopWait, s.endTurnFromStop)
		}
		s.mu.Unlock()
		s.maybeEndTurn()
	}
}

// heard (s.mu held) wakes whoever waits on the hooks: a prompt, a turn's end.
func (s *session) heard() {
	close(s.promptSeen)
	s.promptSeen = make(chan struct{})
}

// maxPrompts bounds the hooks' prompts kept for sends to look back on.
const maxPrompts = 64

// promptMark returns where the hooks' prompts stand now, and whether a send
// can be proven by them (the hooks have been heard from).
func (s *session) promptMark() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.promptsGone + len(s.prompts), s.useHooks && s.hooksWork
}

// promptSince reports whether a prompt holding text was submitted after mark
// (by the hook; a prompt glued to other typing holds it too).
func (s *session) promptSince(mark int, text string) bool {
	want := pane.Normalize(text)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prompts[min(max(0, mark-s.promptsGone), len(s.prompts)):] {
		if strings.Contains(pane.Normalize(p), want) {
			return true
		}
	}
	return false
}
