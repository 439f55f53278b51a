// The transcript follower: the agent's words and tool calls from its
// transcript, and finding the transcript of an adopted session.

package tmux

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/driver/tmux/transcript"
)

func (s *session) follow(path string, skip int64, since time.Time) {
	s.mu.Lock()
	if s.transcript == path || s.closed {
		s.mu.Unlock()
		return
	}
	old := s.follower
	s.follower = nil
	s.transcript = path
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	var f *transcript.Follower
	var err error
	switch {
	case s.dialect == pane.GeminiCLI && path == s.placesOf:
		f, err = transcript.FollowGeminiPlaces(path, skip, s.transcriptEvent, s.log)
	case s.dialect == pane.GeminiCLI:
		f, err = transcript.FollowGemini(path, skip, s.transcriptEvent, s.log)
	case path == s.placesOf:
		f, err = transcript.FollowPlaces(path, skip, s.transcriptEvent, s.log)
	default:
		f, err = transcript.Follow(path, skip, since, s.transcriptEvent, s.log)
	}
	if err != nil {
		s.log.Warn("cannot follow the transcript", "err", err)
		return
	}
	s.mu.Lock()
	s.follower = f
	s.mu.Unlock()
}

// transcriptEvent passes the transcript's updates on. Its turn ends count
// only without hooks: with them, the Stop hook ends the turn.
func (s *session) transcriptEvent(p chat.Payload) {
	if u, ok := p.(chat.UserMessage); ok {
		s.typedInPane(u)
		return
	}
	if _, ok := p.(transcript.TurnEnd); !ok {
		s.final(p)
		return
	}
	if s.useHooks {
		s.mu.Lock()
		s.endSeen = true
		s.mu.Unlock()
		s.maybeEndTurn()
		return
	}
	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	s.mu.Lock()
	// A transcript followed from before the send (an adopted pane whose
	// session is known) can end the send's turn before the screen has
	// proved it submitted: once Enter is pressed, the end is the send's.
	turn := s.turn || s.entered
	s.endedEarly = s.entered && !s.turn
	s.turn = false
	s.mu.Unlock()
	if turn {
		s.sink.TurnEnded(chat.StopEndTurn)
	}
}

// afterSubmit, for a session without hooks (one adopted from a person), marks
// the turn begun and looks for the transcript that holds the prompt just sent.
func (s *session) afterSubmit(text string, sent time.Time) {
	if s.useHooks {
		return
	}
	if s.dialect == pane.GeminiCLI {
		s.geminiSubmitted()
		return
	}
	s.mu.Lock()
	s.turn = !s.endedEarly // its end may have come already (transcriptEvent)
	s.endedEarly = false
	found := s.follower != nil || s.closed
	if !found {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if found {
		return
	}
	go func() {
		defer s.wg.Done()
		s.findTranscript(text, sent)
	}()
}

// findTranscript finds the adopted agent's transcript by the prompt it holds
// (FindByPrompt), watching its folder, for up to two minutes (a loaded
// machine can take long to start writing it).
func (s *session) findTranscript(text string, sent time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cwd, err := s.query(ctx, "display-message", "-p", "-t", s.pane, "#{pane_current_path}")
	if err != nil {
		return
	}
	dir := transcript.ProjectDir(s.claudeDir(ctx), strings.TrimSpace(cwd))
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	defer w.Close()
	_ = w.Add(dir) // a folder that does not exist yet is found by the ticker
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if path, at, ok := transcript.FindByPrompt(dir, text, sent); ok {
			s.log.Info("following the adopted session's transcript", "path", path, "after", time.Since(sent).Round(time.Millisecond))
			s.follow(path, 0, at)
			return
		}
		select {
		case <-w.Events:
		case <-tick.C:
		case <-s.stop:
			return
		case <-ctx.Done():
			s.log.Info("no transcript holds the prompt; replies will not be followed", "dir", dir)
			return
		}
	}
}

// claudeDir is the adopted agent's Claude Code config folder: its session's
// CLAUDE_CONFIG_DIR or HOME (as tmux has them), else this user's.
func (s *session) claudeDir(ctx context.Context) string {
	get := func(args ...string) string {
		out, err := s.query(ctx, args...)
		if err != nil {
			return ""
		}
		k, v, ok := strings.Cut(strings.TrimSpace(out), "=")
		if !ok || strings.HasPrefix(k, "-") {
			return ""
		}
		return v
	}
	target := s.target
	if target == "" {
		target = ctl.SessionTarget(s.name)
	}
	for _, scope := range [][]string{{"-t", target}, {"-g"}} {
		if d := get(append(append([]string{"show-environment"}, scope...), "CLAUDE_CONFIG_DIR")...); d != "" {
			return d
		}
		if h := get(append(append([]string{"show-environment"}, scope...), "HOME")...); h != "" {
			return filepath.Join(h, ".claude")
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".claude")
	}
	return ""
}
