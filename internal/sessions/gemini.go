package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver/geminichat"
)

// Gemini is Gemini CLI's saved chats: one file per session at
// <Dir>/tmp/<project>/chats/session-<time>-<id8>.jsonl, the project's folder
// in <Dir>/tmp/<project>/.project_root. Which run now is told from Gemini
// CLI's processes (gemini_running.go).
type Gemini struct {
	// Dir is Gemini CLI's folder (~/.gemini, or $GEMINI_CLI_HOME/.gemini).
	Dir string
}

func (g Gemini) Agent() string { return "gemini" }

func (g Gemini) Files(ctx context.Context, visit func(string, int64, time.Time)) error {
	projects, err := os.ReadDir(filepath.Join(g.Dir, "tmp"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(g.Dir, "tmp", p.Name(), "chats")
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasPrefix(e.Name(), "session-") || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			if info, err := e.Info(); err == nil {
				visit(filepath.Join(dir, e.Name()), info.Size(), info.ModTime())
			}
		}
	}
	return nil
}

// geminiMessage is one message of a chat.
type geminiMessage struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Content   json.RawMessage `json:"content"`
}

// geminiRecord is a chat line: the header, a message, or a patch ($set).
type geminiRecord struct {
	SessionID   string    `json:"sessionId"`
	Kind        string    `json:"kind"`
	LastUpdated time.Time `json:"lastUpdated"`
	geminiMessage
	Set *struct {
		Messages    []geminiMessage `json:"messages"`
		Summary     string          `json:"summary"`
		LastUpdated time.Time       `json:"lastUpdated"`
	} `json:"$set"`
}

// Read reads a chat: the id from its header (a sub-agent's chat is no
// session of its own: no id), a turn per user message (not the hidden
// <session_context> one), the summary Gemini made as title, else the first
// prompt; the cwd from the project's .project_root.
func (g Gemini) Read(path string) (Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	s, err := readGemini(f)
	if err != nil {
		return Session{}, err
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(path)), ".project_root")); err == nil {
		s.Cwd = strings.TrimSpace(string(b))
	}
	return s, nil
}

func readGemini(in io.Reader) (Session, error) {
	var s Session
	var summary, first string
	sub := false
	user := func(m geminiMessage) {
		if m.Timestamp.After(s.UpdatedAt) {
			s.UpdatedAt = m.Timestamp
		}
		if m.Type != "user" {
			return
		}
		if t, ok := geminichat.Prompt(m.Content); ok {
			s.Turns++
			if first == "" {
				first = t
			}
		}
	}
	err := lines(in, func(line []byte) bool {
		var r geminiRecord
		if json.Unmarshal(line, &r) != nil {
			return true
		}
		if r.SessionID != "" && s.ID == "" {
			s.ID, sub = r.SessionID, r.Kind == "subagent"
		}
		if r.LastUpdated.After(s.UpdatedAt) {
			s.UpdatedAt = r.LastUpdated
		}
		if r.Set != nil {
			if r.Set.Messages != nil { // the messages replaced whole
				s.Turns, first = 0, ""
				for _, m := range r.Set.Messages {
					user(m)
				}
			}
			if r.Set.Summary != "" {
				summary = r.Set.Summary
			}
			if r.Set.LastUpdated.After(s.UpdatedAt) {
				s.UpdatedAt = r.Set.LastUpdated
			}
			return true
		}
		user(r.geminiMessage)
		return true
	})
	if err != nil {
		return Session{}, err
	}
	if sub {
		s.ID = ""
	}
	s.Title = shorten(summary, titleRunes)
	if s.Title == "" {
		s.Title = shorten(first, titleRunes)
	}
	return s, nil
}
