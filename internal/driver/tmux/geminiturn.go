// A Gemini turn in an adopted pane: Gemini has no hooks, so its box, spinner
// and the line after the prompt say when the turn a send began is over; its
// words come from its saved chat, followed as a transcript.

package tmux

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/geminichat"
	"github.com/parleyhq/parley/internal/sessions/live"

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

// geminiTurn ends the running turn when the screen says it is over. The
// chat is read first: Gemini writes the answer before it shows the turn
// over, so its words reach the thread before the turn's end.
func (s *session) geminiTurn(scr *pane.Screen) {
	if s.dialect != pane.GeminiCLI {
		return
	}
	s.mu.Lock()
	f := s.follower
	due := s.turn && scr.GeminiTurnDone()
	s.mu.Unlock()
	if due && f != nil {
		f.Sync()
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

// geminiChat is the adopted Gemini session's saved chat: under the Gemini
// CLI folder of the agent's process (its GEMINI_CLI_HOME or HOME), else of
// the agent's configured environment, else this user's.
func (s *session) geminiChat(spec driver.Spec) (string, bool) {
	var dirs []string
	if s.agentPID > 0 {
		if d := live.GeminiDir(s.agentPID); d != "" {
			dirs = append(dirs, d)
		}
	}
	env := func(k string) string {
		for _, kv := range slices.Backward(spec.Env) {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	if h := cmp.Or(env("GEMINI_CLI_HOME"), env("HOME")); h != "" {
		dirs = append(dirs, filepath.Join(h, ".gemini"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, ".gemini"))
	}
	for _, d := range dirs {
		p, err := geminichat.File(d, spec.ResumeID)
		if err == nil {
			s.log.Info("following the adopted Gemini session's chat", "path", p)
			return p, true
		}
		s.log.Debug("no Gemini chat here", "err", err)
	}
	s.log.Warn("the adopted Gemini session's chat was not found: its answers will not reach the thread", "session", spec.ResumeID)
	return "", false
}

// sentKept bounds the sends remembered for telling them from typed prompts
// (a send that never got in stays until pushed out).
const sentKept = 8

// ownSend remembers a send's text (s.mu held): its prompt in the chat is parley's.
func (s *session) ownSend(text string) {
	s.sent = append(s.sent, pane.Normalize(text))
	if len(s.sent) > sentKept {
		s.sent = s.sent[len(s.sent)-sentKept:]
	}
}

// typedInPane passes on a prompt the chat records, unless it is one of
// parley's sends (already the thread's, as the lane's user_message): a
// prompt the person typed in the pane, shown as theirs, from the terminal.
func (s *session) typedInPane(u chat.UserMessage) {
	s.mu.Lock()
	i := slices.Index(s.sent, pane.Normalize(u.Text))
	if i >= 0 {
		s.sent = slices.Delete(s.sent, i, i+1)
	}
	s.mu.Unlock()
	if i >= 0 {
		return
	}
	u.From = chat.RouteKey{Channel: chat.ElsewhereTerminal, Chat: s.pane}
	s.final(u)
}
